"""MCP ``tools/call`` answered as Server-Sent Events on its own POST: progress and log notifications
while the tool runs, ``: keep-alive`` comments while it is silent, then the JSON-RPC response.

It streams when the client accepts ``text/event-stream`` and the call carries a ``progressToken`` or
a log level in ``params._meta`` or names a ``long_running`` tool; in the handshake era (from
2025-03-26) also a call of any tool that takes a ``ToolContext``, once the tool logs a line (at the
level the call names, else ``info``: a stateless server keeps no ``logging/setLevel``) or asks its
caller (:class:`.elicit.StreamAsker`): until then it may still be answered as plain JSON. The
dialect's own dispatch runs in a helper thread: its reply goes out as plain JSON if it ends before
the stream starts (unknown tool, invalid params, a tool that said nothing), else the handler opens
the stream with :func:`listen`. The stream's :class:`~.sse.Plan` travels in the request's
:class:`~.request.McpRequest`, given to each module that needs it. A handshake-era ``tasks/result``
accepting SSE is streamed the same lazy way, once it asks the task's questions
(:mod:`.task_questions`), and so is a handshake-era ``prompts/get`` or ``resources/read`` whose
function takes a ``ToolContext``, once it logs or asks its caller (:mod:`.asking`). Nothing
outlives the request:
``notifications/cancelled`` finds calls in this worker by (caller, request id); the client closing
the stream cancels the call wherever it runs.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from typing import Any

from flask import Response, current_app, request, stream_with_context

from ...calls import InFlight
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...serving.wire import accepts
from ...tools.model import LOG_LEVELS, ToolContext
from . import approval, elicit, revisions, sse, task_questions
from . import jsonrpc as rpc
from .request import VERSION_META_KEY, McpRequest
from .sse import Done, Plan, Reply

LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
PROGRESS_TOKEN_META_KEY = "progressToken"
#: Lowest level sent to handshake-era calls that name none (a stateless server keeps no setLevel);
#: in the stateless era only calls that name a level get log lines.
DEFAULT_LOG_LEVEL = "info"
#: Reads whose function may ask its caller (:mod:`.asking`), streamed in the handshake era as a call is.
ASKING_READS = ("prompts/get", "resources/read")
IN_FLIGHT = InFlight()


def requested(meta: Mapping[str, Any]) -> tuple[str | int | None, str | None]:
    """The progress token and log level a request's ``_meta`` names (-32602 when malformed)."""
    token, level = meta.get(PROGRESS_TOKEN_META_KEY), meta.get(LOG_LEVEL_META_KEY)
    if token is not None and (isinstance(token, bool) or not isinstance(token, str | int)):
        raise rpc.RpcError(rpc.INVALID_PARAMS, "params._meta.progressToken must be a string or an integer.")
    if level is not None and (not isinstance(level, str) or level not in LOG_LEVELS):
        raise rpc.RpcError(rpc.INVALID_PARAMS,
                           f"params._meta['{LOG_LEVEL_META_KEY}'] must be one of {', '.join(LOG_LEVELS)}.")
    return token, level


def caller_key(pipe: Pipeline, request_id: object) -> tuple[object, ...]:
    """Whose call: app, endpoint, the caller's subject (anonymous: its address), request id."""
    identity = pipe.identity
    subject = identity.subject if identity is not None else None
    req = request._get_current_object()  # type: ignore[attr-defined]
    return (id(current_app._get_current_object()), req.blueprint, subject,  # type: ignore[attr-defined]
            req.remote_addr if subject is None else None, request_id)


def set_level(req: McpRequest) -> dict[str, Any]:
    """``logging/setLevel`` (handshake era only): checked and answered, but not kept."""
    if VERSION_META_KEY in req.meta:
        raise rpc.RpcError(rpc.METHOD_NOT_FOUND, "Method not found: logging/setLevel")
    if req.params.get("level") not in LOG_LEVELS:
        raise rpc.RpcError(rpc.INVALID_PARAMS, f"logging/setLevel needs params.level, one of {', '.join(LOG_LEVELS)}.")
    return {}


def plan(pipe: Pipeline, req: McpRequest) -> Plan | None:
    """How to stream ``req`` (``None``: answer it with one JSON body). A ``tools/call`` comes with
    its tool and approval found already (``req.tool``, ``req.gate``: the endpoint looks for them
    once, for the call too)."""
    method, version, meta = req.method, req.revision, req.meta
    if method == "tools/call" and req.tool is None and meta.get(PROGRESS_TOKEN_META_KEY) is None \
            and meta.get(LOG_LEVEL_META_KEY) is None:
        return None  # a call of no tool found (tool search's; an unknown tool's) asking for no progress or log
    if method not in ("tools/call", *ASKING_READS, task_questions.METHOD) or accepts(request, "text/event-stream") <= 0:
        return None
    request_id = req.id
    if request_id is None:  # a batch's member: answered in the batch
        return None
    if method == task_questions.METHOD:  # a handshake-era task's questions go out on it, if it has any
        return Plan(request_id, None, None, version, method, lazy=True) if revisions.has_handshake_tasks(version) \
            else None
    if method in ASKING_READS:  # a handshake-era prompt or resource reader taking a ToolContext may log or ask
        return _asking_plan(pipe, request_id, req)
    try:
        token, level = requested(meta)
    except rpc.RpcError:
        return None  # the handler answers it with a plain error
    tool, gate = req.tool, req.gate
    # A handshake-era call of a tool that takes a ToolContext may log or ask its caller: streamed
    # once it does (lazy), else answered as JSON.
    lazy = tool is not None and bool(tool.context_params) and revisions.streams_requests(version)
    eager = token is not None or level is not None or (tool is not None and bool(tool.metadata.get("long_running"))) \
        or (gate is not None and gate.required and approval.asks_on_stream(pipe, gate, req))  # asked on the stream
    if not eager and not lazy:
        return None
    level = level or (DEFAULT_LOG_LEVEL if revisions.logs_by_default(version) else None)
    return Plan(request_id, token, level, version, str(req.params.get("name")), lazy=not eager)


