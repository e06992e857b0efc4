"""An app for the call slot and deadline tests under gunicorn: tools that wait behind a gate (a
file the test creates), one with a timeout of its own and one without. Nothing about call slots or deadlines is
set unless asked, so the defaults are what runs. Start it as ``tests.apps.slots_app:create_app(...)``."""

from __future__ import annotations

import time
from pathlib import Path

from flask import Flask

from flask_tooldiscovery import ToolDiscovery


def create_app(gate: str = "", limit: int | None = None, default_timeout: float | None = None,
               call_log: str | None = None) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(timeout=120)
    def wait_for_gate() -> str:
        """Wait until the test opens the gate (at most two minutes), then answer."""
        deadline = time.monotonic() + 120
        while not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return "passed"

    @discovery.tool
    def past_deadline() -> str:
        """Wait for the gate with no timeout of its own (past any short default deadline), at most
        two minutes, then answer."""
        deadline = time.monotonic() + 120
        while not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return "finished"

    app = Flask("slots")
    if limit is not None:
        app.config["TOOLDISCOVERY_MAX_CONCURRENT_CALLS"] = limit
    if default_timeout is not None:
        app.config["TOOLDISCOVERY_DEFAULT_TIMEOUT"] = default_timeout
    if call_log:
        app.config["TOOLDISCOVERY_CALL_LOG"] = call_log
    discovery.init_app(app)
    return app
