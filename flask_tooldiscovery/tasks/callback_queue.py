"""The callbacks waiting for an attempt (:class:`CallbackQueue`), kept where the task records are:
a due list of the state store, in this process's memory or in Redis, where any process that runs
tasks takes the due ones, so that a callback the process that scheduled it did not send (it
stopped, it died) is sent by another.

One entry per task: the task id, its dialect and the number of the attempt due. Taking an entry
moves its due time :data:`LEASE` seconds on, in one step, so two processes never take it together;
the process that took it puts it back (the next attempt) or drops it (done). An entry whose
process died during its attempt is due again once that time has passed: a callback is then POSTed
again (at least once, never lost).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import NamedTuple

from ..state.store import StateStore
from .records import PREFIX

#: Seconds an entry taken for an attempt stays out of the others' reach.
LEASE = 120.0
#: The due list of the callbacks waiting (in Redis: a sorted set, the entries in ``<QUEUE>:values``).
QUEUE = f"{PREFIX}callbacks"


class Entry(NamedTuple):
    """A task's callback: attempt ``attempt`` of its dialect's finisher."""

    task_id: str
    dialect: str
    attempt: int


class CallbackQueue:
    """The callbacks waiting, as a due list of the state store ``state`` (the one the task records
    are kept in): in process memory for this process only, in Redis for every process that runs
    tasks. Written once against the :class:`~flask_tooldiscovery.state.store.StateStore` interface."""

    def __init__(self, state: StateStore) -> None:
        self.state = state

    def add(self, entry: Entry, due: float, keep: bool = False) -> None:
        """Keep ``entry`` due at ``due`` (epoch seconds), in place of the task's entry waiting
        (``keep``: unless one is waiting)."""
        self.state.schedule(QUEUE, entry.task_id, json.dumps(entry).encode(), due, only_new=keep)

    def take(self, now: float, limit: int) -> list[Entry]:
        """The entries due at ``now`` (at most ``limit``, the oldest first), out of the others' reach
        for :data:`LEASE` seconds."""
        return [Entry(*json.loads(raw)) for _, raw in self.state.take_due(QUEUE, now, now + LEASE, limit)]

    def done(self, task_id: str) -> None:
        """Drop the task's entry."""
        self.state.unschedule(QUEUE, task_id)

    def next_due(self, task_ids: Iterable[str] | None = None) -> float | None:
        """When the next entry (of ``task_ids``, when given) is due; ``None``: none waits."""
        return self.state.next_due(QUEUE, task_ids)


__all__ = ["LEASE", "QUEUE", "CallbackQueue", "Entry"]
