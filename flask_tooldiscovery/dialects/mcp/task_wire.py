"""A task record (:class:`~...tasks.records.Task`) as MCP shows it, in each era's words.

The stateless era (2026-07-28), the ``io.modelcontextprotocol/tasks`` extension (SEP-2663): a flat ``Task`` (``taskId``,
``status``, ``createdAt``, ``lastUpdatedAt``, ``ttlMs``, ``pollIntervalMs``, ``statusMessage``);
``tasks/get`` inlines by status the open ``inputRequests``, the ``result`` (a ``CallToolResult``)
or the ``error`` (a JSON-RPC error object). A tool's own error is ``completed`` with ``isError``;
``failed`` is kept for what is no tool result: a crash, an interrupted run.

The handshake era (2025-11-25's experimental tasks): the same fields named ``ttl`` and ``pollInterval``; a call that
ended with ``isError`` is ``failed``, and ``tasks/result`` answers what the call would have.

A record's states map onto MCP's: working, input_required, completed, cancelled as they are;
failed as above; ``interrupted`` (a run that stopped with its worker and was not run again) is
``failed`` with an error saying so.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from ...serving.pipeline import Pipeline
from ...tasks.runner import Task, TaskResult, Tasks
from ...tools.results import Outcome, RichBlock
from ..content_blocks import content_blocks
from . import jsonrpc as rpc
from .content import call_result, forms_of
from .input_requests import wire_request
from .revisions import LATEST, STATELESS, Era


def timestamp(seconds: float) -> str:
    """ISO 8601 in UTC, to the millisecond."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def crashed(task: Task) -> bool:
    """True when the call ended in no tool result: a crash, a timeout, an interrupted run."""
    return task.state == "interrupted" or (task.state == "failed" and task.result is not None and task.result.crashed)


def status(task: Task, era: Era) -> str:
    """MCP's status of the record in ``era``."""
    if task.state == "interrupted" or (task.state == "failed" and (era != STATELESS or crashed(task))):
        return "failed"
    return "completed" if task.state == "failed" else task.state


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _value(value: Any, rich: bool) -> Any:
    """A kept value as the tool returned it: its rich blocks recognised again."""
    if not rich:
        return value
    if isinstance(value, list):
        return [RichBlock(v) if isinstance(v, dict) and "type" in v else v for v in value]
    return RichBlock(value) if isinstance(value, dict) else value


def tool_result(pipe: Pipeline, task: Task, version: str) -> dict[str, Any]:
    """The ``CallToolResult`` of an ended task (a crash or an interruption: an ``isError`` one)."""
    result = task.result or TaskResult(status="failure")
    if result.call_result is not None:  # a streamed call's: the response it answered
        return dict(result.call_result)
    error = result.error or ""
    if result.status == "success":
        value = _value(result.value, result.rich)
        tool = pipe.core.registry.resolve().get(task.tool, task.version)
        if tool is None:  # no longer offered: its value without its output schema
            blocks = content_blocks(value, forms_of(version))
            return {"content": blocks, "isError": False,
                    **({"structuredContent": value} if isinstance(value, dict) and not result.rich else {})}
        return call_result(Outcome(tool=tool, call_id=task.id, status="success", value=value), version)
    if result.additional_prompt_content:
        error = f"{error}\n{result.additional_prompt_content}"
    if result.status == "invalid":
        error += "\nCorrect the arguments to match the tool's input schema and call it again."
    if result.status == "refused" and result.retry_after:
        error = f"{error} Retry in {math.ceil(result.retry_after)} s."
    return _text(error or "The call failed.")


def error_object(task: Task) -> dict[str, Any]:
    """The JSON-RPC error of a ``failed`` task."""
    error = task.result.error if task.result is not None else None
    data = {"taskId": task.id, **({"reason": "interrupted"} if task.state == "interrupted" else {})}
    return {"code": rpc.INTERNAL_ERROR, "message": error or "Internal error.", "data": data}


def _common(pipe: Pipeline, task: Task, era: Era, poll_ms: int) -> dict[str, Any]:
    shown = status(task, era)
    fields: dict[str, Any] = {"taskId": task.id, "status": shown}
    message = task.message or (task.result.error if task.result is not None and task.terminal and shown != "completed"
                               else None)
    if message:
        fields["statusMessage"] = str(message)
    fields["createdAt"], fields["lastUpdatedAt"] = timestamp(task.created), timestamp(task.updated)
    ttl = max(int(task.ttl * 1000), 1)
    if era == STATELESS:
        fields["ttlMs"], fields["pollIntervalMs"] = ttl, poll_ms
    else:
        fields["ttl"] = ttl
        if not task.terminal:
            fields["pollInterval"] = poll_ms
    return fields


def created(pipe: Pipeline, task: Task, era: Era, poll_ms: int) -> dict[str, Any]:
    """The ``CreateTaskResult`` of a new task: flat with ``resultType: "task"`` (stateless era), or
    ``{"task": Task}`` (handshake era)."""
    fields = _common(pipe, task, era, poll_ms)
    return {"resultType": "task", **fields} if era == STATELESS else {"task": fields}


def input_requests(task: Task) -> dict[str, Any]:
    """The task's open questions as MCP ``inputRequests`` (form elicitations)."""
    return {key: wire_request(q, LATEST) for key, q in Tasks.questions(task).items()}


def detailed(pipe: Pipeline, task: Task, era: Era, poll_ms: int, version: str) -> dict[str, Any]:
    """What ``tasks/get`` answers: the ``Task``, and in the stateless era what its status carries."""
    fields = _common(pipe, task, era, poll_ms)
    if era != STATELESS:
        return fields
    shown = fields["status"]
    if shown == "input_required":
        fields["inputRequests"] = input_requests(task)
    elif shown == "completed":
        fields["result"] = tool_result(pipe, task, version)
    elif shown == "failed":
        fields["error"] = error_object(task)
    return fields


__all__ = [
    "crashed",
    "created",
    "detailed",
    "error_object",
    "input_requests",
    "status",
    "timestamp",
    "tool_result",
]
