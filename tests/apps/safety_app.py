"""An app for the safety tests under gunicorn: a slow sync tool, a sync tool with a deadline and a
counter file that shows whether a tool ran. Start it as ``tests.apps.safety_app:create_app(...)``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from flask import Flask

from flask_tooldiscovery import ToolDiscovery


def create_app(limit: int = 2, marker: str = "", max_length: int = 1024) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    def slow(seconds: float) -> str:
        """Sleep, then answer.

        Args:
            seconds: How long to sleep.
        """
        time.sleep(seconds)
        return "done"

    @discovery.tool(timeout=1)
    def overrun(seconds: float) -> str:
        """Sleep past the one-second deadline.

        Args:
            seconds: How long to sleep.
        """
        time.sleep(seconds)
        if marker:
            Path(marker).write_text(f"overrun finished in {os.getpid()}")
        return "late"

    @discovery.tool
    def touch(note: str = "") -> str:
        """Record that a tool ran (writes the marker file).

        Args:
            note: Anything; its length counts.
        """
        if marker:
            with open(marker, "a") as fh:
                fh.write(f"touch {len(note)}\n")
        return "touched"

    app = Flask("safety")
    app.config.update(TOOLDISCOVERY_MAX_CONCURRENT_CALLS=limit, TOOLDISCOVERY_MAX_CONTENT_LENGTH=max_length,
                      TOOLDISCOVERY_ALLOW_EXECUTE=True, TOOLDISCOVERY_BUSY_RETRY_AFTER=2)
    discovery.init_app(app)
    return app
