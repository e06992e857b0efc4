"""The Celery engine's outbox: an accepted call is answered once its job and its record are kept.

Publishing a task to Celery's broker costs a round trip and Celery's own work (kombu, the
message); neither needs to hold the caller. :meth:`Outbox.keep` puts the task's job in a due list
of the state store (:class:`~flask_tooldiscovery.state.store.StateStore`), due ``grace`` seconds
from now, then its record in the task store, and the request is answered. This process's
publisher thread then sends the job to the broker and takes it out of the outbox.

Nothing lost: a job whose publish failed (the broker down for a moment) or never happened (the web
worker killed between its answer and the publish) stays in the outbox; once due, the publisher of
any process that runs tasks (a web worker, a Celery worker) takes it and sends it. Taking a job
moves its due time ``grace`` seconds on, atomically (the store's ``take_due``), so two publishers
never take it together; a job is sent twice only when a publisher stalls for ``grace`` seconds
between sending it and taking it out (and a redelivered task is never run twice: see
:mod:`.runner`). A job kept whose record could not be (the store failed in between) runs into no
record, and is dropped.

The outbox also keeps each running task's way back: a run takes its task's lease as its own and
keeps its job in the outbox, due when the lease would lapse, in one atomic step (:meth:`Outbox.hold`:
the store's ``lease``; a delivery that finds the lease held changes nothing); this process renews
the lease while the run runs, each renewal moving the job's due time on, and only while the run
still owns it: a run that stalled longer than its lease, whose task was sent again and taken by
another run, neither renews nor lets go of the other's lease. A broker that delivers the task again
while its run is alive (its visibility timeout passed) is answered by the runner dropping that
delivery, which the broker then forgets; should the run's process die, its job comes due once its
lease lapsed and any publisher sends it again, whatever the broker did with its own message.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from ..observe.logs import log
from ..state.store import Due, StateStore
from .engines import CeleryEngine
from .jobs import READABLE
from .records import COMPACT, Task, TaskStore, lease_key

#: The outbox's due list in the state store (in Redis: a sorted set, the jobs in ``<OUTBOX>:values``).
OUTBOX = "flask-tooldiscovery:task:outbox"
#: Jobs a publisher takes from the outbox at once.
BATCH = 50
#: Jobs waiting in this process for its publisher, at most; past that (the broker slow or down) a
#: job waits in Redis only, and is sent once due.
WAITING = 1000
#: What a running task's job is kept under in the outbox (beside an accepted one's: the task id).
RUNNING = ":run"
#: Seconds :meth:`Outbox.stop` waits for the publisher to end (sending what it was given first).
STOP_WAIT = 5.0
#: What :meth:`Outbox.stop` gives the publisher to end it.
_STOP: dict[str, Any] = {}


class Outbox:
    """Jobs kept in the state store ``state`` until this or another process has sent them to
    ``engine``; their records in ``records``."""

    def __init__(self, state: StateStore, records: TaskStore, engine: CeleryEngine, grace: float) -> None:
        self._state = state
        self._records = records
        self._engine = engine
        self.grace = grace
        self._queue: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._unreachable = False  # said once per outage, not at every look
        self._next_sweep = 0.0  # when the publisher next looks for due jobs (time.monotonic())
        self._stopped = False  # stop() was called: the publisher ends and no other starts
        #: The jobs of the tasks whose runs this process holds (as JSON text) and each run's lease
        #: owner, by task id.
        self._running: dict[str, tuple[str, str]] = {}
        #: The tasks whose runs here lost their lease to another run (until they end).
        self._lost: set[str] = set()

    def keep(self, task: Task, job: dict[str, Any]) -> None:
        """Keep ``task``'s job (its wire dict, sealed) in the outbox, then its record; the publisher
        sends it soon."""
        self._state.schedule(OUTBOX, task.id, COMPACT.encode(job).encode(), time.time() + self.grace)
        self._records.put(task)
        self.start()
        if self._queue.qsize() < WAITING:
            self._queue.put(job)

    def hold(self, task_id: str, job: str, lease: float) -> bool:
        """Take task ``task_id``'s lease for ``lease`` seconds unless another run holds it and, in
        the same atomic step, keep its ``job`` (JSON text) in the outbox, due when the lease would
        lapse; False when another run holds it: the task's run is alive elsewhere (nothing is
        changed then)."""
        owner = os.urandom(12).hex()  # this run's own: a later run of the same task is another owner
        due = Due(OUTBOX, task_id + RUNNING, job.encode(), time.time() + lease)
        if not self._state.lease(lease_key(task_id), owner, lease, then=due):
            return False
        with self._lock:
            self._running[task_id] = (job, owner)
        return True

    def renew(self, leases: Mapping[str, str | None], lease: float) -> set[str]:
        """Renew for ``lease`` seconds the leases (task id: owner, ``None`` for a run of the
        outbox's) this process's runs still hold; the jobs of the outbox's runs are kept in the
        outbox (again, if a publisher took them meanwhile), due when the leases would lapse. A run
        whose lease lapsed and was taken by another run (it stalled longer than its lease) renews
        nothing and keeps nothing: the task is the other's. The task ids of ``leases`` with an owner
        (calls run here without a run of the outbox's: a streamed call) whose lease another holds now."""
        with self._lock:
            owned = {lease_key(i): (i, *self._running[i]) for i in leases if i in self._running}
            others = {lease_key(i): owner for i, owner in leases.items() if i not in self._running and owner}
        kept = self._state.renew({**{key: owner for key, (_, _, owner) in owned.items()}, **others}, lease)
        due = time.time() + lease
        with self._lock:  # a run that ended meanwhile (let_go) is not kept again
            for key, (task_id, job, owner) in owned.items():
                if self._running.get(task_id) != (job, owner):
                    continue
                if key in kept:
                    self._state.schedule(OUTBOX, task_id + RUNNING, job.encode(), due)
                else:
                    del self._running[task_id]
                    self._lost.add(task_id)
                    log.warning("flask-tooldiscovery: the run of task %s lost its lease (it stalled longer than "
                                "the lease, which lapsed); it renews it no more", task_id)
        return {i for i, owner in leases.items() if owner and lease_key(i) in others and lease_key(i) not in kept}

    def let_go(self, task_id: str) -> None:
        """The run of task ``task_id`` in this process ended: its lease and its kept job go (unless
        it lost its lease to another run: then they are the other's)."""
        with self._lock:
            running = self._running.pop(task_id, None)
            self._lost.discard(task_id)
        if running is None:
            return
        if self._state.release(lease_key(task_id), running[1]) or not self._state.exists(lease_key(task_id)):
            self._state.unschedule(OUTBOX, task_id + RUNNING)

    def start(self) -> None:
        """Start this process's publisher (once per process: a forked worker starts its own): it
        also sends the due jobs other processes left."""
        with self._lock:
            if self._stopped:
                return
            if self._thread is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._queue = queue.SimpleQueue()
                self._thread = threading.Thread(target=_publish_while_kept, args=(weakref.ref(self),),
                                                name="tooldiscovery-task-outbox", daemon=True)
                self._thread.start()

    def publish_next(self) -> None:
        """Send the due jobs every ``grace / 3`` seconds (however busy this process is with its own),
        then the next job this process kept (waiting a while for one)."""
        every = max(self.grace / 3, 0.2)
        if time.monotonic() >= self._next_sweep:
            self._next_sweep = time.monotonic() + every
            self.send_due()
        try:
            job = self._queue.get(timeout=every)
        except queue.Empty:
            return
        if job is _STOP:  # stop(): the jobs kept before it were sent
            return
        try:
            if self._state.take_member(OUTBOX, job["task"], time.time() + self.grace):
                self._send(job)
        except Exception:  # Redis unreachable for a moment: the job stays due, any publisher sends it
            log.warning("flask-tooldiscovery: task %s stays in the outbox for now", job["task"], exc_info=True)

    def send_due(self) -> int:
        """Send the jobs whose due time has passed (left by a publish that failed or never happened);
        how many were sent."""
        sent = 0
        try:
            now = time.time()
            taken = self._state.take_due(OUTBOX, now, now + self.grace, BATCH)
        except Exception as exc:
            if not self._unreachable:
                log.warning("flask-tooldiscovery: the task outbox cannot be read now (%s); trying again every %.0f s",
                            type(exc).__name__, max(self.grace / 3, 0.2))
            self._unreachable = True
            return 0
        if self._unreachable:
            log.info("flask-tooldiscovery: the task outbox is readable again")
            self._unreachable = False
        for member, raw in taken:
            if member.endswith(RUNNING):
                log.warning("flask-tooldiscovery: the run of task %s stopped renewing its lease (its process died); "
                            "sending the task again", member.removesuffix(RUNNING))
            else:
                log.warning("flask-tooldiscovery: task %s was accepted but not yet sent to the task engine; sending "
                            "it now", member)
            job = json.loads(raw)
            if not isinstance(job, dict) or job.get("v", 0) not in READABLE:  # left for a release that reads it
                log.error("flask-tooldiscovery: task %s in the outbox is of a job version this release cannot read",
                          member)
                continue
            sent += self._send(job, member)
        return sent

    def _send(self, job: dict[str, Any], member: str | None = None) -> int:
        try:
            self._engine.send(job)
        except Exception:  # the broker is down: the job stays due and is sent again later
            log.warning("flask-tooldiscovery: could not send task %s to the task engine; it stays in the outbox",
                        job["task"], exc_info=True)
            return 0
        self._state.unschedule(OUTBOX, member or job["task"])
        return 1

    def stop(self) -> None:
        """Stop this process's publisher (a graceful stop, once the tasks it runs ended): it ends
        after its current look, and none starts again. The jobs still kept stay due in the state
        store, where any other process's publisher sends them once their grace period passed."""
        with self._lock:
            self._stopped = True
            thread, self._thread = self._thread, None
        self._queue.put(_STOP)  # wakes it: what it was given to send before goes first
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_WAIT)


def _publish_while_kept(ref: weakref.ref[Outbox]) -> None:
    """The publisher thread: runs while its outbox is still referenced (its app alive) and not stopped."""
    while (outbox := ref()) is not None and not outbox._stopped:
        outbox.publish_next()
        del outbox


__all__ = ["BATCH", "OUTBOX", "RUNNING", "STOP_WAIT", "WAITING", "Outbox"]
