"""An app for the MCP streaming tests under gunicorn: tools that report progress and log lines,
an async tool that sleeps until cancelled and a sync one that waits for a release file or its
cancellation; both leave a line in ``<markers>/events`` when they see the cancellation. Start it as
``tests.apps.stream_app:create_app(markers=..., limit=..., keepalive=..., jwt_secret=..., storage=...,
lease=...)``."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery


def create_app(markers: str, limit: int = 0, keepalive: float = 0.2, jwt_secret: str = "", storage: str = "",
               lease: float = 30) -> Flask:
    discovery = ToolDiscovery()
    folder = Path(markers)

    def mark(line: str) -> None:
        with open(folder / "events", "a") as fh:
            fh.write(f"{line} {os.getpid()}\n")

    @discovery.tool
    async def steps(n: int, ctx: ToolContext) -> str:
        """Report n progress steps, with a log line each.

        Args:
            n: How many steps.
        """
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i} of {n}")
            await ctx.log("info", f"step {i} done")
            ctx.log("debug", f"step {i} details")
        return f"{n} steps done"

    @discovery.tool
    async def sleeper(name: str, ctx: ToolContext) -> str:
        """Say it started, then sleep for five minutes.

        Args:
            name: Names this call in the marker file.
        """
        await ctx.report_progress(0, message="started")
        mark(f"started {name}")
        try:
            await asyncio.sleep(300)
        except asyncio.CancelledError:
            mark(f"cancelled {name}")
            raise
        return "slept"

    @discovery.tool(long_running=True)
    def waits(name: str, ctx: ToolContext) -> str:
        """Say it started, then wait for the release file ``release-<name>`` or a cancellation,
        without a word in between.

        Args:
            name: Names this call (its release file and its line in the marker file).
        """
        ctx.report_progress(0, message="started")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if ctx.cancelled:
                mark(f"cancelled {name}")
                return "stopped"
            if (folder / f"release-{name}").exists():
                return f"released {name}"
            time.sleep(0.02)
        return "gave up"

    app = Flask("stream_app")
    app.config.update(TOOLDISCOVERY_MAX_CONCURRENT_CALLS=limit, TOOLDISCOVERY_STREAM_KEEPALIVE=keepalive,
                      TOOLDISCOVERY_BUSY_RETRY_AFTER=1, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    if jwt_secret:
        app.config["TOOLDISCOVERY_JWT_SECRET"] = jwt_secret
    if storage:  # task records (a streamed call's) shared by several servers
        app.config["TOOLDISCOVERY_STATE_STORAGE_URI"] = storage
    app.config["TOOLDISCOVERY_TASK_LEASE"] = lease
    discovery.init_app(app)
    return app
