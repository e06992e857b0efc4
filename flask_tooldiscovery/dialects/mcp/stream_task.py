"""A streamed ``tools/call`` is a task: its outcome stays readable after the stream broke.

When a call is answered as Server-Sent Events (:mod:`.stream`), a task record is kept for it
(:meth:`~...tasks.runner.Tasks.here`: in the state store, leased while this worker runs it) and the
stream's first event is ``notifications/tasks/status`` naming it (with the ``related-task`` key in
its ``_meta``), for clients of a revision that has tasks (:func:`.revisions.has_tasks`; in the
stateless era those declaring the tasks extension). The spec says a client's disconnection is not a cancellation: a
recorded call whose stream closes runs on to its end, and its result (exactly the response the
stream would have carried) is kept in the record, read with ``tasks/get`` (and ``tasks/result``)
from any worker. A worker that dies mid-call stops renewing the lease, and the record then reads
``failed`` (interrupted: whether the call took effect is unknown). ``notifications/cancelled`` and
``tasks/cancel`` still stop it, from any worker. A call streamed only once its tool logs or asks its
caller (a lazy stream, :mod:`.stream`) keeps no record: it may well end as one JSON body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app

from ...serving.pipeline import Pipeline
from ...tasks.runner import TaskResult, tasks_of
from ...tools.model import Tool, ToolContext
from . import revisions, sse
from . import task_wire as wire
from .request import McpRequest
from .settings import McpSettings
from .task_methods import EXTENSION, RELATED_TASK

STOPPED = "The call ended without a result (an error on the server); whether it took effect is unknown."


def open_record(pipe: Pipeline, tool: Tool, arguments: Mapping[str, Any] | None, context: ToolContext,
                req: McpRequest) -> str | None:
    """Keep a task record for this call (``req``) when it is streamed, and name it in the stream's
    first event; its id (``None``: the call is answered as one JSON body, no record)."""
    plan = req.plan
    if plan is None or plan.context is not context or plan.lazy:  # lazy: maybe never streamed, no record
        return None
    tasks = tasks_of(current_app)
    task = tasks.here(pipe, tool, arguments, context, meta={"streamed": True, "trace_id": context.trace_id})
    plan.task_id = task.id
    if revisions.has_tasks(plan.version) and (not req.stateless or req.declares(EXTENSION)):
        status = wire.created(pipe, task, req.era, McpSettings.of(pipe.settings).task_poll_interval)
        fields = status if req.stateless else status["task"]
        fields = {k: v for k, v in fields.items() if k != "resultType"}
        plan.channel.put(sse.frame({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                                    "params": {**fields, "_meta": {RELATED_TASK: {"taskId": task.id}}}}))
    return task.id


def close_record(task_id: str | None, context: ToolContext, result: Mapping[str, Any] | None) -> None:
    """Keep the call's outcome in its record (made by :func:`open_record`): the ``CallToolResult``
    it answered, or, when it ended in no result, a failure saying so."""
    if task_id is None:
        return
    tasks = tasks_of(current_app)
    if context.cancelled:
        cancelled = TaskResult(status="cancelled", error="The call was cancelled.", cancelled=True)
        tasks.ended(task_id, "cancelled", cancelled)
    elif result is None or not isinstance(result.get("content"), list):
        tasks.ended(task_id, "failed", TaskResult(status="failure", error=STOPPED, crashed=True))
    else:
        failed = bool(result.get("isError"))
        tasks.ended(task_id, "failed" if failed else "completed",
                    TaskResult(status="failure" if failed else "success", call_result=dict(result)))


__all__ = ["STOPPED", "close_record", "open_record"]
