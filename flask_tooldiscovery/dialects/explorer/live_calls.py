"""The explorer's live calls as tasks: a call streamed to the page outlives the page.

A call answered as events (:mod:`.stream`) keeps a task record (:meth:`~...tasks.runner.Tasks.here`:
the state store, leased while this worker runs it) named by the stream's first event, ``task``
``{id, state}``. The page going away (a reload, a closed tab) leaves the call running; its outcome,
exactly the plain call's answer (status and JSON body), is kept in the record. Stopping it is
explicit, from any worker: ``POST <explorer>/tasks/<id>/cancel``.

``GET <explorer>/tasks`` lists the caller's tasks (newest first; only for a caller with a subject:
callers without one cannot be told apart, so they list nothing and read their tasks by id, which
the page keeps), ``GET <explorer>/tasks/<id>`` reads one. A task of another caller or dialect is an
unknown task (404). The routes exist only with ``TOOLDISCOVERY_ALLOW_EXECUTE``; the auth hook and
every identity source admit them as they admit calls.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from flask import Response, current_app

from ...errors import CoreError, NotFound
from ...serving.guard import issued_call_id
from ...serving.pipeline import Pipeline
from ...serving.wire import json_response
from ...tasks.runner import Task, TaskResult, ended_state, tasks_of
from ...tools.model import Tool, ToolContext
from ...tools.results import Outcome

Invoke = Callable[[Tool, Any, ToolContext], Outcome]
def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def begin(pipe: Pipeline, tool: Tool, arguments: Any, context: ToolContext, answer: Callable[[Outcome], Response],
          error: Callable[[CoreError], tuple[Any, int]]) -> tuple[str, Invoke]:
    """Keep a task record for a streamed call about to run; its id, and the ``pipe.invoke`` to
    run it with, which ends the record with the plain call's answer (``answer``, or ``error`` for
    a refusal on the way)."""
    tasks = tasks_of(current_app)
    task_id = tasks.here(pipe, tool, arguments if isinstance(arguments, dict) else None, context).id

    def invoke(tool: Tool, arguments: Any, context: ToolContext) -> Outcome:
        try:
            outcome = pipe.invoke(tool, arguments, context)
        except CoreError as exc:  # refused on its way (busy, rate limited, approval): that answer
            body, status = error(exc)
            tasks.ended(task_id, "failed", TaskResult(status="refused", http_status=status, body=body,
                                                      error=exc.message))
            raise
        except BaseException:
            tasks.ended(task_id, "failed", TaskResult(status="failure", http_status=500,
                                                      body={"error": "Internal error."}, crashed=True))
            raise
        response = answer(outcome)
        cancelled = outcome.failure is not None and outcome.failure.cancelled
        tasks.ended(task_id, ended_state(outcome), TaskResult(
            status="cancelled" if cancelled else outcome.status, cancelled=cancelled,
            http_status=response.status_code, body=response.get_json()))
        return outcome

    return task_id, invoke


def shown(task: Task) -> dict[str, Any]:
    """A task as the explorer's API shows it."""
    out: dict[str, Any] = {"id": task.id, "tool": task.tool, "version": task.version, "state": task.state,
                           "created": _when(task.created), "updated": _when(task.updated)}
    if task.message:
        out["message"] = task.message
    result = task.result or TaskResult(status="failure")
    if task.terminal:
        body = result.body
        if body is None:  # ended without the call's answer: interrupted, cancelled before it ran
            body = {"error": str(result.error or task.message or "The call ended without a result.")}
        out["result"] = {"status": result.http_status or 500, "body": body}
    return out


def add_routes(pipe: Pipeline) -> None:
    """The task routes of the explorer's blueprint."""

    def caller() -> str | None:
        identity = pipe.identity
        return identity.subject if identity is not None else None

    def find(task_id: str) -> Task:
        task = tasks_of(current_app).read(task_id)  # None for an id the server never issued
        if task is None or task.dialect != pipe.name or task.caller != caller():
            # a made-up id (10 kB, binary...) is not echoed back
            raise NotFound(f"Unknown task: {task_id}" if issued_call_id(task_id) else "Unknown task.")
        return task

    @pipe.route("/tasks", "call", ["GET"], endpoint="list_tasks", guard_methods=False)
    def list_tasks() -> Response:
        def listed() -> Response:
            who = caller()
            found = [] if who is None else [t for t in tasks_of(current_app).of_caller(who) if t.dialect == pipe.name]
            return json_response({"tasks": [shown(t) for t in found]})

        return pipe.admitted(listed)

    @pipe.route("/tasks/<task_id>", "call", ["GET"], endpoint="task", guard_methods=False)
    def read_task(task_id: str) -> Response:
        return pipe.admitted(lambda: json_response(shown(find(task_id))))

    @pipe.route("/tasks/<task_id>/cancel", "call", ["POST"], endpoint="cancel_task", guard_methods=False)
    def cancel_task(task_id: str) -> Response:
        def cancel() -> Response:
            task = find(task_id)
            stopping = tasks_of(current_app).cancel(task.id)  # reaches the call wherever it runs
            return json_response({**shown(find(task_id)), "stopping": stopping}, 202 if stopping else 200)

        return pipe.admitted(cancel)


__all__ = ["add_routes", "begin", "shown"]

