"""An app of async tools for the async bridge's tests under gunicorn gthread: which loop ran a call
and how many calls it served, a tool that leaves a task behind, one that reads a context variable
set by the app's own request hook, and one that overruns its timeout.
Start it as ``tests.apps.async_app:create_app()``."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

from flask import Flask, request

from flask_tooldiscovery import ToolDiscovery

caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="nobody")
left_behind = {"ran": 0, "cancelled": 0}


def create_app() -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    async def where() -> dict[str, Any]:
        """The loop that runs this call, how many calls it has served, and the tasks it holds."""
        loop = asyncio.get_running_loop()
        loop.calls = getattr(loop, "calls", 0) + 1  # type: ignore[attr-defined]
        await asyncio.sleep(0.01)
        return {"loop": id(loop), "calls": loop.calls, "tasks": len(asyncio.all_tasks()),  # type: ignore[attr-defined]
                "thread": threading.get_ident()}

    @discovery.tool
    async def leave_task() -> str:
        """Start a task that would count itself in a second, and return at once."""

        async def later() -> None:
            try:
                await asyncio.sleep(1)
                left_behind["ran"] += 1
            except asyncio.CancelledError:
                left_behind["cancelled"] += 1
                raise

        asyncio.get_running_loop().create_task(later())
        await asyncio.sleep(0)
        return "started"

    @discovery.tool
    async def left() -> dict[str, int]:
        """What became of the tasks left behind, and the tasks this call's loop holds."""
        return {**left_behind, "tasks": len(asyncio.all_tasks())}

    @discovery.tool
    async def who() -> str:
        """The caller named by the app's own request hook (a context variable)."""
        await asyncio.sleep(0)
        return caller.get()

    @discovery.tool(timeout=0.2)
    async def overrun() -> str:
        """Sleeps past its timeout."""
        await asyncio.sleep(5)
        return "late"

    app = Flask("async_app")
    # Every thread of the worker runs calls at once here (the loops of all of them are the point),
    # not the default of one less than the threads.
    app.config.update(TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, TOOLDISCOVERY_MAX_CONCURRENT_CALLS=0)

    @app.before_request
    def name_the_caller() -> None:
        caller.set(request.headers.get("X-Caller", "nobody"))

    discovery.init_app(app)
    return app
