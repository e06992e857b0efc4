"""MCP's tasks wire methods (``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``,
``tasks/update``) and the ``tools/call`` that makes a task: a call answered with a task handle, run
by the app's task engine (:mod:`~...tasks.runner`), its record read, answered and cancelled from any
worker and host.

Which calls become tasks: a tool's ``task_support`` (``"optional"`` or ``"required"``; a
``long_running`` tool is ``"optional"``), asked for by the client: in the stateless era by declaring
the ``io.modelcontextprotocol/tasks`` extension in the request's ``_meta`` client capabilities (the
server then decides: it makes a task of every such call, SEP-2663); in the handshake era (2025-11-25)
by ``params.task`` (``execution.taskSupport`` in ``tools/list``, the ``tasks`` capability). A
``"required"`` tool called without it is refused: -32021 naming the extension (stateless era),
-32601 (handshake era). A
call with invalid arguments, or needing a person's approval, is answered at once as before.

The questions a tool declares (its ``questions`` option) are asked first, by a multi-round-trip
``InputRequiredResult`` (stateless era), and the task created once they are answered; questions it
asks while running (``ctx.ask``) park the task ``input_required`` until ``tasks/update`` answers.

Who may read a task: its caller only, the subject the request's credentials established (a
task created by another caller, or through another dialect, is an unknown task, -32602). Callers
without a subject (no credentials, or a static token all clients share) cannot be told apart: any
of them holding a task's id (122 random bits) may read it, and ``tasks/list`` lists nothing for
them (so no id is ever shown to another).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from flask import current_app

from ...observe.logs import log
from ...serving.guard import issued_call_id
from ...serving.pipeline import ApprovalGate, Pipeline
from ...serving.wire import page_cursor, read_cursor
from ...tasks.runner import TERMINAL, Task, TaskResult, Tasks, tasks_of
from ...tools.model import Tool, ToolContext
from ...tools.questions import NOBODY, Answer, answer_of, declared, from_answers
from . import jsonrpc as rpc
from . import revisions
from . import task_wire as wire
from .input_requests import wire_request
from .request import Handler, McpRequest, missing
from .revisions import HANDSHAKE, STATELESS
from .settings import McpSettings

EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: The handshake era's server capability (2025-11-25): tasks/list, tasks/cancel, task-augmented tools/call.
HANDSHAKE_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
#: The methods of each era (the others' answer -32601).
STATELESS_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
HANDSHAKE_METHODS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")
METHODS = ("tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list")
CANCELLED = "The call was cancelled at its caller's request; a run under way was asked to stop."


def support(tool: Tool) -> str:
    """``forbidden``, ``optional`` or ``required``: may (must) a call of ``tool`` be a task."""
    given = tool.metadata.get("task_support")
    return str(given) if given else "optional" if tool.metadata.get("long_running") else "forbidden"


def _poll_ms(pipe: Pipeline) -> int:
    return McpSettings.of(pipe.settings).task_poll_interval


# -- tools/call -----------------------------------------------------------------------------------


def questions_first(tool: Tool, req: McpRequest) -> tuple[dict[str, Answer], dict[str, Any] | None]:
    """The answers to the questions ``tool`` declares, sent with this call (``inputResponses``),
    and, while some are missing from a stateless-era call, the ``InputRequiredResult`` asking them."""
    asked = declared(tool.metadata)
    if not asked or not req.stateless:
        return {}, None
    responses = req.params.get("inputResponses")
    if responses is not None and not isinstance(responses, Mapping):
        raise rpc.RpcError(rpc.INVALID_PARAMS, "params.inputResponses must be an object.")
    try:
        given = {k: answer_of(responses[k], q) for k, q in asked.items() if responses and k in responses}
    except ValueError as exc:
        raise rpc.RpcError(rpc.INVALID_PARAMS, f"Invalid inputResponses: {exc}.") from None
    if len(given) == len(asked):
        return given, None
    if not req.declares("elicitation"):
        raise missing({"elicitation": {}})
    return given, {"resultType": "input_required", "inputRequests": {
        k: wire_request(q, req.revision) for k, q in asked.items() if k not in given}}


def requested_ttl(asked: Mapping[str, Any]) -> float | None:
    """The seconds a handshake-era ``params.task.ttl`` (milliseconds) asks the task to be kept
    (``None``: not asked; the server's own, ``TOOLDISCOVERY_TASK_TTL``, is the most it gets)."""
    ttl = asked.get("ttl")
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl >= 0 or ttl == float("inf"):
        raise rpc.RpcError(rpc.INVALID_PARAMS, "params.task.ttl must be a number of milliseconds (0 or more).")
    return float(ttl) / 1000


def as_task(pipe: Pipeline, gate: ApprovalGate, arguments: dict[str, Any] | None, context: ToolContext,
            req: McpRequest) -> dict[str, Any] | None:
    """The answer to a ``tools/call`` of the tool whose approval ``gate`` decided, when it is not run
    in the request: the task it created (or the questions it asks first); ``None`` to run it now.
    Its answers to questions go to ``context``."""
    tool = gate.tool
    how, ttl, params = support(tool), None, req.params
    if req.stateless:
        wanted = req.declares(EXTENSION)
        if how == "required" and not wanted:
            raise missing({"extensions": {EXTENSION: {}}})
    else:
        asked = params.get("task")
        if asked is not None and not isinstance(asked, Mapping):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "params.task must be an object.")
        wanted = asked is not None
        ttl = requested_ttl(asked or {})
        if wanted and how == "forbidden":
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Tool {tool.name} cannot be run as a task.")
        if how == "required" and not wanted:
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Tool {tool.name} must be called as a task (params.task).")
    answers, first = questions_first(tool, req)
    if first is not None:
        return first  # the InputRequiredResult: its questions first
    context.asker = from_answers(answers, NOBODY)
    if (not wanted or how == "forbidden" or gate.required
            or pipe.argument_errors(tool, arguments, coerce=True, max_errors=1)):
        return None  # run now: not a task, its approval asked on the call, or invalid (answered as such)
    wait = McpSettings.of(pipe.settings).elicitation_timeout
    # Handshake era: asked on the stream of a tasks/result (task_questions); stateless era: tasks/update.
    askable = wait > 0 and (req.declares("elicitation") if req.stateless else revisions.has_tasks(req.revision))
    meta = {"trace_id": context.trace_id, **Tasks.asking(wait, askable, answers)}
    task = tasks_of(current_app).start(pipe, tool, arguments or {}, context, meta=meta, ttl=ttl)
    log.info("flask-tooldiscovery: mcp tools/call %s runs as task %s (trace_id=%s)", tool.name, task.id,
             context.trace_id)
    return wire.created(pipe, task, req.era, _poll_ms(pipe))


