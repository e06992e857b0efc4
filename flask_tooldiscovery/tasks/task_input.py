"""Questions a running task asks its caller (:meth:`~..tools.model.ToolContext.ask`), kept in the
task's record so that any worker shows them and takes their answers.

While a task waits, its record is ``input_required`` and ``meta["questions"]`` holds the questions
still open, by key (``{"message", "schema"}``); an answer (:func:`deliver`, from whichever worker
received it) moves into ``meta["answers"]`` and, once no question is open, the record is
``working`` again. The asking run polls the record (every ``poll`` seconds) and ends as cancelled
when the task is cancelled or ended meanwhile. Answers are kept for the task's life: a question
asked again under its key gets the answer given. Only a task whose dialect can carry questions to
its caller and answers back (``meta["askable"]``) asks, for ``meta["ask_wait"]`` seconds at most;
any other refuses with :class:`~..tools.questions.CannotAsk`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..tools.questions import NOBODY, Answer, Asker, CannotAsk, InputRequest, Question, answer_of
from .records import Task, TaskStore

QUESTIONS, ANSWERS, ASKABLE = "questions", "answers", "askable"
#: Seconds the task waits for an answer, when its dialect says (else as long as the task is kept).
ASK_WAIT = "ask_wait"
NO_ANSWER = "No answer came within {wait:g} {seconds}, so the tool stopped waiting."
ONLY_QUESTIONS = ("This tool asks its caller's model or roots while it runs as a task, which a task cannot do: a task "
                  "asks its caller form questions only.")


def open_questions(task: Task) -> dict[str, Question]:
    """The task's questions still waiting for an answer, by key."""
    raw = task.meta.get(QUESTIONS) or {}
    return {k: Question(str(v.get("message")), dict(v.get("schema") or {}), k) for k, v in raw.items()}


def answers(task: Task) -> dict[str, Answer]:
    """The answers the task received, by key."""
    raw = task.meta.get(ANSWERS) or {}
    return {k: Answer(str(v.get("action")), dict(v.get("content") or {})) for k, v in raw.items()}


def asker(store: TaskStore, task_id: str, *, wait: float, poll: float = 0.25) -> Asker:
    """What answers the questions of task ``task_id``'s run: the answers it has, else the caller's,
    waited for (``wait`` seconds at most)."""

    def ask(requests: Sequence[InputRequest]) -> list[Any]:
        questions = [q for q in requests if isinstance(q, Question)]
        if len(questions) < len(requests):  # sampling, roots: a task's record carries form questions only
            raise CannotAsk(ONLY_QUESTIONS)
        keys = [str(q.key) for q in questions]
        task = store.get(task_id)
        if task is None:
            raise asyncio.CancelledError("the task is gone")
        given = answers(task)
        if all(k in given for k in keys):
            return [given[k] for k in keys]
        if not task.meta.get(ASKABLE):
            raise CannotAsk(NOBODY)
        limit = task.meta.get(ASK_WAIT)
        waited = min(wait, float(limit)) if isinstance(limit, (int, float)) else wait

        def park(current: Task) -> Task:
            known = answers(current)
            waiting: dict[str, Any] = {**(current.meta.get(QUESTIONS) or {}),
                       **{str(q.key): q.to_json() for q in questions if q.key not in known}}
            first = next((q.get("message") for q in waiting.values()), None)
            message = f"Waiting for the caller's answer: {first}" if first else current.message
            return replace(current, state="input_required", updated=time.time(),
                           meta={**current.meta, QUESTIONS: waiting}, message=message)

        if store.update(task_id, park) is None:
            raise asyncio.CancelledError("the task ended while asking")
        deadline = time.monotonic() + waited
        while time.monotonic() < deadline:
            time.sleep(poll)
            task = store.get(task_id)
            if task is None or task.terminal or store.cancelling(task_id):
                raise asyncio.CancelledError("the task was cancelled while it waited for an answer")
            given = answers(task)
            if all(k in given for k in keys):
                return [given[k] for k in keys]
        raise CannotAsk(NO_ANSWER.format(wait=waited, seconds="second" if waited == 1 else "seconds"))

    return ask


def deliver(store: TaskStore, task_id: str, responses: Mapping[str, Any]) -> list[str]:
    """Take the caller's answers to task ``task_id``'s open questions (a response to any other key
    is ignored); the keys taken. :class:`ValueError` when an answer does not fit its question (none
    is taken then)."""
    task = store.get(task_id)
    if task is None or task.terminal:
        return []
    waiting = open_questions(task)
    checked = {k: answer_of(raw, waiting[k]).to_json() for k, raw in responses.items() if k in waiting}
    if not checked:
        return []

    taken: dict[str, Any] = {}

    def take(current: Task) -> Task | None:
        still = dict(current.meta.get(QUESTIONS) or {})
        taken.clear()
        taken.update({k: v for k, v in checked.items() if k in still})
        if not taken:
            return None
        for k in taken:
            del still[k]
        meta = {**current.meta, QUESTIONS: still, ANSWERS: {**(current.meta.get(ANSWERS) or {}), **taken}}
        return replace(current, meta=meta, updated=time.time(), state="input_required" if still else "working",
                       message=current.message if still else None)

    return [] if store.update(task_id, take) is None else list(taken)


__all__ = ["ANSWERS", "ASKABLE", "ASK_WAIT", "NO_ANSWER", "QUESTIONS", "answers", "asker", "deliver", "open_questions"]
