"""Opal's asynchronous execution of ``long_running`` tools: ``202`` at once, the call run as a
task (:mod:`~flask_tooldiscovery.tasks.runner`: a record readable from any worker, run by the
app's task engine through the pipeline), its result POSTed to the callback URL the request names
when the task ends. The ``202`` body names the task (``task_id``, the call id).

Wire facts, from the Python SDK ``optimizely-opal.opal-tools-sdk`` 0.2.3.dev0 (npm's 0.1.3-dev has
no async mode): ``models.py`` Function.to_dict: an async tool is ``"mode": "async"`` (``"timeout"``
in seconds when set) in discovery. ``service.py`` tool_endpoint: the platform adds
``"async_callback": {"url", "tool_call_id", "callback_token"}`` to the body; an async tool given it
answers ``202`` ``{"status": "accepted"}``, else runs synchronously. ``response.py``
AsyncCallback.complete: ``POST url``, ``Content-Type: application/vnd.optimizely.opal.tools+json``,
``Authorization: Bearer <callback_token>`` when given, body a ComposableToolResponse (``message`` /
``content`` + ``content_type`` / ``error``); a failure is provider_error: ``{"message", "error":
{"type": "about:blank", "title": "Provider Error", "status": 502, "detail", "error_code":
"PROVIDER_ERROR"}}``; 3 attempts, backoff 0.5 s doubling, 10 s timeout, 5xx and transport errors
retried, 4xx not. Ours: 429 retried too; attempts and timeout are settings; a non-string value
goes in ``content`` (the SDK sends ``str(result)``); a crash sends the generic message, never
``str(exc)``; where the URL may point: :mod:`~flask_tooldiscovery.calls.outbound`; the attempts
are made by the app's callback sender (:mod:`~flask_tooldiscovery.tasks.callbacks`: threads of its
own, limits per host, a circuit per host, a short connect timeout).
"""

from __future__ import annotations

import math
import time
from http import HTTPStatus
from typing import Any

from flask import Response, current_app

from ...errors import BadRequest
from ...observe.logs import log
from ...serving.pipeline import ApprovalGate, Pipeline
from ...serving.wire import json_response
from ...tasks.runner import INTERRUPTED, Task, TaskResult, backoff_for, tasks_of
from ...tools.model import Tool, ToolContext
from .settings import OpalSettings

RESULT_MIMETYPE = "application/vnd.optimizely.opal.tools+json"
HOSTS = "TOOLDISCOVERY_OPAL_CALLBACK_HOSTS"
#: The task finisher that delivers an async call's result to its callback URL.
FINISHER = "opal.callback"


def mode(tool: Tool) -> str | None:
    """Discovery's ``mode``: ``"async"`` for long-running tools (absent: synchronous)."""
    return "async" if tool.metadata.get("long_running") else None


def timeout(tool: Tool) -> int | None:
    """Discovery's ``timeout`` of a long-running tool: its own, in whole seconds."""
    return math.ceil(tool.timeout) if mode(tool) and tool.timeout else None


def openapi(tool: Tool, envelope: dict[str, Any]) -> None:
    """A long-running tool's request body (the ``envelope``) also takes ``async_callback``."""
    if mode(tool):
        text = {"type": "string"}
        envelope["properties"]["async_callback"] = {
            "type": ["object", "null"], "required": ["url"],  # null: answered at once
            "properties": {"url": {"type": "string", "format": "uri"}, "tool_call_id": text, "callback_token": text}}


def responses(tool: Tool) -> dict[str, Any]:
    """A long-running tool's own answer: 202 when it was given an ``async_callback``."""
    if not mode(tool):
        return {}
    return {"202": {"description": "Accepted: the result is POSTed to async_callback.url.", "content": {
        "application/json": {"schema": {"type": "object", "properties": {
            "status": {"enum": ["accepted"]}, "task_id": {"type": "string"}}}}}}}


def _valid(tool: Tool, parameters: dict[str, Any]) -> bool:
    """The checks :func:`~..invoke.invoke` makes before running a tool, without running it."""
    return not Pipeline.argument_errors(tool, parameters, coerce=True, max_errors=1)


