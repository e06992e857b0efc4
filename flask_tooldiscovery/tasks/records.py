"""Task records: every call that outlives its request, readable from any worker and host.

A :class:`Task` is what is known of one such call: the tool and version, the dialect it came
through, the caller, a digest of its canonical arguments, its state, timestamps, and once it ended
its result or error. It is kept for a TTL in the state store: in process (:class:`LocalTaskStore`,
one worker process only) or in Redis (:class:`RedisTaskStore`, ``TOOLDISCOVERY_STATE_STORAGE_URI``:
every worker and host). A record only moves forward: once it is terminal (completed, failed,
cancelled, interrupted) nothing changes it again, so two workers finishing the same task cannot
both win. :meth:`TaskStore.claim` counts the runs that started, so a redelivered task knows it
had started before (and a tool that is not idempotent is then never run a second time).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Protocol

from ..state.store import redis_client

TaskState = Literal["working", "input_required", "completed", "failed", "cancelled", "interrupted"]
#: The states a task never leaves.
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled", "interrupted"})
REDIS_PREFIX = "flask-tooldiscovery:task:"
#: How an ended call came out: as the tool ran it (success, invalid arguments, failure), refused on
#: its way (a rate limit, no free slot), cancelled by its caller, or interrupted with its worker.
ResultStatus = Literal["success", "invalid", "failure", "refused", "cancelled", "interrupted"]


@dataclass(frozen=True)
class TaskResult:
    """What an ended task's call came to, as its record keeps it (and every dialect reads it).

    ``status`` says how it ended; ``cancelled`` is a field of its own (set by whoever ended it on a
    stop request), never read from a message. The rest is what some dialect shows: the tool's
    ``value`` (``rich``: images, files, links among it) or ``envelope`` (an Opal v2 envelope),
    ``error`` and what goes with it, the HTTP answer a streamed explorer call gave (``http_status``
    and ``body``) or the ``CallToolResult`` a streamed MCP call answered (``call_result``).
    """

    status: ResultStatus
    value: Any = None
    error: str | None = None
    cancelled: bool = False
    #: Not a tool's own error: a bug, a timeout, a run that stopped (MCP tells these apart).
    crashed: bool = False
    rich: bool = False
    envelope: dict[str, Any] | None = None
    additional_prompt_content: str | None = None
    retry_after_ms: int | None = None
    parameter_errors: dict[str, Any] | None = None
    #: A refusal's HTTP status and the seconds after which a retry may succeed.
    http_status: int | None = None
    retry_after: float | None = None
    body: Any = None
    call_result: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The result as plain JSON, the fields left at their default left out (as the records of
        earlier releases held it)."""
        out: dict[str, Any] = {"status": self.status}
        for name in _RESULT_FIELDS:
            value = getattr(self, name)
            if (value is not None and value is not False) or (name == "value" and self.status == "success"):
                out[name] = value
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> TaskResult:
        """A result from :meth:`to_wire`'s JSON (or an earlier release's record); keys it does
        not know are left out, a cancelled one is known by its status too."""
        known = {k: v for k, v in data.items() if k in _RESULT_NAMES}
        status = str(known.pop("status", "failure"))
        known["cancelled"] = bool(known.get("cancelled")) or status == "cancelled"
        return cls(status=status, **known)  # type: ignore[arg-type]


def lease_key(task_id: str) -> str:
    """Where the lease of task ``task_id`` is kept in Redis (present while a run holds it)."""
    return f"{REDIS_PREFIX}{task_id}:lease"


@dataclass(frozen=True)
class Task:
    """One call that outlives its request (see the module's text). ``result`` is the outcome as
    JSON (``{"status", "value"|"error"...}``) once the task ended; ``meta`` is the dialect's own
    (a callback URL, a protocol's request id)."""

    id: str
    tool: str
    version: str
    dialect: str
    caller: str | None
    digest: str
    state: TaskState = "working"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    ttl: float = 3600.0
    message: str | None = None
    result: TaskResult | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    def to_json(self) -> str:
        # the fields as they are (no deep copy: dumping reads them only)
        out = {name: getattr(self, name) for name in _FIELDS}
        if self.result is not None:
            out["result"] = self.result.to_wire()
        return COMPACT.encode(out)

    @classmethod
    def from_json(cls, text: str | bytes) -> Task:
        data = json.loads(text)
        if isinstance(data.get("result"), dict):
            data["result"] = TaskResult.from_wire(data["result"])
        return cls(**{k: v for k, v in data.items() if k in _FIELD_NAMES})


