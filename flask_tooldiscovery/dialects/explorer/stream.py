"""The explorer's live calls: ``POST <explorer>/tools/<name>/call`` with ``Accept: text/event-stream``
answers Server-Sent Events: ``progress`` ``{progress, total?, message?}``, ``log`` ``{level,
message}``, keep-alive comments, and last ``result`` (data: exactly the plain call's JSON body) or
``error`` (``{status, body, headers?}``: the plain call's answer to a refusal inside the pipeline:
busy, rate limited, approval required...). What is refused before the stream opens keeps its JSON
answer. The client closing the stream cancels the call."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

from flask import Request, Response, current_app, stream_with_context

from ...calls import KeepAlive, StreamItem, stream_call
from ...errors import CoreError
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...serving.wire import best_accepted
from ...tools.model import LogEntry, Progress, Tool, ToolContext
from ...tools.results import Outcome
from .live_calls import begin

SSE = "text/event-stream"
_STARTED, _DONE = object(), object()


def wants_stream(req: Request) -> bool:
    """True when the client asks for events rather than JSON (JSON wins a tie, as with ``*/*``)."""
    return best_accepted(req, ("application/json", SSE)) == SSE


def _event(name: str, data: Any) -> str:
    """One event; ``data`` is a JSON value, or a response whose JSON body is sent as it is."""
    text = data.get_data(as_text=True) if isinstance(data, Response) else current_app.json.dumps(data, sort_keys=False)
    return f"event: {name}\n" + "".join(f"data: {line}\n" for line in text.splitlines() or [""]) + "\n"


Items = Iterator[StreamItem]


def _close(items: Items) -> None:  # closing stream_call early cancels the call
    getattr(items, "close", lambda: None)()


def _frames(pipe: Pipeline, items: Items, result: Callable[[Outcome], Response], task: list[str]) -> Iterator[str]:
    yield ": call started\n\n"  # headers out now; the page knows the call runs
    try:
        if task:
            yield _event("task", {"id": task[0], "state": "working"})
        for item in items:
            if isinstance(item, Progress):
                yield _event("progress", {k: v for k, v in (
                    ("progress", item.progress), ("total", item.total), ("message", item.message)) if v is not None})
            elif isinstance(item, LogEntry):
                yield _event("log", {"level": item.level, "message": item.message})
            elif isinstance(item, KeepAlive):
                yield ": keep-alive\n\n"
            elif isinstance(item, Outcome):
                yield _event("result", result(item))
            else:
                yield _error(pipe, item)
    except Exception as exc:  # a bug below the pipeline: an error event, never a torn stream
        log.error("flask-tooldiscovery: explorer stream failed", exc_info=exc)
        yield _error(pipe, CoreError())
    finally:
        _close(items)  # the client went away: the call runs on, its record keeps the answer


def _error(pipe: Pipeline, exc: CoreError) -> str:
    answer = pipe.error_response(exc)  # logged and shaped as the plain call's would be
    headers = {"headers": dict(exc.headers)} if exc.headers else {}
    return _event("error", {"status": answer.status_code, "body": answer.get_json(), **headers})


def _admitted(pipe: Pipeline, start: Callable[[], Items]) -> Items:
    """Read the body and stream the call once the identity source asked around the call (the auth
    hook) admitted the caller, inside its manager, as the plain call does (its refusal, 401, before
    the body's 400; its exit after the call): it runs in a helper thread that hands the items
    over. Raises what refuses the call before the stream opens."""
    out: queue.SimpleQueue[object] = queue.SimpleQueue()
    closed = threading.Event()

    def inside() -> None:
        items = start()
        out.put(_STARTED)
        try:
            for item in items:  # to the end even once the client left: the call runs inside the hook
                if not closed.is_set():
                    out.put(item)
        finally:
            _close(items)

    def run() -> None:
        try:
            pipe.admitted(inside)
        except CoreError as exc:  # the refusal, or what refused the call on its way (the body's 400...)
            out.put(exc)
        except BaseException as exc:
            log.error("flask-tooldiscovery: explorer stream's admission failed", exc_info=exc)
            out.put(CoreError())
        finally:
            out.put(_DONE)

    threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True,
                     name="tooldiscovery-explorer-hook").start()
    first = out.get()
    if first is not _STARTED:
        while first is not _DONE and out.get() is not _DONE:
            pass  # the refusal is answered once the hook's manager has exited, as the plain call's is
        raise first if isinstance(first, CoreError) else CoreError()

    def relay() -> Items:
        try:
            while (item := out.get()) is not _DONE:
                yield cast(StreamItem, item)
        finally:
            closed.set()

    return relay()


def stream_response(pipe: Pipeline, tool: Tool, context: ToolContext, arguments: Callable[[], Any],
                    result: Callable[[Outcome], Response], error: Callable[[CoreError], tuple[Any, int]]) -> Response:
    """The call of ``tool`` as an event stream (``arguments()`` reads the body; ``result`` is the
    plain call's answer to an outcome: its body is the last event's data; ``error`` its answer to a
    refusal), kept as a task."""
    task: list[str] = []

    def start() -> Items:
        given = arguments()
        task_id, invoke = begin(pipe, tool, given, context, result, error)
        task.append(task_id)
        return stream_call(invoke, tool, given, context, keepalive=pipe.settings.stream_keepalive,
                           cancel_on_close=False)

    items = _admitted(pipe, start) if pipe.awaits_admission else start()
    response = Response(stream_with_context(_frames(pipe, items, result, task)), mimetype=SSE)
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass events on as they come
    return response


__all__ = ["SSE", "stream_response", "wants_stream"]
