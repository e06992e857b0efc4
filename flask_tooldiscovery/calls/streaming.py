"""Calls whose caller listens while the tool runs: progress reports and log lines as they happen,
keep-alives while nothing happens, then the outcome; the caller going away cancels the call.

A streaming dialect (MCP's SSE answers, the explorer's live view) iterates :func:`stream_call`
inside the response it streams and only translates each item into its wire format. Nothing is
stored between requests: the stream is the call, on whatever worker received it.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import CoreError
from ..observe.logs import log
from ..runtime.invoke import Outcome
from ..tools.model import LogEntry, Progress, Tool, ToolContext


@dataclass(frozen=True)
class KeepAlive:
    """Nothing happened for a while: dialects send a comment so proxies keep the stream open."""


#: One item of a streamed call: an event, a keep-alive, and last the outcome, or the core error
#: that refused the call (busy, rate limited: raised before the tool ran).
StreamItem = Progress | LogEntry | KeepAlive | Outcome | CoreError

_END = object()


class InFlight:
    """The calls running in this worker process, by a key the dialect chooses (for MCP: the
    caller and the JSON-RPC request id), so a cancellation arriving on another request finds
    them. A cancellation reaching another worker finds nothing there; the caller closing its
    stream cancels the call wherever it runs. Several calls may run under one key (two sessions of
    one caller reuse request ids): a cancellation by that key then cancels none, since it cannot
    tell which one it means."""

    def __init__(self) -> None:
        self._calls: dict[object, list[ToolContext]] = {}
        self._lock = threading.Lock()

    def add(self, key: object, context: ToolContext) -> Callable[[], None]:
        """Track ``context`` under ``key``; returns the function that forgets it (idempotent)."""
        with self._lock:
            self._calls.setdefault(key, []).append(context)

        def forget() -> None:
            with self._lock:
                calls = self._calls.get(key, [])
                for i, known in enumerate(calls):
                    if known is context:
                        del calls[i]
                        break
                if not calls:
                    self._calls.pop(key, None)

        return forget

    def cancel(self, key: object) -> bool:
        """Cancel the call under ``key``; False when no such call runs here, or several do."""
        with self._lock:
            calls = list(self._calls.get(key, ()))
        if len(calls) != 1:
            return False
        calls[0].cancel()
        return True

    def __len__(self) -> int:
        with self._lock:
            return sum(len(calls) for calls in self._calls.values())


def stream_call(invoke: Callable[[Tool, Any, ToolContext], Outcome], tool: Tool, arguments: object,
                context: ToolContext, *, keepalive: float = 15.0, cancel_on_close: bool = True) -> Iterator[StreamItem]:
    """Run ``invoke(tool, arguments, context)`` (the pipeline's, which guards and counts the call) in a helper thread
    and yield what it reports while it runs, :class:`KeepAlive` every ``keepalive`` seconds of
    silence, and finally its :class:`~flask_tooldiscovery.Outcome` (or the :class:`~.errors.CoreError` that
    refused it).

    Iterate it inside the request (``flask.stream_with_context``): the helper thread sees the same
    app and request context. Closing the iterator before the end (the client went away) cancels
    the call (async tools are cancelled, sync tools see ``ctx.cancelled``), unless
    ``cancel_on_close`` is false (a call kept as a task runs on).
    """
    events: queue.SimpleQueue[object] = queue.SimpleQueue()
    context.listener = events.put
    copied = contextvars.copy_context()

    def run() -> None:
        try:
            events.put(copied.run(invoke, tool, arguments, context))
        except CoreError as exc:
            events.put(exc)
        except BaseException as exc:  # a bug below the pipeline: never a silent hang
            log.error("flask-tooldiscovery: streamed call of %s failed (call_id=%s)", tool.name, context.call_id,
                      exc_info=(type(exc), exc, exc.__traceback__))
            events.put(_END)

    worker = threading.Thread(target=run, name=f"tooldiscovery-call-{tool.name}", daemon=True)
    finished = False
    worker.start()
    try:
        while True:
            try:
                item = events.get(timeout=keepalive)
            except queue.Empty:
                yield KeepAlive()
                continue
            if item is _END:
                finished = True
                raise RuntimeError("the streamed call ended without an outcome")
            yield item  # type: ignore[misc]
            if isinstance(item, (Outcome, CoreError)):
                finished = True
                return
    finally:
        context.listener = None
        if not finished and cancel_on_close:
            context.cancel()


__all__ = ["InFlight", "KeepAlive", "StreamItem", "stream_call"]
