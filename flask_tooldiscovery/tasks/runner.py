"""Calls that outlive their request, run as tasks through the same pipeline as every call.

:meth:`Tasks.start` keeps a :class:`~flask_tooldiscovery.tasks.records.Task` record for the call
and hands it to the app's engine (:mod:`~flask_tooldiscovery.tasks.engines`); :meth:`Tasks.run`
is what the engine calls, in whatever process and host: it reads the record, runs the call for the
caller through the dialect's pipeline (rate limits, call slots, signals, traces and metrics
apply), keeps the outcome in the record, and hands the ended task to its dialect's finisher (the
``finish_task`` its ``Dialect`` declares, e.g. Opal's callback delivery) when its call asked for one:
its attempts are made by the app's callback sender (:mod:`.callbacks`), never by the engine.
:meth:`Tasks.stop` is a graceful stop (:mod:`.shutdown`).

Nothing twice: a run that finds the record terminal does nothing. On Celery a run holds its task's
lease (renewed while it runs), so a delivery of a task whose run is alive (the broker's visibility
timeout passed while it ran) is dropped without touching the record. A run that finds an earlier
run had started (it died: its lease lapsed, and the outbox or the broker delivered the task again)
runs the tool again only when it is annotated ``idempotentHint: true``, and otherwise ends the task
``interrupted``: the caller can read that the call may or may not have taken effect, and it is
never run twice.

This module is the tasks service's face, the only way a dialect reaches tasks: :func:`tasks_of` (start,
read, answer and cancel a task), the record's types (:class:`Task`, :class:`TaskResult`,
:class:`TaskState`, :class:`TaskStore`, :data:`TERMINAL`), and the questions a running task asks
its caller (:meth:`Tasks.asking`, :meth:`Tasks.questions`, :meth:`Tasks.answer`, kept by :mod:`.task_input`).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import Any, cast

from flask import Flask

from ..calls.approvals import digest
from ..errors import Busy, CoreError, RetryLater, StoreFull
from ..observe.logs import log
from ..runtime.invoke import CANCELLED, Outcome
from ..serving.guard import issued_call_id
from ..serving.outside import call_as, charge
from ..serving.pipeline import Pipeline
from ..settings import Settings, SettingsError, key
from ..state.memory import MemoryStore
from ..tools.model import Identity, Tool, ToolContext
from ..tools.questions import Answer, Question
from ..tools.results import is_rich
from . import task_input, visibility
from .callback_queue import CallbackQueue
from .callbacks import CallbackSender, SenderOptions, backoff_for
from .cancel_watch import CancelWatcher
from .engines import CELERY_INSTALL, CeleryEngine, Engine, ThreadEngine
from .jobs import CallJob, FinishJob, Job, _JobVersionError, job_from_wire
from .outbox import Outbox
from .records import COMPACT, TERMINAL, Task, TaskResult, TaskState, TaskStore, store_for
from .sealing import Sealer, _Unsealable, sealer_for
from .shutdown import on_celery_process_shutdown, register, stop

#: What a dialect does with a task of its own once it ended (deliver its result somewhere), declared
#: on its ``Dialect`` (``finish_task``): called with the attempt's number, it answers ``None`` when
#: done, or the seconds to wait before another. It runs in the callback sender's threads; it POSTs
#: through ``tasks_of(app).callbacks.post`` (limits per host, circuits, the outcome on the record).
Finisher = Callable[[Pipeline, Task, int], "float | None"]
#: Request headers a task carries to where it runs (for ``ctx.request.headers``), sealed with the rest
#: of what it holds of its request, beside those :confval:`TOOLDISCOVERY_TASK_HEADERS` adds: none
#: that carries a credential. Any other header stays with the request.
CARRIED_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent", "traceparent", "tracestate",
                             "x-request-id"})
UNSEALED = ("The task could not be run: the worker could not open the request it carries (the web and task "
            "workers do not share the SECRET_KEY it was sealed with).")
INTERRUPTED = ("The call was interrupted: the worker running it stopped before it ended. It was not run "
               "again, so whether it took effect is unknown.")


def outcome_result(outcome: Outcome) -> TaskResult:
    """An outcome as a task keeps it (its value as plain JSON)."""
    # the v2 envelope the tool returned is kept as Opal's callback sends it
    if outcome.ok:  # rich: images, audio, files, links, shown as such when read back
        return TaskResult(status="success", value=json.loads(json.dumps(outcome.value, default=str)),
                          rich=is_rich(outcome.value), envelope=outcome.envelope)
    failure = outcome.failure
    return TaskResult(
        status="cancelled" if failure is not None and failure.cancelled else outcome.status,
        error=outcome.error_message, envelope=outcome.envelope,
        cancelled=failure is not None and failure.cancelled,
        crashed=failure is not None and not failure.expected,  # not a ToolError: a bug, a timeout
        additional_prompt_content=(failure.additional_prompt_content or None) if failure is not None else None,
        retry_after_ms=(failure.retry_after_ms or None) if failure is not None else None,
        parameter_errors=json.loads(json.dumps(outcome.parameter_errors, default=str)) or None)


def ended_state(outcome: Outcome) -> TaskState:
    """The state a task ends in with ``outcome``: cancelled by the outcome's own mark (whatever its
    message says), else completed or failed."""
    if outcome.ok:
        return "completed"
    return "cancelled" if outcome.failure is not None and outcome.failure.cancelled else "failed"


def _identity(data: Mapping[str, Any] | None) -> Identity | None:
    if data is None:
        return None
    return Identity(subject=data.get("subject"), scopes=tuple(data.get("scopes") or ()),
                    claims=dict(data.get("claims") or {}), method=str(data.get("method") or ""))


class Tasks:
    """One app's tasks: its store, its engine, and the runner the engine calls."""

    def __init__(self, app: Flask, settings: Settings, pipelines: Mapping[str, Pipeline],
                 finishers: Mapping[str, Finisher] | None = None,
                 task_headers: Mapping[str, Iterable[str]] | None = None) -> None:
        self.app = app
        self.settings = settings
        self.pipelines = pipelines
        #: Each dialect's finisher, by the dialect's name (its ``Dialect.finish_task``).
        self.finishers: Mapping[str, Finisher] = dict(finishers or {})
        self.store: TaskStore = store_for(settings.state_storage_uri)
        self.store.longest = max(self.store.longest, float(settings.task_ttl))
        #: Whether the records are shared by every worker and host (Redis), not this process's alone.
        self.shared = bool(settings.state_storage_uri)
        #: What seals a job's request for the broker (the Celery engine's; ``None`` with the thread engine).
        self.sealer: Sealer | None = None
        carried = CARRIED_HEADERS | {h.lower() for h in settings.task_headers}
        #: The headers a task carries, by dialect (its ``Dialect.task_headers`` beside the app's).
        self._carried = {name: carried | {h.lower() for h in (task_headers or {}).get(name, ())} for name in pipelines}
        self.engine = self._engine(app, settings)
        #: What seals a secret a task's record keeps (a callback's token) when the records are shared
        #: (Redis): the Celery engine's sealer, else one from SECRET_KEY when there is one.
        self.record_sealer: Sealer | None = self.sealer
        if self.record_sealer is None and app.config.get("SECRET_KEY") and importlib.util.find_spec("cryptography"):
            self.record_sealer = sealer_for(app.config, key("STATE_STORAGE_URI"))
        #: The Celery engine's outbox (accepted jobs kept beside their records until sent, and the
        #: jobs of running tasks, sent again when their lease lapses).
        self.outbox = Outbox(self.store.state, self.store, self.engine,
                             float(settings.task_outbox_grace)) \
            if isinstance(self.engine, CeleryEngine) and settings.state_storage_uri else None
        self._watcher = CancelWatcher(self.store, lease=float(settings.task_lease),
                                      renewer=None if self.outbox is None else self.outbox.renew)
        if self.outbox is not None:
            self.outbox.start()  # every process that runs tasks sends what others accepted but never sent
        #: Whether a task's run lives in this web worker (the thread engine): its record then holds a lease.
        self.leased = isinstance(self.engine, ThreadEngine)
        #: What sends the callbacks of ended tasks (their finishers' attempts): threads of its own,
        #: from a queue every process shares (Redis) or this app's own (in this process's memory).
        self.callbacks = CallbackSender(
            self.store, CallbackQueue(self.store.state if self.shared else MemoryStore()), self._finish, SenderOptions(
                workers=settings.task_callback_workers, host_limit=settings.task_callback_host_limit,
                connect_timeout=float(settings.task_callback_connect_timeout),
                circuit_failures=settings.task_callback_circuit_failures,
                circuit_open=float(settings.task_callback_circuit_open),
                host_backlog=settings.task_callback_host_backlog))
        if self.shared:
            self.callbacks.start()  # every process that runs tasks sends the callbacks others left
        register(self)

    def keep_secret(self, value: str) -> dict[str, str] | None:
        """``value`` (a credential the task needs later) as its record may keep it: as it is while the
        records stay in this process's memory, sealed when they are shared (Redis, where anyone who
        reads the store would read it); ``None`` when shared records have no key to seal it with
        (no ``SECRET_KEY``): then nothing may keep it."""
        if not self.shared:
            return {"clear": value}
        if self.record_sealer is None:
            return None
        return {"sealed": self.record_sealer.seal(value.encode())}

    def kept_secret(self, kept: Any) -> str | None:
        """The value :meth:`keep_secret` kept (``None`` when there is none, or no key opens it: logged)."""
        if isinstance(kept, str):  # a record the previous release wrote
            return kept
        if not isinstance(kept, dict):
            return None
        if "sealed" in kept:
            if self.record_sealer is None:
                log.warning("flask-tooldiscovery: a task's sealed secret cannot be opened: SECRET_KEY is unset")
                return None
            try:
                return self.record_sealer.open(str(kept["sealed"])).decode()
            except _Unsealable as exc:
                log.warning("flask-tooldiscovery: %s", exc)
                return None
        clear = kept.get("clear")
        return clear if isinstance(clear, str) else None

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
        self.sealer = sealer_for(app.config, f"{key('TASK_ENGINE')} = 'celery'")
        from celery.signals import worker_process_shutdown  # type: ignore[import-untyped]

        # a Celery pool process that stops gracefully stops its tasks' callbacks first
        worker_process_shutdown.connect(on_celery_process_shutdown, weak=False, dispatch_uid="flask-tooldiscovery")
        first = next(iter(self.pipelines.values()), None)
        visibility.check(celery_app, first.core.registry.registered if first is not None else (),
                         float(settings.default_timeout), float(settings.task_lease))
        return CeleryEngine(celery_app, self.run_wire, self.sealer)

    def start(self, pipe: Pipeline, tool: Tool, arguments: dict[str, Any], context: ToolContext, *,
              then: str | None = None, meta: Mapping[str, Any] | None = None, ttl: float | None = None) -> Task:
        """Keep a task record for this call and hand it to the engine; the record. The caller's
        rate limit is counted now, so that a refusal is answered at once
        (:class:`~flask_tooldiscovery.errors.RateLimited`), as one of the engine
        (:class:`~flask_tooldiscovery.errors.Busy`) is, the record then ended. ``ttl``: seconds to
        keep the record, when the caller asked for less than ``TOOLDISCOVERY_TASK_TTL`` (never more)."""
        charge(pipe, tool)
        task = self._record(pipe, tool, arguments, context, {**(meta or {}), "then": then}, self.leased, ttl,
                            keep=self.outbox is None)
        request, identity = context.request, context.identity
        job = CallJob(
            task=task.id, dialect=pipe.name, tool=tool.name, version=tool.version, arguments=arguments,
            call_id=context.call_id, trace_id=context.trace_id, user_id=context.user_id, then=then, charged=True,
            secrets=dict(context.secrets), authorization=dict(context.authorization), extra=dict(context.extra),
            # the headers the call arrived with that a task carries, for ctx.request where it runs
            headers={} if request is None else {k: v for k, v in request.headers.items()
                                                if k.lower() in self._carried.get(pipe.name, CARRIED_HEADERS)},
            remote_addr=None if request is None else request.remote_addr,
            identity=None if identity is None else {
                "subject": identity.subject, "scopes": list(identity.scopes), "claims": dict(identity.claims),
                "method": identity.method})
        if self.outbox is not None:  # the record and the job in one round trip; the broker hears of it soon
            self.outbox.keep(task, cast(CeleryEngine, self.engine).wire(job))
            return task
        try:  # as plain JSON even in this process: the run sees what it would see elsewhere
            self.engine.submit(CallJob(**json.loads(COMPACT.encode(asdict(job)))))
        except CoreError as exc:
            self._watcher.release(task.id)
            refused = TaskResult(status="refused", error=exc.message, http_status=exc.status)
            self.store.finish(task.id, "failed", refused)
            raise
        return task

    def _record(self, pipe: Pipeline, tool: Tool, arguments: Mapping[str, Any] | None, context: ToolContext,
                meta: dict[str, Any], leased: bool, ttl: float | None = None, keep: bool = True) -> Task:
        identity = context.identity
        task = Task(id=context.call_id, tool=tool.name, version=tool.version, dialect=pipe.name,
                    caller=identity.subject if identity is not None else context.user_id,
                    digest=digest(dict(arguments or {})),
                    ttl=min(float(self.settings.task_ttl), max(ttl, 1.0) if ttl is not None else float("inf")),
                    meta={**meta, "lease": True} if leased else meta)
        if keep:
            try:
                self.store.put(task)
            except StoreFull:  # in this process's memory: refused rather than forget a live record
                raise Busy("Too many tasks are kept in this worker; try again later.",
                           retry_after=self.settings.busy_retry_after) from None
        if leased:
            self._watcher.hold(task.id)
        return task

    def here(self, pipe: Pipeline, tool: Tool, arguments: Mapping[str, Any] | None, context: ToolContext,
             meta: Mapping[str, Any] | None = None) -> Task:
        """Keep a task record for a call that runs in this request's worker but may outlive its
        client's connection (a streamed call): leased while it runs here, cancellable from any
        worker; end it with :meth:`ended`."""
        task = self._record(pipe, tool, arguments, context, dict(meta or {}), True)
        self.watch(task.id, context)
        return task

    def ended(self, task_id: str, state: TaskState, result: TaskResult) -> None:
        """The call behind task ``task_id`` (made by :meth:`here`) ended in ``state``."""
        self._watcher.forget(task_id)
        self._watcher.release(task_id)
        self.store.finish(task_id, state, result)

    def read(self, task_id: str) -> Task | None:
        """Task ``task_id`` as a reader on any worker should see it: a leased task whose lease
        lapsed before it ended (its process died) is ``interrupted`` from now on. An id the server
        never issued (another record's key, anything a client made up) is never looked up: ``None``."""
        if not issued_call_id(task_id):
            return None
        if self.outbox is not None:
            self.outbox.start()
        task = self.store.get(task_id)
        if task is None or task.terminal or not task.meta.get("lease") or self.store.held(task_id):
            return task
        log.warning("flask-tooldiscovery: task %s of %s was running in a worker process that stopped; it ends "
                    "interrupted", task.id, task.tool)
        self.store.finish(task_id, "interrupted", TaskResult(status="interrupted", error=INTERRUPTED),
                          message=INTERRUPTED)
        return self.store.get(task_id)

    def of_caller(self, caller: str | None, limit: int = 100) -> list[Task]:
        """The caller's tasks still kept, newest first, each as :meth:`read` sees it."""
        return [self.read(t.id) or t if not t.terminal and t.meta.get("lease") else t
                for t in self.store.of_caller(caller, limit)]

    def run(self, job: Job) -> None:
        """Run one job (the engine calls this, in any worker process): a task's call, or the
        next attempt of what its dialect does once it ended."""
        with self.app.app_context():
            if self.outbox is not None:
                self.outbox.start()  # this process also sends what others accepted but never sent
            if self.shared:
                self.callbacks.start()
            if isinstance(job, FinishJob):  # a finisher's attempt sent to the engine by an earlier release
                self.callbacks.schedule(job.task, job.dialect, job.attempt, keep=True)
                return
            if self.outbox is not None:
                self._run(job)
                return
            try:
                self._run(job)
            finally:  # the thread engine: the lease the task's record was kept with
                self._watcher.release(job.task)

    def run_wire(self, wire: dict[str, Any]) -> None:
        """Run a job from its wire dict (what the Celery engine calls): a job this release cannot
        read is dropped, and one whose request cannot be opened ends its task failed; both logged."""
        try:
            job = job_from_wire(wire, self.sealer)
        except _JobVersionError as exc:  # queued by a newer release: refused, never run half-read
            log.error("flask-tooldiscovery: %s; the message is dropped", exc)
            return
        except _Unsealable as exc:
            log.error("flask-tooldiscovery: task %s cannot run: %s", wire.get("task"), exc)
            task = self.store.get(str(wire.get("task")))
            if task is not None and not task.terminal:
                self._end(task, "failed", TaskResult(status="failure", error=UNSEALED, crashed=True))
            return
        except (ValueError, TypeError) as exc:
            log.error("flask-tooldiscovery: a message that is no task's job was dropped (%s)", exc)
            return
        self.run(job)

    def _run(self, job: CallJob) -> None:
        task = self.store.get(job.task)
        if task is None:
            return  # expired
        if task.terminal:  # delivered again after it ended: nothing runs twice; its finisher may be due
            self._then(task, 1, keep=True)
            return
        if self.outbox is None:
            self._go(task, job)
        elif not self.outbox.hold(task.id, COMPACT.encode(cast(CeleryEngine, self.engine).wire(job)),
                                  self._watcher.lease):
            log.info("flask-tooldiscovery: task %s of %s was delivered again while its run is still alive (it "
                     "holds its lease); this delivery is dropped", task.id, task.tool)
        else:  # this run holds the lease, renewed while it runs; the outbox sends the job again if it lapses
            self._watcher.keep(task.id)
            try:
                self._go(task, job)
            finally:
                self._watcher.release(task.id)
                self.outbox.let_go(task.id)

    def _go(self, task: Task, job: CallJob) -> None:
        """Run the task (the run it holds): once, or again only when it may be."""
        pipe = self.pipelines.get(job.dialect)
        tool = None if pipe is None else pipe.core.registry.resolve().get(job.tool, job.version)
        runs = self.store.claim(task.id)
        if pipe is None or tool is None:
            self._end(task, "failed", TaskResult(status="failure", error="The tool is no longer offered."))
        elif self.store.cancelling(task.id):
            self._end(task, "cancelled", TaskResult(status="cancelled", error=CANCELLED, cancelled=True))
        elif runs > 1 and (tool.annotations or {}).get("idempotentHint") is not True:
            log.warning("flask-tooldiscovery: task %s of %s was delivered again after its run had started; "
                        "not idempotent, so it ends interrupted", task.id, tool.name)
            self._end(task, "interrupted", TaskResult(status="interrupted", error=INTERRUPTED))
        else:
            self._end(task, *self._call(pipe, tool, job))

    def _call(self, pipe: Pipeline, tool: Tool, job: CallJob) -> tuple[TaskState, TaskResult]:
        """Run the task's call; the state it ends in and its result."""
        task_id = job.task
        try:
            outcome = call_as(
                pipe, _identity(job.identity), tool, job.arguments, coerce=True,
                charged=job.charged, context_hook=lambda ctx: self.watch(task_id, ctx),
                headers=job.headers, remote_addr=job.remote_addr, call_id=job.call_id,
                trace_id=job.trace_id, user_id=job.user_id, secrets=dict(job.secrets),
                authorization=dict(job.authorization), extra=dict(job.extra),
                asker=task_input.asker(self.store, task_id, wait=float(self.settings.task_ttl)))  # asks: the record
        except CoreError as exc:  # refused when it came to run: a rate limit, no free call slot
            return "failed", TaskResult(status="refused", error=exc.message, http_status=exc.status,
                                        retry_after=exc.retry_after if isinstance(exc, RetryLater) else None)
        finally:
            self._watcher.forget(task_id)
        return ended_state(outcome), outcome_result(outcome)

    def watch(self, task_id: str, context: ToolContext) -> None:
        """Cancel ``context`` when anyone, on any worker, asks task ``task_id`` to stop."""
        self._watcher.add(task_id, context)

    @staticmethod
    def asking(wait: float, askable: bool, answers: Mapping[str, Answer]) -> dict[str, Any]:
        """What a task's ``meta`` holds (merge it into :meth:`start`'s) to ask its caller questions while it
        runs (``askable``), waiting ``wait`` seconds for an answer, with the ``answers`` given before it started."""
        return {task_input.ASK_WAIT: wait, task_input.ASKABLE: askable,
                task_input.ANSWERS: {k: a.to_json() for k, a in answers.items()}}

    @staticmethod
    def questions(task: Task) -> dict[str, Question]:
        """The task's questions still waiting for an answer, by key."""
        return task_input.open_questions(task)

    def answer(self, task_id: str, responses: Mapping[str, Any]) -> list[str]:
        """Take the caller's answers to task ``task_id``'s open questions (``responses`` by key); the keys
        taken. :class:`ValueError` when an answer does not fit its question (none is taken then)."""
        return task_input.deliver(self.store, task_id, responses)

    def cancel(self, task_id: str) -> bool:
        """Ask task ``task_id`` to stop, wherever it runs (a task not started yet never starts);
        True when it was not over yet."""
        if not issued_call_id(task_id) or not self.store.cancel(task_id):
            return False
        self._watcher.check()
        return True

    def _end(self, task: Task, state: TaskState, result: TaskResult) -> None:
        if self.store.finish(task.id, state, result):
            self._then(task, 1)

    def _then(self, task: Task, attempt: int, delay: float = 0.0, keep: bool = False) -> None:
        """Hand attempt ``attempt`` of the task's finisher (when it has one) to the callback sender,
        ``delay`` seconds from now (``keep``: unless one is waiting, or its delivery ended)."""
        if isinstance(task.meta.get("then"), str):
            self.callbacks.schedule(task.id, task.dialect, attempt, delay, keep=keep)

    def _finish(self, task: Task, attempt: int) -> float | None:
        """One attempt of a finisher (the callback sender calls it): ``None`` when done, else the
        wait before the next."""
        then, pipe = task.meta.get("then"), self.pipelines.get(task.dialect)
        fn = self.finishers.get(task.dialect) if isinstance(then, str) else None
        if fn is None or pipe is None:
            return None
        with self.app.app_context():
            return fn(pipe, task, attempt)

    def stop(self, timeout: float) -> None:
        """A graceful stop of this process's part, within ``timeout`` seconds (see :mod:`.shutdown`)."""
        stop(self, timeout)


#: Where ``init_app`` keeps an app's :class:`Tasks`.
EXTENSION_KEY = "tooldiscovery.tasks"


def tasks_of(app: Flask) -> Tasks:
    """The app's :class:`Tasks` (made by ``init_app``)."""
    tasks: Tasks = app.extensions[EXTENSION_KEY]
    return tasks


__all__ = ["EXTENSION_KEY", "INTERRUPTED", "TERMINAL", "Finisher", "Task", "TaskResult", "TaskState", "TaskStore",
           "Tasks", "backoff_for", "ended_state", "outcome_result", "tasks_of"]