def accept(pipe: Pipeline, gate: ApprovalGate, parameters: dict[str, Any], context: ToolContext,
           body: dict[str, Any]) -> Response | None:
    """``202`` when the tool whose approval ``gate`` decided for this call runs in the background;
    ``None``: answer synchronously (not long-running, no callback, needs approval, or invalid
    arguments, which the synchronous path refuses)."""
    tool, callback = gate.tool, body.get("async_callback")
    if not mode(tool) or callback is None or gate.required:
        return None  # a person's approval is asked for (and checked) on the call itself, by the same gate
    if not isinstance(callback, dict) or not isinstance(callback.get("url"), str):
        raise BadRequest("'async_callback' must be an object with a 'url' string.")
    url, token = callback["url"], callback.get("callback_token")
    options = OpalSettings.of(pipe.settings)
    reason = tasks_of(current_app).callbacks.refused(url, options.callback_hosts, HOSTS)
    if reason is not None:
        raise BadRequest(f"The callback URL is refused: {reason}.", reason=f"callback URL refused: {reason}")
    if not _valid(tool, parameters):
        return None
    tasks = tasks_of(current_app)
    kept = tasks.keep_secret(token) if isinstance(token, str) and token else {}
    if kept is None:
        # Shared records and no SECRET_KEY to seal the token with: it is kept nowhere, and the call
        # is answered as it runs (Opal takes a result in the answer as well as at the callback).
        log.warning("flask-tooldiscovery: opal: %s answered synchronously: its callback token would be kept in "
                    "clear in the shared task store; set SECRET_KEY to seal it and answer it asynchronously",
                    tool.name)
        return None
    context.extra["async_callback"] = {"url": url, "tool_call_id": callback.get("tool_call_id")}
    meta = {"trace_id": context.trace_id, "callback": {  # retry_window: also what the callback sender reads
        "url": url, "token": kept or None, "tool_call_id": callback.get("tool_call_id"),
        "retry_window": options.callback_retry_window}}
    task = tasks.start(pipe, tool, parameters, context, then=FINISHER, meta=meta)
    return json_response({"status": "accepted", "task_id": task.id}, 202)


def deliver_result(pipe: Pipeline, task: Task, attempt: int) -> float | None:
    """One attempt to POST an ended task's result to the callback URL its call named; the wait
    before the next one while it fails (a connection error, a 5xx, a 429) within the retry window
    and the attempts allowed, else ``None`` (delivered, or given up: logged, the result kept in the
    task's record)."""
    callback = task.meta.get("callback") or {}
    options = OpalSettings.of(pipe.settings)
    url, token = str(callback.get("url")), tasks_of(current_app).kept_secret(callback.get("token"))
    ids = f"call_id={task.id} trace_id={task.meta.get('trace_id')} tool_call_id={callback.get('tool_call_id')}"
    headers = {"Content-Type": RESULT_MIMETYPE, "User-Agent": "flask-tooldiscovery",
               **({"X-Trace-Id": str(task.meta["trace_id"])} if task.meta.get("trace_id") else {}),
               **({"Authorization": f"Bearer {token}"} if token else {})}
    most = options.callback_retries + 1 if options.callback_retries is not None else None
    sender = tasks_of(current_app).callbacks
    delivered, retry, reason = sender.post(task, url, _body(task), headers, timeout=options.callback_timeout,
                                           hosts=options.callback_hosts, setting=HOSTS, ids=ids, number=attempt,
                                           of=most)
    if delivered:
        return None
    wait, window = backoff_for(attempt), callback.get("retry_window", options.callback_retry_window)
    if retry and (most is None or attempt < most) and time.time() + wait < task.updated + float(window):
        return wait
    sender.give_up(task, url, attempt, ids, str(reason) if not retry else f"{reason} (no attempt left)")
    return None


def _body(task: Task) -> dict[str, Any]:
    """The callback's body for an ended task."""
    result = task.result or TaskResult(status="failure")
    if task.state == "interrupted":
        return _problem(502, result.error or INTERRUPTED, code="INTERRUPTED")
    if result.status == "refused":
        retry = result.retry_after
        return _problem(result.http_status or 503, str(result.error), math.ceil(retry) if retry else None)
    return _result_of(result)


def _problem(status: int, detail: str, retry_after: int | None = None, code: str | None = None) -> dict[str, Any]:
    """The SDK's error envelope: RFC 9457 problem details under ``error``."""
    title, named = ("Provider Error", "PROVIDER_ERROR") if status == 502 else (
        HTTPStatus(status).phrase, {400: "VALIDATION_ERROR", 429: "RATE_LIMITED"}.get(status, HTTPStatus(status).name))
    code = code or named
    error = {"type": "about:blank", "title": title, "status": status, "detail": detail, "error_code": code}
    return {"message": detail, "error": {**error, **({"retry_after": retry_after} if retry_after else {})}}


def _result_of(result: TaskResult) -> dict[str, Any]:
    """A task's kept outcome as the callback's body."""
    status, error = result.status, result.error or ""
    if result.envelope is not None:
        return dict(result.envelope)  # the tool's own v2 envelope, error and all
    if status == "invalid":
        return _problem(400, error)
    if status != "success":
        ms = result.retry_after_ms
        return _problem(502, error, math.ceil(ms / 1000) if ms else None)
    value = result.value
    if value is None or isinstance(value, str):
        return {"message": value or ""}
    return {"content": value, "content_type": "application/json"}
