"""The core of long-running calls: progress and log reports, keep-alives, cancellation
(``ToolContext`` and :func:`flask_tooldiscovery.streaming.stream_call`), without any dialect."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery
from flask_tooldiscovery.calls.streaming import InFlight, KeepAlive, stream_call
from flask_tooldiscovery.errors import Busy
from flask_tooldiscovery.runtime.invoke import CANCELLED, Outcome
from flask_tooldiscovery.serving.pipeline import Pipeline
from flask_tooldiscovery.tools.model import LogEntry, Progress

WAIT = 10.0


@pytest.fixture()
def marks() -> dict[str, threading.Event]:
    return {name: threading.Event() for name in ("started", "release", "cancelled", "finished")}


@pytest.fixture()
def pipe(marks: dict[str, threading.Event]) -> Iterator[Pipeline]:
    discovery = ToolDiscovery()

    @discovery.tool
    async def steps(n: int, ctx: ToolContext) -> str:
        """Report n steps."""
        for i in range(n):
            await ctx.report_progress(i + 1, n, f"step {i + 1}")
            await ctx.log("info", f"did {i + 1}")
        return "done"

    @discovery.tool
    def sync_steps(n: int, ctx: ToolContext) -> str:
        """Report n steps without awaiting."""
        for i in range(n):
            ctx.report_progress(i + 1)
        ctx.log("warning", "careful")
        return "done"

    @discovery.tool
    async def waits(ctx: ToolContext) -> str:
        """Wait until cancelled."""
        marks["started"].set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            marks["cancelled"].set()
            raise
        return "never"

    @discovery.tool
    def polls(ctx: ToolContext) -> str:
        """Poll ctx.cancelled."""
        marks["started"].set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if ctx.cancelled:
                marks["cancelled"].set()
                ctx.check_cancelled()
            time.sleep(0.01)
        return "never"

    @discovery.tool
    def blocks(ctx: ToolContext) -> str:
        """Block until released."""
        marks["started"].set()
        marks["release"].wait(WAIT)
        marks["finished"].set()
        return "released"

    app = Flask(__name__)
    app.config.update(TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, TOOLDISCOVERY_MAX_CONCURRENT_CALLS=1)
    discovery.init_app(app)
    with app.test_request_context("/mcp", method="POST"):
        yield discovery.pipeline("mcp")


def test_events_arrive_in_order_then_the_outcome(pipe: Pipeline) -> None:
    items = [i for i in stream_call(pipe.invoke, pipe.find("steps"), {"n": 3}, pipe.context(), keepalive=WAIT)]
    events = [i for i in items if not isinstance(i, KeepAlive)]
    assert events[:-1] == [Progress(1.0, 3.0, "step 1"), LogEntry("info", "did 1"),
                           Progress(2.0, 3.0, "step 2"), LogEntry("info", "did 2"),
                           Progress(3.0, 3.0, "step 3"), LogEntry("info", "did 3")]
    outcome = events[-1]
    assert isinstance(outcome, Outcome) and outcome.ok and outcome.value == "done"


def test_sync_tools_report_without_await(pipe: Pipeline) -> None:
    items = list(stream_call(pipe.invoke, pipe.find("sync_steps"), {"n": 2}, pipe.context(), keepalive=WAIT))
    assert items[:3] == [Progress(1.0), Progress(2.0), LogEntry("warning", "careful")]
    assert isinstance(items[-1], Outcome) and items[-1].value == "done"


def test_a_call_without_listener_ignores_reports(pipe: Pipeline) -> None:
    outcome = pipe.invoke(pipe.find("steps"), {"n": 2}, pipe.context())
    assert outcome.ok and outcome.value == "done"


def test_silence_is_filled_with_keepalives(pipe: Pipeline, marks: dict[str, threading.Event]) -> None:
    stream = stream_call(pipe.invoke, pipe.find("blocks"), {}, pipe.context(), keepalive=0.05)
    assert isinstance(next(stream), KeepAlive)  # the tool blocks: nothing else can come
    marks["release"].set()
    rest = list(stream)
    assert isinstance(rest[-1], Outcome) and rest[-1].value == "released"


def test_closing_the_stream_cancels_an_async_tool(pipe: Pipeline, marks: dict[str, threading.Event]) -> None:
    stream = stream_call(pipe.invoke, pipe.find("waits"), {}, pipe.context(), keepalive=0.05)
    assert isinstance(next(stream), KeepAlive)
    assert marks["started"].wait(WAIT)
    stream.close()
    assert marks["cancelled"].wait(WAIT)


def test_closing_the_stream_tells_a_sync_tool(pipe: Pipeline, marks: dict[str, threading.Event]) -> None:
    stream = stream_call(pipe.invoke, pipe.find("polls"), {}, pipe.context(), keepalive=0.05)
    next(stream)
    assert marks["started"].wait(WAIT)
    stream.close()
    assert marks["cancelled"].wait(WAIT)


def test_cancelling_the_context_ends_the_call_as_cancelled(pipe: Pipeline, marks: dict[str, threading.Event]) -> None:
    context = pipe.context()
    inflight = InFlight()
    forget = inflight.add(("alice", 7), context)
    stream = stream_call(pipe.invoke, pipe.find("waits"), {}, context, keepalive=0.05)
    next(stream)
    assert marks["started"].wait(WAIT)
    assert not inflight.cancel(("bob", 7))  # another caller's key finds nothing
    assert inflight.cancel(("alice", 7))
    outcome = next(i for i in stream if isinstance(i, Outcome))
    forget()
    assert outcome.status == "failure" and outcome.failure is not None
    assert outcome.failure.cancelled and outcome.failure.message == CANCELLED
    assert marks["cancelled"].is_set() and len(inflight) == 0


def test_a_refusal_before_the_tool_runs_is_the_last_item(pipe: Pipeline, marks: dict[str, threading.Event]) -> None:
    first = stream_call(pipe.invoke, pipe.find("blocks"), {}, pipe.context(), keepalive=0.05)
    next(first)
    assert marks["started"].wait(WAIT)  # the only call slot is taken
    second = list(stream_call(pipe.invoke, pipe.find("steps"), {"n": 1}, pipe.context(), keepalive=WAIT))
    assert len(second) == 1 and isinstance(second[0], Busy)
    marks["release"].set()
    assert isinstance(list(first)[-1], Outcome)


def test_reports_are_checked() -> None:
    context = ToolContext(call_id="c")
    for bad in (float("nan"), float("inf"), "3", True, None):
        with pytest.raises(ValueError):
            context.report_progress(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        context.report_progress(1, total=float("inf"))
    with pytest.raises(ValueError, match="level must be one of"):
        context.log("loud", "x")


def test_cancel_callbacks_run_once_and_late_ones_at_once() -> None:
    context = ToolContext(call_id="c")
    calls: list[str] = []
    forget = context.on_cancel(lambda: calls.append("a"))
    context.on_cancel(lambda: calls.append("b"))
    forget()
    context.cancel()
    context.cancel()
    context.on_cancel(lambda: calls.append("late"))
    assert calls == ["b", "late"] and context.cancelled
    with pytest.raises(asyncio.CancelledError):
        context.check_cancelled()
