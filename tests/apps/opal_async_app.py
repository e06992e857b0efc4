"""An app for the Opal asynchronous execution tests under gunicorn. Start it as
``tests.apps.opal_async_app:create_app(hosts='127.0.0.1')``."""

from __future__ import annotations

import os
import time
from typing import Literal

from flask import Flask, current_app

from flask_tooldiscovery import Envelope, ToolContext, ToolDiscovery, ToolError


def create_app(hosts: str = "", retries: int = 2, call_log: str | None = None, **config: object) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True, timeout=60)
    def build_report(n: int, gate: str = "") -> dict:
        """Build a report of ``n``; with ``gate``, first wait (30 s at most) until that file exists.

        Args:
            n: A number.
            gate: A file to wait for.
        """
        deadline = time.monotonic() + 30
        while gate and not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.05)
        return {"n": n, "double": n * 2}

    @discovery.tool(long_running=True)
    def fail(kind: Literal["tool_error", "crash"]) -> dict:
        """Fail on purpose, or crash."""
        if kind == "tool_error":
            raise ToolError("Quota exceeded for this month", developer_message="quota row 42 is full")
        raise RuntimeError("database password=hunter2 in /srv/app/settings.py")

    @discovery.tool(long_running=True)
    def who(ctx: ToolContext) -> dict:
        """What the call's context holds, in the background."""
        assert ctx.request is not None
        return {"app": current_app.name, "user_id": ctx.user_id, "trace_id": ctx.trace_id,
                "token": ctx.token("OptiID"), "thread": ctx.extra["headers"].get("x-opal-thread-id"),
                "header": ctx.request.headers.get("X-Opal-Thread-Id"),
                "tool_call_id": ctx.extra["async_callback"]["tool_call_id"]}

    @discovery.tool(long_running=True, rate_limit_per_minute=1)
    def once_a_minute() -> str:
        """One call a minute per caller."""
        return "done"

    @discovery.tool(long_running=True, requires_approval=True)
    def wipe() -> str:
        """Needs a person's approval on each call."""
        return "wiped"

    @discovery.tool(long_running=True)
    def enveloped(refuse: bool = False) -> Envelope:
        """Answer with the v2 envelope: an operation, or an error."""
        if refuse:
            return Envelope(message="No room", error={"title": "Resource Conflict", "status": 409, "detail": "No room"})
        return Envelope(message="Booked", content={"room": "Blue"},
                        operation={"operation_id": "op-7", "status": "completed"})

    @discovery.tool
    def quick(n: int) -> dict:
        """Not long-running."""
        return {"n": n}

    app = Flask("opal_async")
    app.config.update({"SECRET_KEY": "opal-async-tests", "TOOLDISCOVERY_WARN_UNAUTHENTICATED": False,
                       "TOOLDISCOVERY_OPAL_CALLBACK_HOSTS": hosts, "TOOLDISCOVERY_OPAL_CALLBACK_RETRIES": retries,
                       "TOOLDISCOVERY_CALL_LOG": call_log, **config})
    discovery.init_app(app)
    return app
