"""What runs a task: an engine that is not ours to write.

A task is handed to its engine as a :data:`~.jobs.Job` (a :class:`~.jobs.CallJob`: the task id,
the dialect, the tool and version, the arguments, the caller, the call and trace ids, the dialect's
extras; or a :class:`~.jobs.FinishJob`), and the engine calls the app's runner with it (an engine
that crosses processes carries its wire dict, :meth:`~.jobs.CallJob.to_wire`):

* :class:`ThreadEngine` (``TOOLDISCOVERY_TASK_ENGINE = "thread"``, the default): a bounded pool of
  threads in each web worker process. No thread per call: when every thread is busy and the
  backlog is full, a new task is refused at once with :class:`~flask_tooldiscovery.errors.Busy`.
  Not durable: work accepted by a worker process that dies is lost (its record, leased, is read
  as ``interrupted`` once the lease lapses). :meth:`ThreadEngine.stop` (a graceful stop: the
  ``worker_exit`` hook of ``deploy/gunicorn.conf.py``) refuses new work and waits a while for the
  accepted work to end.
* :class:`CeleryEngine` (``"celery"``): the Celery app kept at ``app.extensions["celery"]`` (as
  Flask's docs build it), with late acknowledgement and rejection on a lost worker, so accepted
  work survives the web worker and the Celery worker: a task whose worker died is delivered
  again, and the runner decides from the task record whether it may run again.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ..errors import Busy
from ..observe.logs import log
from .jobs import Job
from .sealing import Sealer

Runner = Callable[[Job], None]
#: What the Celery engine calls with a job's wire dict (the runner reads it: :func:`~.jobs.job_from_wire`).
WireRunner = Callable[[dict[str, Any]], None]
#: The name the runner is registered under on the Celery app.
CELERY_TASK = "flask_tooldiscovery.run_task"
CELERY_INSTALL = "pip install 'flask-tooldiscovery[celery]'"


class Engine(Protocol):
    def submit(self, job: Job, delay: float = 0.0) -> None:
        """Run ``job`` some time soon (``delay`` seconds from now at the earliest), elsewhere;
        :class:`~flask_tooldiscovery.errors.Busy` when it cannot be taken now."""

    def accepted(self) -> list[str]:
        """The task ids of the jobs this process accepted that have not ended (running or waiting)."""

    def stop(self, deadline: float) -> list[str]:
        """Take no more jobs in this process; wait until ``deadline`` (``time.monotonic()``) for
        the jobs this process accepted to end: the task ids of those still running or waiting."""


class ThreadEngine:
    """``workers`` threads of this process run tasks; ``backlog`` more may wait for one."""

    def __init__(self, runner: Runner, *, workers: int, backlog: int, retry_after: float = 1.0) -> None:
        self._runner = runner
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tooldiscovery-task")
        self._room = threading.BoundedSemaphore(workers + backlog)
        self.retry_after = retry_after
        #: Jobs waiting for their time (a heap of (due, sequence, job)), kept by one timer thread.
        self._later: list[tuple[float, int, Job]] = []
        self._due = threading.Condition()
        self._timer: threading.Thread | None = None
        self._sequence = 0
        #: The task ids of the jobs accepted and not yet ended (running or waiting for a thread).
        self._jobs: dict[int, str] = {}
        self._numbers = itertools.count()
        self._ended = threading.Condition()
        self._stopping = False

    def submit(self, job: Job, delay: float = 0.0) -> None:
        if self._stopping:
            raise Busy("The server is shutting down; try again later.", retry_after=self.retry_after)
        if delay > 0:
            self._schedule(job, delay)
            return
        if not self._room.acquire(blocking=False):
            raise Busy("Too many tasks are running or waiting; try again later.", retry_after=self.retry_after)
        number = next(self._numbers)
        with self._ended:
            self._jobs[number] = job.task
        try:
            self._pool.submit(self._run, job, number)
        except RuntimeError:
            with self._ended:
                self._jobs.pop(number, None)  # the pool is shutting down (the process is exiting)
            self._room.release()
            raise Busy("The server is shutting down; try again later.", retry_after=self.retry_after) from None

    def _schedule(self, job: Job, delay: float) -> None:
        with self._due:
            self._sequence += 1
            heapq.heappush(self._later, (time.monotonic() + delay, self._sequence, job))
            if self._timer is None:
                self._timer = threading.Thread(target=self._wait, name="tooldiscovery-task-timer", daemon=True)
                self._timer.start()
            self._due.notify()

    def _wait(self) -> None:
        """The timer thread: hands each waiting job to the pool when its time comes (a full pool:
        a second later)."""
        while True:
            with self._due:
                while not self._later or self._later[0][0] > time.monotonic():
                    self._due.wait(None if not self._later else max(self._later[0][0] - time.monotonic(), 0.0))
                _, _, job = heapq.heappop(self._later)
            try:
                self.submit(job)
            except Busy:
                if self._stopping:
                    return
                self._schedule(job, 1.0)

    def _run(self, job: Job, number: int) -> None:
        try:
            self._runner(job)
        except Exception:  # a bug below the runner: logged, never a dead pool thread
            log.exception("flask-tooldiscovery: task %s failed in its runner", job.task)
        finally:
            self._room.release()
            with self._ended:
                self._jobs.pop(number, None)
                self._ended.notify_all()

    def accepted(self) -> list[str]:
        with self._ended:
            running = set(self._jobs.values())
        with self._due:
            return sorted(running | {job.task for _, _, job in self._later})

    def stop(self, deadline: float) -> list[str]:
        self._stopping = True
        with self._ended:
            while self._jobs and time.monotonic() < deadline:
                self._ended.wait(min(0.1, max(deadline - time.monotonic(), 0.0)))
        return self.accepted()


class CeleryEngine:
    """Tasks sent to the Celery app ``celery`` (its broker and workers are the user's), each job as
    its wire dict, what it holds of its request sealed with ``sealer``."""

    def __init__(self, celery: Any, runner: WireRunner, sealer: Sealer) -> None:
        def run_task(wire: dict[str, Any]) -> None:
            runner(wire)

        self.sealer = sealer
        # This app's Celery app alone (shared=False): a shared task is added to every Celery app of
        # the process as it is finalized, so with two apps each one's runs could go to the other's
        # runner (the first one registered wins), and Celery would keep every app alive for good.
        self._task = celery.task(name=CELERY_TASK, acks_late=True, reject_on_worker_lost=True,
                                 ignore_result=True, shared=False)(run_task)

    def accepted(self) -> list[str]:
        return []  # the jobs are the broker's and the Celery workers'

    def stop(self, deadline: float) -> list[str]:
        return []

    def wire(self, job: Job) -> dict[str, Any]:
        """``job`` as the broker carries it."""
        return job.to_wire(self.sealer)

    def submit(self, job: Job, delay: float = 0.0) -> None:
        self.send(self.wire(job), delay)

    def send(self, wire: dict[str, Any], delay: float = 0.0) -> None:
        """Send a job's wire dict (:meth:`wire`) to the broker."""
        # argsrepr/kwargsrepr: what Celery logs and shows (events, Flower) instead of the job itself
        # (sealed, but long); it also spares a deep repr per message.
        shown = f"[{wire.get('kind') or 'call'} of task {wire['task']}]"
        self._task.apply_async(args=[wire], task_id=str(wire.get("job_id") or wire["task"]), countdown=delay or None,
                               argsrepr=shown, kwargsrepr="{}")


__all__ = ["CELERY_INSTALL", "CELERY_TASK", "CeleryEngine", "Engine", "Job", "Runner", "ThreadEngine", "WireRunner"]