def _asking_plan(pipe: Pipeline, request_id: str | int, req: McpRequest) -> Plan | None:
    """The lazy stream of a handshake-era ``prompts/get`` or ``resources/read`` whose function
    takes a ``ToolContext``."""
    name = req.params.get("name" if req.method == "prompts/get" else "uri")
    if not isinstance(name, str) or not revisions.streams_requests(req.revision):
        return None
    try:
        token, level = requested(req.meta)
        found = pipe.core.prompts.find(name, pipe.identity) if req.method == "prompts/get" \
            else pipe.core.resources.find(name, pipe.identity)[0]
    except (rpc.RpcError, LookupError):
        return None  # the handler answers it with a plain error
    if not found.context_params:
        return None
    return Plan(request_id, token, level or DEFAULT_LOG_LEVEL, req.revision, name, lazy=True)


def receive(pipe: Pipeline, message: Any) -> None:
    """What a message that is no request does here: a ``notifications/cancelled`` cancels the
    caller's call it names, if that runs in this worker; a response is the answer to an approval
    request, for the call waiting for it."""
    if not isinstance(message, dict):
        return
    if "method" not in message:
        elicit.receive(pipe, message)
        return
    params = message.get("params") if message.get("method") == "notifications/cancelled" and "id" not in message \
        else None
    if isinstance(params, dict) and rpc.valid_id(params.get("requestId")):
        found = IN_FLIGHT.cancel(caller_key(pipe, params["requestId"]))
        log.info("flask-tooldiscovery: mcp request %r cancelled by the client (%r): %s (trace_id=%s)",
                 params["requestId"], str(params.get("reason"))[:200], "stopping it" if found
                 else "no such call in this worker", pipe.trace_id)


def streamed(pipe: Pipeline, req: McpRequest, plan: Plan, answer: Callable[[], Reply]) -> Reply | Response:
    """The reply ``answer()`` makes of ``req``, run in a helper thread with ``req.plan`` set to
    ``plan``: as one JSON body if it ends before its stream starts, else the SSE stream of the call."""
    req.plan = plan
    copied = contextvars.copy_context()

    def work() -> None:
        reply: Reply = rpc.error_body(plan.request_id, rpc.INTERNAL_ERROR, "Internal error.")
        try:
            reply = copied.run(answer)
        except BaseException as exc:  # never a view waiting for ever
            log.error("flask-tooldiscovery: mcp %s failed (trace_id=%s)", req.method, pipe.trace_id,
                      exc_info=(type(exc), exc, exc.__traceback__))
        finally:
            plan.channel.put(Done(reply))

    threading.Thread(target=work, name=f"tooldiscovery-mcp-{plan.tool}", daemon=True).start()
    first = plan.channel.get()  # the call's context (the stream starts), its first event, or its reply
    if isinstance(first, Done):
        return first.reply
    return current_app.response_class(stream_with_context(sse.events(plan, pipe.settings.stream_keepalive, first)),
                                      mimetype="text/event-stream",
                                      headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def listen(pipe: Pipeline, context: ToolContext, req: McpRequest) -> Callable[[], None]:
    """Called by the ``tools/call`` handler (``req``) just before it runs the tool: the call can now be
    cancelled by its caller's ``notifications/cancelled``, and a call to stream starts streaming.
    Returns the function that forgets the call (the handler calls it when the call is over; a
    stream also calls it when it closes)."""
    requested(context.extra.get("meta") or {})
    body = pipe.body()
    if not isinstance(body, dict):
        return _nothing  # in a batch, which call a cancellation means is not known
    forget = IN_FLIGHT.add(caller_key(pipe, body.get("id")), context)
    plan = req.plan
    if plan is not None:
        plan.context, plan.forget = context, forget
        context.listener = plan.channel.put if not plan.lazy else lambda item: (
            plan.channel.put(item) if sse.wanted(plan, item) else None)
        if not req.stateless:  # the tool's own input requests go out on the stream
            context.asker = elicit.StreamAsker(pipe.settings, plan, context, req.abilities())
        if not plan.lazy:
            plan.channel.put(context)  # the stream starts (a lazy one: at the first event)
    return forget


def _nothing() -> None:
    return None


__all__ = ["DEFAULT_LOG_LEVEL", "IN_FLIGHT", "LOG_LEVEL_META_KEY", "PROGRESS_TOKEN_META_KEY", "caller_key", "listen",
           "plan", "receive", "requested", "set_level", "streamed"]
