"""An app for the call slot and deadline tests under gunicorn: a tool that waits behind a gate (a
file the test creates) and a tool that would run forever. Nothing about call slots or deadlines is
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
    def forever() -> str:
        """Run until the process ends (no timeout of its own)."""
        while True:
            time.sleep(0.1)

    app = Flask("slots")
    if limit is not None:
        app.config["TOOLDISCOVERY_MAX_CONCURRENT_CALLS"] = limit
    if default_timeout is not None:
        app.config["TOOLDISCOVERY_DEFAULT_TIMEOUT"] = default_timeout
    if call_log:
        app.config["TOOLDISCOVERY_CALL_LOG"] = call_log
    discovery.init_app(app)
    return app
