"""What an MCP call streamed as Server-Sent Events says (:mod:`.mcp_stream` decides when): each
JSON-RPC message as ``event: message`` with its JSON as ``data`` (no ``id``: a stateless server
cannot resume a stream), ``: keep-alive`` comments while the tool is silent, then the response."""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flask import current_app

from ...tools.model import LOG_LEVELS, LogEntry, Progress, ToolContext
from . import revisions

Reply = dict[str, Any] | None


@dataclass
class Plan:
    """A ``tools/call`` to stream: the request's id, progress token, log level, protocol version and
    tool; the channel its events arrive on, and (once it runs) its context."""

    request_id: str | int
    token: str | int | None
    level: str | None
    version: str
    tool: str
    channel: queue.SimpleQueue[object] = field(default_factory=queue.SimpleQueue)
    context: ToolContext | None = None
    forget: Callable[[], None] = lambda: None
    #: The task record kept for the call (:mod:`.stream_task`): closing the stream then leaves it running.
    task_id: str | None = None
    #: Opened at the call's first event (else the reply goes out as JSON).
    lazy: bool = False
    #: The keys of the task questions a ``tasks/result`` stream asked already (each asked once).
    asked: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Done:
    """The dispatch ended with this reply (``None``: nothing to answer)."""

    reply: Reply


def frame(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as an SSE event."""
    text = current_app.json.dumps(message, sort_keys=False)
    return ("event: message\n" + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()


def _number(value: float) -> float | int:
    return int(value) if value.is_integer() else value


def wanted(plan: Plan, item: object) -> bool:
    """Whether ``item`` is something the call's stream says (a notification asked for, a request)."""
    if isinstance(item, Progress):
        return plan.token is not None
    if isinstance(item, LogEntry):
        return bool(plan.level) and LOG_LEVELS.index(item.level) >= LOG_LEVELS.index(str(plan.level))
    return True


def notification(plan: Plan, item: object) -> bytes | None:
    """A tool's report as the notification the caller asked for (``None``: not asked for)."""
    if isinstance(item, Progress) and plan.token is not None:
        params: dict[str, Any] = {"progressToken": plan.token, "progress": _number(item.progress)}
        if item.total is not None:
            params["total"] = _number(item.total)
        if item.message is not None and revisions.has_progress_message(plan.version):
            params["message"] = item.message
        return frame({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
    if isinstance(item, LogEntry) and plan.level and LOG_LEVELS.index(item.level) >= LOG_LEVELS.index(plan.level):
        return frame({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": item.level, "logger": plan.tool, "data": item.message}})
    return None


def events(plan: Plan, keepalive: float, first: object = None) -> Iterator[bytes]:
    """The stream: a comment at once (so the headers leave now), the notifications (``first``, the
    item that opened the stream, before the others), keep-alives, and the response, except to a call
    its client cancelled (the spec's SHOULD NOT). Closed early (the client went away), it cancels the
    call in the stateless era; in the handshake era a call with a task record runs on (a disconnection is no
    cancellation there) and the record keeps its outcome."""
    done = False
    try:
        yield b": stream\n\n"
        while not done:
            if first is not None:
                item, first = first, None
            else:
                try:
                    item = plan.channel.get(timeout=keepalive)
                except queue.Empty:
                    yield b": keep-alive\n\n"
                    continue
            if isinstance(item, Done):
                done = True
                if item.reply is not None and not (plan.context is not None and plan.context.cancelled):
                    yield frame(item.reply)
            elif isinstance(item, bytes):  # a message already framed (an elicitation request)
                yield item
            elif (event := notification(plan, item)) is not None:
                yield event
    finally:
        plan.forget()
        if not done and plan.context is not None and (plan.task_id is None
                                                      or revisions.disconnect_cancels(plan.version)):
            plan.context.cancel()


__all__ = ["Done", "Plan", "Reply", "events", "frame", "notification", "wanted"]
