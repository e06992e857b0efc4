"""Cancellation that reaches a running task wherever it runs.

A stop request is a mark in the task store (:meth:`~flask_tooldiscovery.tasks.records.TaskStore.cancel`),
made by whichever worker received it. Each process that runs tasks watches the marks of the ones it
runs, with one thread for all of them (none while nothing runs), and cancels the call's
:class:`~flask_tooldiscovery.tools.model.ToolContext` when its mark appears: an async tool is
cancelled at its next ``await``, a sync tool sees ``ctx.cancelled``.

The same thread keeps the lease of the tasks this process holds (:meth:`CancelWatcher.hold`: the
thread engine's, a streamed call's; :meth:`CancelWatcher.keep`: a Celery worker's run, which took
its lease itself): renewed every third of ``lease`` seconds in the store, so a reader on any worker
can tell a task whose process died (its lease lapsed) from one still running, and a task delivered
again while its run is alive is not taken for a dead one. Each lease is its run's own (an owner
token): a run that stalled past its lease, which lapsed and was taken by another, renews it no more.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping

from ..observe.logs import log
from ..tools.model import ToolContext
from .records import TaskStore

#: Seconds between two looks at the store while tasks run here.
INTERVAL = 0.5
#: What renews the leases this process holds: (task id: the owner this watcher took it as, ``None``
#: when the run took it itself), seconds -> the task ids whose lease, taken here, another holds now.
Renewer = Callable[[Mapping[str, "str | None"], float], set[str]]


class CancelWatcher:
    """The running tasks of this process and their contexts."""

    def __init__(self, store: TaskStore, interval: float = INTERVAL, lease: float = 30.0,
                 renewer: Renewer | None = None) -> None:
        self.store = store
        self.interval = interval
        self.lease = lease
        #: What renews the leases: the store, by each lease's owner, unless told otherwise.
        self.renewer: Renewer = renewer or self._renew_own
        self._running: dict[str, ToolContext] = {}
        #: The leases this process holds: task id -> the owner it took it as (``None``: its run's own).
        self._held: dict[str, str | None] = {}
        self._renewed = 0.0
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():  # none yet, or left behind by a fork
            self._thread = threading.Thread(target=self._watch, name="tooldiscovery-cancel-watch", daemon=True)
            self._thread.start()
        self._changed.notify()

    def add(self, task_id: str, context: ToolContext) -> None:
        with self._changed:
            self._running[task_id] = context
            self._start()
        self.check_one(task_id, context)

    def _renew_own(self, leases: Mapping[str, str | None], seconds: float) -> set[str]:
        owned = {task_id: owner for task_id, owner in leases.items() if owner is not None}
        return set(owned) - self.store.renew_leases(owned, seconds)

    def hold(self, task_id: str) -> None:
        """Take task ``task_id``'s lease, as an owner of its own, and keep it while this process
        holds it (until :meth:`release`)."""
        owner = os.urandom(12).hex()
        if not self.store.take_lease(task_id, owner, self.lease):
            log.warning("flask-tooldiscovery: the lease of task %s is held by another run; it is not renewed here",
                        task_id)
            return
        with self._changed:
            self._held[task_id] = owner
            self._start()

    def keep(self, task_id: str) -> None:
        """Renew task ``task_id``'s lease, taken already by its run (which renews it as its owner),
        while this process holds it (until :meth:`release`)."""
        with self._changed:
            self._held[task_id] = None
            self._start()

    def release(self, task_id: str) -> None:
        with self._changed:
            self._held.pop(task_id, None)

    def renew(self) -> None:
        """Renew the leases this process holds when a third of their time has passed."""
        now = time.monotonic()
        if now - self._renewed < self.lease / 3:
            return
        with self._changed:
            held = dict(self._held)
        try:
            lost = self.renewer(held, self.lease) if held else set()
            self._renewed = now
        except Exception:  # the store is unreachable for a moment: try again next time
            log.warning("flask-tooldiscovery: could not renew the leases of %d tasks", len(held), exc_info=True)
            return
        with self._changed:  # not this run's any more: never renewed again (unless taken anew meanwhile)
            for task_id in lost:
                if task_id in self._held and self._held[task_id] == held.get(task_id):
                    del self._held[task_id]
        for task_id in sorted(lost):
            log.warning("flask-tooldiscovery: the run of task %s lost its lease (it stalled longer than the lease, "
                        "which lapsed); it renews it no more", task_id)

    def forget(self, task_id: str) -> None:
        with self._changed:
            self._running.pop(task_id, None)

    def check_one(self, task_id: str, context: ToolContext) -> None:
        try:
            if self.store.cancelling(task_id):
                context.cancel()
        except Exception:  # the store is unreachable for a moment: look again next time
            log.warning("flask-tooldiscovery: could not read the stop mark of task %s", task_id, exc_info=True)

    def check(self) -> None:
        """Look at every running task's mark now."""
        with self._changed:
            running = list(self._running.items())
        for task_id, context in running:
            self.check_one(task_id, context)

    def _watch(self) -> None:
        while True:
            with self._changed:
                while not self._running and not self._held:
                    self._changed.wait()
            self.check()
            self.renew()
            with self._changed:
                self._changed.wait(min(self.interval, self.lease / 3))


__all__ = ["INTERVAL", "CancelWatcher"]
