"""An app for the operating tests under gunicorn: a tool limited to five calls a minute, a slow one
that shows which worker ran it. Start it as ``tests.apps.operating_app:create_app(...)``."""

from __future__ import annotations

import os
import time

from flask import Flask

from flask_tooldiscovery import ToolDiscovery


def create_app(storage: str = "memory://", metrics: bool = False) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(rate_limit_per_minute=5)
    def limited() -> dict:
        """Five calls a minute per caller."""
        return {"pid": os.getpid()}

    @discovery.tool
    def pid(seconds: float = 0.0) -> dict:
        """Which worker process ran the call, after ``seconds``.

        Args:
            seconds: How long to take.
        """
        time.sleep(seconds)
        return {"pid": os.getpid()}

    app = Flask("operating")
    app.config.update(TOOLDISCOVERY_RATELIMIT_STORAGE_URI=storage, TOOLDISCOVERY_METRICS=metrics,
                      TOOLDISCOVERY_METRICS_PATH="/metrics" if metrics else None,
                      TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    discovery.init_app(app)
    return app
