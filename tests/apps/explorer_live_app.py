"""An app for the explorer's live-call tests under gunicorn: a tool that reports progress, then
waits until ``<markers>/release`` exists or the call is cancelled, and writes ``cancelled`` to
``<markers>/events`` when it sees the cancellation. Start it as
``tests.apps.explorer_live_app:create_app(markers=...)``."""

from __future__ import annotations

import time
from pathlib import Path

from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery


def create_app(markers: str) -> Flask:
    discovery = ToolDiscovery()
    folder = Path(markers)

    @discovery.tool
    def slow(ctx: ToolContext) -> str:
        """Report progress, then wait for the release file or a cancellation."""
        ctx.report_progress(1, 2, "waiting for the release file")
        ctx.log("info", "started")
        while not (folder / "release").exists():
            if ctx.cancelled:
                (folder / "events").write_text("cancelled\n")
                return "cancelled"
            time.sleep(0.02)
        return "released"

    app = Flask(__name__)
    app.config.update(TOOLDISCOVERY_DIALECTS=["explorer", "oxp"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_STREAM_KEEPALIVE=0.1)
    discovery.init_app(app)
    return app
