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
again while its run is alive is not taken for a dead one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..observe.logs import log
from ..tools.model import ToolContext
from .records import TaskStore

#: Seconds between two looks at the store while tasks run here.
INTERVAL = 0.5


class CancelWatcher:
    """The running tasks of this process and their contexts."""

    def __init__(self, store: TaskStore, interval: float = INTERVAL, lease: float = 30.0,
                 renewer: Callable[[list[str], float], None] | None = None) -> None:
        self.store = store
        self.interval = interval
        self.lease = lease
        #: What renews the leases (the task ids, seconds): the store's ``hold`` unless told otherwise.
        self.renewer = renewer or (lambda ids, seconds: store.hold(ids, seconds))
        self._running: dict[str, ToolContext] = {}
        self._held: set[str] = set()
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

    def hold(self, task_id: str) -> None:
        """Keep task ``task_id``'s lease while this process holds it (until :meth:`release`)."""
        self.store.hold((task_id,), self.lease)
        self.keep(task_id)

    def keep(self, task_id: str) -> None:
        """Renew task ``task_id``'s lease, taken already, while this process holds it (until :meth:`release`)."""
        with self._changed:
            self._held.add(task_id)
            self._start()

    def release(self, task_id: str) -> None:
        with self._changed:
            self._held.discard(task_id)

    def renew(self) -> None:
        """Renew the leases this process holds when a third of their time has passed."""
        now = time.monotonic()
        if now - self._renewed < self.lease / 3:
            return
        with self._changed:
            held = list(self._held)
        try:
            if held:
                self.renewer(held, self.lease)
            self._renewed = now
        except Exception:  # the store is unreachable for a moment: try again next time
            log.warning("flask-tooldiscovery: could not renew the leases of %d tasks", len(held), exc_info=True)

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