_FIELDS = tuple(f.name for f in fields(Task))
_FIELD_NAMES = frozenset(_FIELDS)
_RESULT_FIELDS = tuple(f.name for f in fields(TaskResult) if f.name != "status")
_RESULT_NAMES = frozenset(_RESULT_FIELDS) | {"status"}
#: Compact JSON, anything else as its text (one encoder: ``json.dumps`` with options builds one per call).
COMPACT = json.JSONEncoder(separators=(",", ":"), default=str)


class TaskStore(Protocol):
    """Where task records live (see the module's text)."""

    def put(self, task: Task) -> None:
        """Keep ``task`` (a new one) for its TTL."""

    def get(self, task_id: str) -> Task | None:
        """The task, or ``None`` (never created, or expired)."""

    def claim(self, task_id: str) -> int:
        """Count one more run of the task starting; the count (1 for the first run)."""

    def finish(self, task_id: str, state: TaskState, result: TaskResult | None = None,
               message: str | None = None) -> bool:
        """Move the task to ``state`` unless it is terminal already; True when this call moved it."""

    def update(self, task_id: str, change: Callable[[Task], Task | None], ended: bool = False) -> Task | None:
        """Replace a task that is not terminal with ``change(task)``, atomically (``change`` may be
        called again if another writer came first); the new record, or ``None`` (no such task,
        terminal, or ``change`` returned ``None``: nothing to change). ``ended``: a terminal task
        too (what became of its callback, in ``meta``: ``change`` never moves its state)."""

    def cancel(self, task_id: str) -> bool:
        """Ask the task to stop (its run sees :meth:`cancelling`); True when it was not over yet."""

    def cancelling(self, task_id: str) -> bool:
        """True once someone asked the task to stop."""

    def of_caller(self, caller: str | None, limit: int = 100) -> list[Task]:
        """The caller's tasks still kept, newest first."""

    def hold(self, task_ids: Iterable[str], seconds: float) -> None:
        """Say the tasks' runs are alive for ``seconds`` more (their lease)."""

    def held(self, task_id: str) -> bool:
        """True while the task's lease has not lapsed."""


class LocalTaskStore:
    """Task records in this process's memory (one worker process only), at most ``limit``."""

    def __init__(self, limit: int = 10_000) -> None:
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._runs: dict[str, int] = {}
        self._cancel: set[str] = set()
        self._leases: dict[str, float] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def _expire(self, now: float) -> None:
        while self._tasks:
            oldest = next(iter(self._tasks.values()))
            if oldest.updated + oldest.ttl > now and len(self._tasks) <= self.limit:
                return
            self._tasks.popitem(last=False)
            self._runs.pop(oldest.id, None)
            self._cancel.discard(oldest.id)
            self._leases.pop(oldest.id, None)

    def put(self, task: Task) -> None:
        with self._lock:
            self._tasks[task.id] = task
            self._tasks.move_to_end(task.id)
            self._expire(time.time())

    def get(self, task_id: str) -> Task | None:
        with self._lock:
            task = self._tasks.get(task_id)
            return task if task is not None and task.updated + task.ttl > time.time() else None

    def claim(self, task_id: str) -> int:
        with self._lock:
            self._runs[task_id] = self._runs.get(task_id, 0) + 1
            return self._runs[task_id]

    def finish(self, task_id: str, state: TaskState, result: TaskResult | None = None,
               message: str | None = None) -> bool:
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None or task.terminal:
                return False
            self._tasks[task_id] = replace(task, state=state, result=result, message=message, updated=time.time())
            self._tasks.move_to_end(task_id)
            return True

    def update(self, task_id: str, change: Callable[[Task], Task | None], ended: bool = False) -> Task | None:
        with self._lock:
            task = self._tasks.get(task_id)
            changed = None if task is None or (task.terminal and not ended) else change(task)
            if changed is not None:
                self._tasks[task_id] = changed
                self._tasks.move_to_end(task_id)
            return changed

    def cancel(self, task_id: str) -> bool:
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None or task.terminal:
                return False
            self._cancel.add(task_id)
            return True

    def cancelling(self, task_id: str) -> bool:
        with self._lock:
            return task_id in self._cancel

    def of_caller(self, caller: str | None, limit: int = 100) -> list[Task]:
        now = time.time()
        with self._lock:
            found = [t for t in reversed(self._tasks.values()) if t.caller == caller and t.updated + t.ttl > now]
        return found[:limit]

    def hold(self, task_ids: Iterable[str], seconds: float) -> None:
        until = time.time() + seconds
        with self._lock:
            self._leases.update((i, until) for i in task_ids)

    def held(self, task_id: str) -> bool:
        with self._lock:
            return self._leases.get(task_id, 0.0) > time.time()