# -- tasks/* ----------------------------------------------------------------------------------------


def caller(pipe: Pipeline) -> str | None:
    """Whose tasks this request may see: its identity's subject (``None``: no subject)."""
    identity = pipe.identity
    return identity.subject if identity is not None else None


def lookup(pipe: Pipeline, params: Mapping[str, Any]) -> Task:
    """The caller's MCP task that ``params.taskId`` names, or -32602 (unknown, expired, not its).
    The error names the id back only when it has the form of the ids the server issues: a client's
    made-up one (10 kB, binary...) is never echoed."""
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise rpc.RpcError(rpc.INVALID_PARAMS, "params.taskId must be a non-empty string.")
    task = tasks_of(current_app).read(task_id)  # None for an id the server never issued
    if task is not None and (task.dialect != pipe.name or task.caller != caller(pipe)):
        log.warning("flask-tooldiscovery: mcp task %s asked for by another caller, refused as unknown "
                    "(trace_id=%s)", task_id, pipe.trace_id)
        task = None
    if task is None:
        raise rpc.RpcError(rpc.INVALID_PARAMS, "Failed to retrieve task: Task not found",
                           {"taskId": task_id} if issued_call_id(task_id) else None)
    return task


def cancel(task: Task) -> Task:
    """Cancel ``task`` now (its record says so at once; a run under way is asked to stop)."""
    tasks = tasks_of(current_app)
    tasks.cancel(task.id)  # reaches the run wherever it is
    store = tasks.store
    store.finish(task.id, "cancelled", TaskResult(status="cancelled", error=CANCELLED, cancelled=True),
                 message=CANCELLED)
    return store.get(task.id) or task


