"""The questions of a handshake-era task (2025-11-25), asked on its ``tasks/result`` stream.

In the handshake era a task that needs its caller's input turns ``input_required``, and the client then
calls ``tasks/result``: a client accepting ``text/event-stream`` gets that request answered as a
stream, on which each open question of the task goes out as an ``elicitation/create`` request
(with the ``related-task`` key in its ``_meta``). The client POSTs its answer as a request of its
own, which may reach any worker; the rendezvous hands it to the ``tasks/result`` that asked
(:func:`.elicit.ask_on_stream`), which puts it in the task's record (:mod:`...tasks.task_input`),
where the task's run, wherever it is, finds it and carries on. The stream then ends with the task's
result, as ``tasks/result`` always does. A ``tasks/result`` answered as JSON asks nothing: the
task waits for another one, at most ``TOOLDISCOVERY_MCP_ELICITATION_TIMEOUT``.
"""

from __future__ import annotations

from flask import current_app

from ...errors import RendezvousError
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...tasks.runner import Task, Tasks, tasks_of
from . import elicit
from .request import McpRequest
from .task_methods import RELATED_TASK

METHOD = "tasks/result"


def relay(pipe: Pipeline, task: Task, req: McpRequest) -> bool:
    """Ask ``task``'s open questions on the stream of ``req`` (a ``tasks/result``), if it is one,
    and put the answers in its record; whether an answer was taken. Each question is asked once
    per request."""
    plan = req.plan
    if plan is None or plan.tool != METHOD:
        return False
    if plan.context is None:  # what the stream cancels when the client goes away
        plan.context = pipe.context()
    asked = plan.asked
    taken = False
    for key, question in Tasks.questions(task).items():
        if key in asked:
            continue
        asked.add(key)
        try:
            answer = elicit.ask_on_stream(pipe.settings, plan, plan.context, question,
                                          meta={RELATED_TASK: {"taskId": task.id}})
        except RendezvousError as error:
            log.error("flask-tooldiscovery: mcp task %s question not received: %s", task.id, error)
            return taken
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict):
            continue  # no answer, or the client cannot elicit: the task stops waiting in time
        try:
            taken = bool(tasks_of(current_app).answer(task.id, {key: result})) or taken
        except ValueError as exc:
            log.info("flask-tooldiscovery: mcp task %s answer refused: %s", task.id, exc)
    return taken


__all__ = ["METHOD", "relay"]