#: Keep a new record (KEYS[1]: the record, KEYS[2]: its caller's index; ARGV: the record, its TTL in
#: seconds, its creation time, the oldest creation time the index keeps): one round trip.
_PUT = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
"""
#: Move a task to a terminal state unless it is terminal already (KEYS[1]: the record;
#: ARGV: the new record, its TTL in seconds). 1 when moved.
_FINISH = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local state = cjson.decode(current)['state']
if state == 'completed' or state == 'failed' or state == 'cancelled' or state == 'interrupted' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
"""


class RedisTaskStore:
    """Task records in Redis, readable from every worker and host: the record as JSON under
    ``<prefix><id>`` with its TTL, the run count and the stop request beside it, and each caller's
    task ids in a sorted set by time."""

    def __init__(self, uri: str) -> None:
        self._redis: Any = redis_client(uri)
        #: The Redis client.
        self.redis = self._redis
        self._finish = self._redis.register_script(_FINISH)
        self._put = self._redis.register_script(_PUT)

    def _ttl(self, task: Task) -> int:
        return max(int(task.ttl), 1)

    def put(self, task: Task) -> None:
        ttl = self._ttl(task)
        self._put(keys=[REDIS_PREFIX + task.id, f"{REDIS_PREFIX}caller:{task.caller or ''}"],
                  args=[task.to_json(), ttl, repr(task.created), task.id, repr(time.time() - ttl)])

    def get(self, task_id: str) -> Task | None:
        raw = self._redis.get(REDIS_PREFIX + task_id)
        return Task.from_json(raw) if raw else None

    def claim(self, task_id: str) -> int:
        key = f"{REDIS_PREFIX}{task_id}:runs"
        pipe = self._redis.pipeline()
        pipe.incr(key)
        pipe.expire(key, 7 * 24 * 3600)
        count, _ = pipe.execute()
        return int(count)

    def finish(self, task_id: str, state: TaskState, result: TaskResult | None = None,
               message: str | None = None) -> bool:
        task = self.get(task_id)
        if task is None or task.terminal:
            return False
        ended = replace(task, state=state, result=result, message=message, updated=time.time())
        return bool(self._finish(keys=[REDIS_PREFIX + task_id], args=[ended.to_json(), self._ttl(ended)]))

    def update(self, task_id: str, change: Callable[[Task], Task | None], ended: bool = False) -> Task | None:
        import redis

        key = REDIS_PREFIX + task_id
        with self._redis.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)  # the write below fails if anyone changed the record meanwhile
                    raw = pipe.get(key)
                    task = Task.from_json(raw) if raw else None
                    changed = None if task is None or (task.terminal and not ended) else change(task)
                    if changed is None:
                        return None
                    pipe.multi()
                    pipe.set(key, changed.to_json(), ex=self._ttl(changed))
                    pipe.execute()
                    return changed
                except redis.WatchError:
                    continue

    def cancel(self, task_id: str) -> bool:
        task = self.get(task_id)
        if task is None or task.terminal:
            return False
        self._redis.set(f"{REDIS_PREFIX}{task_id}:cancel", b"1", ex=self._ttl(task))
        return True

    def cancelling(self, task_id: str) -> bool:
        return bool(self._redis.exists(f"{REDIS_PREFIX}{task_id}:cancel"))

    def of_caller(self, caller: str | None, limit: int = 100) -> list[Task]:
        ids = self._redis.zrevrange(f"{REDIS_PREFIX}caller:{caller or ''}", 0, limit - 1)
        raws = self._redis.mget([REDIS_PREFIX + i.decode() for i in ids]) if ids else []
        return [Task.from_json(raw) for raw in raws if raw]

    def hold(self, task_ids: Iterable[str], seconds: float) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for task_id in task_ids:
            pipe.set(lease_key(task_id), b"1", px=max(int(seconds * 1000), 1))
        pipe.execute()

    def held(self, task_id: str) -> bool:
        return bool(self._redis.exists(lease_key(task_id)))


_LOCAL = LocalTaskStore()
_SHARED: dict[str, RedisTaskStore] = {}
_SHARED_LOCK = threading.Lock()


def store_for(uri: str | None) -> TaskStore:
    """The task store of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: this process's), one per
    URI and process."""
    if not uri:
        return _LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisTaskStore(uri))


__all__ = ["COMPACT", "REDIS_PREFIX", "TERMINAL", "LocalTaskStore", "RedisTaskStore", "ResultStatus",
           "Task", "TaskResult", "TaskState", "TaskStore", "lease_key", "store_for"]
