"""Calls that outlive their request, run as tasks through the same pipeline as every call.

:meth:`Tasks.start` keeps a :class:`~flask_tooldiscovery.calls.tasks.Task` record for the call
and hands it to the app's engine (:mod:`~flask_tooldiscovery.calls.engines`); :meth:`Tasks.run`
is what the engine calls, in whatever process and host: it reads the record, runs the call for the
caller through the dialect's pipeline (rate limits, call slots, signals, traces and metrics
apply), keeps the outcome in the record, and hands the ended task to the dialect's finisher (a
name the dialect registered with :func:`finisher`, e.g. Opal's callback delivery).

Nothing twice: a run that finds the record terminal does nothing; a run that finds an earlier run
had started (the engine delivered the task again after a worker died) runs the tool again only
when it is annotated ``idempotentHint: true``, and otherwise ends the task ``interrupted``: the
caller can read that the call may or may not have taken effect, and it is never run twice.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask

from ..calls.approvals import digest
from ..calls.engines import CELERY_INSTALL, CeleryEngine, Engine, Job, ThreadEngine
from ..calls.tasks import Task, TaskStore, store_for
from ..errors import CoreError, RetryLater
from ..observe.logs import log
from ..settings import Settings, SettingsError, key
from ..tools.invoke import CANCELLED, Outcome
from ..tools.model import Identity, Tool, ToolContext
from .pipeline import Pipeline

#: What a dialect does with a task once it ended (deliver its result somewhere), by name.
Finisher = Callable[[Pipeline, Task], None]
_FINISHERS: dict[str, Finisher] = {}
#: Request headers a task does not carry to where it runs: credentials, and what belonged to the
#: request's own body and connection.
UNCARRIED_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "content-length",
                               "transfer-encoding", "connection"})
INTERRUPTED = ("The call was interrupted: the worker running it stopped before it ended. It was not run "
               "again, so whether it took effect is unknown.")


def finisher(name: str) -> Callable[[Finisher], Finisher]:
    """Decorator: register what to do with an ended task whose call named ``then=name``."""

    def register(fn: Finisher) -> Finisher:
        _FINISHERS[name] = fn
        return fn

    return register


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """An outcome as a task keeps it: plain JSON."""
    out: dict[str, Any] = {"status": outcome.status}
    if outcome.ok:
        out["value"] = json.loads(json.dumps(outcome.value, default=str))
    else:
        out["error"] = outcome.error_message
        if outcome.failure is not None and outcome.failure.retry_after_ms:
            out["retry_after_ms"] = outcome.failure.retry_after_ms
        if outcome.parameter_errors:
            out["parameter_errors"] = json.loads(json.dumps(outcome.parameter_errors, default=str))
    return out


def _identity(data: Mapping[str, Any] | None) -> Identity | None:
    if data is None:
        return None
    return Identity(subject=data.get("subject"), scopes=tuple(data.get("scopes") or ()),
                    claims=dict(data.get("claims") or {}), method=str(data.get("method") or ""))


class Tasks:
    """One app's tasks: its store, its engine, and the runner the engine calls."""

    def __init__(self, app: Flask, settings: Settings, pipelines: Mapping[str, Pipeline]) -> None:
        self.app = app
        self.settings = settings
        self.pipelines = pipelines
        self.store: TaskStore = store_for(settings.state_storage_uri)
        self.engine = self._engine(app, settings)

    def _engine(self, app: Flask, settings: Settings) -> Engine:
        if settings.task_engine == "thread":
            return ThreadEngine(self.run, workers=settings.task_workers, backlog=settings.task_backlog,
                                retry_after=settings.busy_retry_after)
        if importlib.util.find_spec("celery") is None:
            raise SettingsError(f"{key('TASK_ENGINE')} is 'celery', which needs Celery: {CELERY_INSTALL}")
        celery_app = app.extensions.get("celery")
        if celery_app is None:
            raise SettingsError(f"{key('TASK_ENGINE')} is 'celery': build the Celery app before init_app and keep it "
                                "at app.extensions['celery'] (Flask's 'Background Tasks with Celery' way)")
        if not settings.state_storage_uri:
            raise SettingsError(f"{key('TASK_ENGINE')} is 'celery': set {key('STATE_STORAGE_URI')} (Redis) so that "
                                "task records are shared by the web and Celery workers")
        return CeleryEngine(celery_app, self.run)

    def start(self, pipe: Pipeline, tool: Tool, arguments: dict[str, Any], context: ToolContext, *,
              then: str | None = None, meta: Mapping[str, Any] | None = None) -> Task:
        """Keep a task record for this call and hand it to the engine; the record. A refusal of
        the engine (:class:`~flask_tooldiscovery.errors.Busy`) is raised, the record ended."""
        identity = context.identity
        task = Task(id=context.call_id, tool=tool.name, version=tool.version, dialect=pipe.name,
                    caller=identity.subject if identity is not None else context.user_id,
                    digest=digest(arguments), ttl=float(self.settings.task_ttl), meta={**(meta or {}), "then": then})
        self.store.put(task)
        request = context.request
        job: Job = {
            "task": task.id, "dialect": pipe.name, "tool": tool.name, "version": tool.version,
            "arguments": arguments, "call_id": context.call_id, "trace_id": context.trace_id,
            "user_id": context.user_id, "then": then, "secrets": dict(context.secrets),
            "authorization": dict(context.authorization), "extra": json.loads(json.dumps(context.extra, default=str)),
            # the headers the call arrived with, for ctx.request where the task runs (credentials aside)
            "headers": {} if request is None else {k: v for k, v in request.headers.items()
                                                   if k.lower() not in UNCARRIED_HEADERS},
            "remote_addr": None if request is None else request.remote_addr,
            "identity": None if identity is None else json.loads(json.dumps({
                "subject": identity.subject, "scopes": list(identity.scopes), "claims": dict(identity.claims),
                "method": identity.method}, default=str)),
        }
        try:
            self.engine.submit(job)
        except CoreError as exc:
            self.store.finish(task.id, "failed", {"status": "refused", "error": exc.message, "http_status": exc.status})
            raise
        return task

    def run(self, job: Job) -> None:
        """Run one task (the engine calls this, in any worker process)."""
        with self.app.app_context():
            task = self.store.get(job["task"])
            if task is None or task.terminal:
                return  # expired, or already ended (a redelivery after the end): nothing twice
            pipe = self.pipelines.get(job["dialect"])
            tool = None if pipe is None else pipe.core.registry.resolve().get(job["tool"], job["version"])
            runs = self.store.claim(task.id)
            if pipe is None or tool is None:
                self._end(pipe, task, "failed", {"status": "failure", "error": "The tool is no longer offered."})
                return
            if self.store.cancelling(task.id):
                self._end(pipe, task, "cancelled", {"status": "cancelled", "error": "The call was cancelled."})
                return
            if runs > 1 and (tool.annotations or {}).get("idempotentHint") is not True:
                log.warning("flask-tooldiscovery: task %s of %s was delivered again after its run had started; "
                            "not idempotent, so it ends interrupted", task.id, tool.name)
                self._end(pipe, task, "interrupted", {"status": "interrupted", "error": INTERRUPTED})
                return
            try:
                outcome = pipe.call_as(
                    _identity(job.get("identity")), tool, job["arguments"], coerce=True,
                    headers=job.get("headers") or {}, remote_addr=job.get("remote_addr"), call_id=job["call_id"],
                    trace_id=job.get("trace_id"), user_id=job.get("user_id"), secrets=job.get("secrets") or {},
                    authorization=job.get("authorization") or {}, extra=job.get("extra") or {})
            except CoreError as exc:  # refused when it came to run: a rate limit, no free call slot
                result = {"status": "refused", "error": exc.message, "http_status": exc.status}
                if isinstance(exc, RetryLater):
                    result["retry_after"] = exc.retry_after
                self._end(pipe, task, "failed", result)
                return
            cancelled = outcome.failure is not None and outcome.failure.message == CANCELLED
            state = "completed" if outcome.ok else "cancelled" if cancelled else "failed"
            self._end(pipe, task, state, outcome_json(outcome))

    def _end(self, pipe: Pipeline | None, task: Task, state: Any, result: dict[str, Any]) -> None:
        if not self.store.finish(task.id, state, result):
            return  # someone else ended it first
        ended = self.store.get(task.id)
        then = task.meta.get("then")
        fn = _FINISHERS.get(then) if isinstance(then, str) else None
        if fn is not None and pipe is not None and ended is not None:
            try:
                fn(pipe, ended)
            except Exception:
                log.exception("flask-tooldiscovery: finishing task %s (%s) failed", task.id, then)


#: Where ``init_app`` keeps an app's :class:`Tasks`.
EXTENSION_KEY = "tooldiscovery.tasks"


def tasks_of(app: Flask) -> Tasks:
    """The app's :class:`Tasks` (made by ``init_app``)."""
    tasks: Tasks = app.extensions[EXTENSION_KEY]
    return tasks


__all__ = ["EXTENSION_KEY", "INTERRUPTED", "Finisher", "Tasks", "finisher", "outcome_json", "tasks_of"]