def methods(pipe: Pipeline, relay: Callable[[Pipeline, Task, McpRequest], bool] | None = None) -> dict[str, Handler]:
    """The ``tasks/*`` methods, each answering as its request's era does; ``relay`` asks a
    handshake-era task's open questions while ``tasks/result`` waits (true: an answer was taken)."""

    def era_of(req: McpRequest) -> revisions.Era:
        if req.method not in (STATELESS_METHODS if req.stateless else HANDSHAKE_METHODS):
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Method not found: {req.method}")
        if req.stateless and not req.declares(EXTENSION):
            raise missing({"extensions": {EXTENSION: {}}})
        return req.era

    def get(req: McpRequest) -> dict[str, Any]:
        era = era_of(req)
        return wire.detailed(pipe, lookup(pipe, req.params), era, _poll_ms(pipe), req.revision)

    def update(req: McpRequest) -> dict[str, Any]:
        era_of(req)
        task, responses = lookup(pipe, req.params), req.params.get("inputResponses")
        if not isinstance(responses, Mapping):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "params.inputResponses must be an object.")
        try:
            tasks_of(current_app).answer(task.id, responses)
        except ValueError as exc:
            raise rpc.RpcError(rpc.INVALID_PARAMS, f"Invalid inputResponses: {exc}.") from None
        return {}

    def cancel_task(req: McpRequest) -> dict[str, Any]:
        era = era_of(req)
        task = lookup(pipe, req.params)
        if era != STATELESS and task.terminal:
            raise rpc.RpcError(rpc.INVALID_PARAMS, f"Cannot cancel task: already in terminal status "
                                                   f"'{wire.status(task, era)}'", {"taskId": task.id})
        ended = task if task.terminal else cancel(task)
        return {} if era == STATELESS else wire.detailed(pipe, ended, era, _poll_ms(pipe), revisions.R2025_11_25)

    def result(req: McpRequest) -> dict[str, Any]:
        era_of(req)
        task = lookup(pipe, req.params)
        deadline = time.monotonic() + McpSettings.of(pipe.settings).task_result_wait
        while task.state not in TERMINAL:
            if relay is not None and task.state == "input_required" and relay(pipe, task, req):
                deadline = max(deadline, time.monotonic() + McpSettings.of(pipe.settings).task_result_wait)
            if time.monotonic() >= deadline:
                raise rpc.RpcError(rpc.INTERNAL_ERROR, "The task is still running; call tasks/result again.",
                                   {"taskId": task.id, "status": wire.status(task, HANDSHAKE)})
            time.sleep(0.2)
            task = tasks_of(current_app).read(task.id) or task
        if task.state == "interrupted":
            error = wire.error_object(task)
            raise rpc.RpcError(error["code"], error["message"], error["data"])
        answer = wire.tool_result(pipe, task, req.revision)
        return {**answer, "_meta": {**(answer.get("_meta") or {}), RELATED_TASK: {"taskId": task.id}}}

    def list_tasks(req: McpRequest) -> dict[str, Any]:
        era_of(req)
        params, who, size = req.params, caller(pipe), McpSettings.of(pipe.settings).page_size
        try:
            start = read_cursor(params["cursor"], 10_000) if params.get("cursor") is not None else 0
        except ValueError:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "Invalid cursor.") from None
        kept = [] if who is None else tasks_of(current_app).of_caller(who, start + size + 1)
        found = [t for t in kept if t.dialect == pipe.name]
        page = [wire.detailed(pipe, t, HANDSHAKE, _poll_ms(pipe), revisions.R2025_11_25)
                for t in found[start:start + size]]
        return {"tasks": page, **({"nextCursor": page_cursor(start + size)} if len(found) > start + size else {})}

    return {"tasks/get": get, "tasks/update": update, "tasks/cancel": cancel_task, "tasks/result": result,
            "tasks/list": list_tasks}


__all__ = ["EXTENSION", "HANDSHAKE_CAPABILITY", "HANDSHAKE_METHODS", "METHODS", "RELATED_TASK", "STATELESS_METHODS",
           "as_task", "caller", "lookup", "methods", "questions_first", "support"]
