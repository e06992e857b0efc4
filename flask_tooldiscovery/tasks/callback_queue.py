"""The callbacks waiting for an attempt, kept where the task records are: in this process
(:class:`LocalCallbackQueue`) or in Redis (:class:`RedisCallbackQueue`), where any process that
runs tasks takes the due ones, so that a callback the process that scheduled it did not send (it
stopped, it died) is sent by another.

One entry per task: the task id, its dialect and the number of the attempt due. Taking an entry
moves its due time :data:`LEASE` seconds on, in one step, so two processes never take it together;
the process that took it puts it back (the next attempt) or drops it (done). An entry whose
process died during its attempt is due again once that time has passed: a callback is then POSTed
again (at least once, never lost).
"""

from __future__ import annotations

import heapq
import json
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from .records import REDIS_PREFIX

#: Seconds an entry taken for an attempt stays out of the others' reach.
LEASE = 120.0
QUEUE = f"{REDIS_PREFIX}callbacks"
ENTRIES = f"{REDIS_PREFIX}callbacks:entries"


class Entry(NamedTuple):
    """A task's callback: attempt ``attempt`` of its dialect's finisher."""

    task_id: str
    dialect: str
    attempt: int


class CallbackQueue(Protocol):
    def add(self, entry: Entry, due: float, keep: bool = False) -> None:
        """Keep ``entry`` due at ``due`` (epoch seconds), in place of the task's entry waiting
        (``keep``: unless one is waiting)."""

    def take(self, now: float, limit: int) -> list[Entry]:
        """The entries due at ``now`` (at most ``limit``, the oldest first), out of the others' reach
        for :data:`LEASE` seconds."""

    def done(self, task_id: str) -> None:
        """Drop the task's entry."""

    def next_due(self, task_ids: Iterable[str] | None = None) -> float | None:
        """When the next entry (of ``task_ids``, when given) is due; ``None``: none waits."""


class LocalCallbackQueue:
    """In this process only (the task records are too)."""

    def __init__(self) -> None:
        self._due: dict[str, tuple[float, Entry]] = {}
        self._heap: list[tuple[float, str]] = []  # (due, task id); stale pairs are skipped
        self._lock = threading.Lock()

    def add(self, entry: Entry, due: float, keep: bool = False) -> None:
        with self._lock:
            if keep and entry.task_id in self._due:
                return
            self._due[entry.task_id] = (due, entry)
            heapq.heappush(self._heap, (due, entry.task_id))

    def take(self, now: float, limit: int) -> list[Entry]:
        taken: list[Entry] = []
        with self._lock:
            while self._heap and len(taken) < limit and self._heap[0][0] <= now:
                due, task_id = heapq.heappop(self._heap)
                kept = self._due.get(task_id)
                if kept is None or kept[0] != due:
                    continue
                self._due[task_id] = (now + LEASE, kept[1])
                heapq.heappush(self._heap, (now + LEASE, task_id))
                taken.append(kept[1])
        return taken

    def done(self, task_id: str) -> None:
        with self._lock:
            self._due.pop(task_id, None)

    def next_due(self, task_ids: Iterable[str] | None = None) -> float | None:
        with self._lock:
            if task_ids is None:
                return min((due for due, _ in self._due.values()), default=None)
            return min((self._due[t][0] for t in task_ids if t in self._due), default=None)


#: Take the due entries (at most ARGV[3]): their due time moves to ARGV[2]; [entry, entry...].
_TAKE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local out = {}
for _, id in ipairs(ids) do
  local entry = redis.call('HGET', KEYS[2], id)
  if entry then
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    table.insert(out, entry)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
"""


class RedisCallbackQueue:
    """In Redis, beside the task records: every process that runs tasks takes from it."""

    def __init__(self, redis: Any) -> None:
        self._redis = redis
        self._take = redis.register_script(_TAKE)

    def add(self, entry: Entry, due: float, keep: bool = False) -> None:
        pipe = self._redis.pipeline(transaction=True)
        if keep:
            pipe.hsetnx(ENTRIES, entry.task_id, json.dumps(entry))
            pipe.zadd(QUEUE, {entry.task_id: due}, nx=True)
        else:
            pipe.hset(ENTRIES, entry.task_id, json.dumps(entry))
            pipe.zadd(QUEUE, {entry.task_id: due})
        pipe.execute()

    def take(self, now: float, limit: int) -> list[Entry]:
        taken = self._take(keys=[QUEUE, ENTRIES], args=[repr(now), repr(now + LEASE), limit])
        return [Entry(*json.loads(raw)) for raw in taken]

    def done(self, task_id: str) -> None:
        pipe = self._redis.pipeline(transaction=True)
        pipe.zrem(QUEUE, task_id)
        pipe.hdel(ENTRIES, task_id)
        pipe.execute()

    def next_due(self, task_ids: Iterable[str] | None = None) -> float | None:
        if task_ids is None:
            first = self._redis.zrange(QUEUE, 0, 0, withscores=True)
            return float(first[0][1]) if first else None
        ids = list(task_ids)
        scores = self._redis.zmscore(QUEUE, ids) if ids else []
        return min((float(s) for s in scores if s is not None), default=None)


__all__ = ["ENTRIES", "LEASE", "QUEUE", "CallbackQueue", "Entry", "LocalCallbackQueue", "RedisCallbackQueue"]
