"""Task records: every call that outlives its request, readable from any worker and host.

A :class:`Task` is what is known of one such call: the tool and version, the dialect it came
through, the caller, a digest of its canonical arguments, its state, timestamps, and once it ended
its result or error. It is kept for a TTL by :class:`TaskStore` in the state store
(:mod:`flask_tooldiscovery.state`): in process memory (one worker process only) or in Redis
(``TOOLDISCOVERY_STATE_STORAGE_URI``: every worker and host), one class written against the store's
interface for both. A record only moves forward: once it is terminal (completed, failed,
cancelled, interrupted) nothing changes it again, so two workers finishing the same task cannot
both win. :meth:`TaskStore.claim` counts the runs that started, so a redelivered task knows it
had started before (and a tool that is not idempotent is then never run a second time).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from ..state.memory import MemoryStore
from ..state.redis_store import shared
from ..state.store import StateStore

TaskState = Literal["working", "input_required", "completed", "failed", "cancelled", "interrupted"]
#: The states a task never leaves.
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled", "interrupted"})
#: What every key of the tasks' state begins with (in Redis, as earlier releases named them).
PREFIX = "flask-tooldiscovery:task:"
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
    """Where the lease of task ``task_id`` is kept in the state store (present while a run holds it)."""
    return f"{PREFIX}{task_id}:lease"


@dataclass(frozen=True)
class Task:
    """One call that outlives its request (see the module's text). ``result`` is its
    :class:`TaskResult` once the task ended (``None`` before); ``meta`` is the dialect's own (a
    callback URL, a protocol's request id)."""

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


class TaskStore:
    """Where task records live (see the module's text): in the state store ``state``, the record as
    JSON under ``<prefix><id>`` for its TTL, its run count, its stop request and its lease beside it,
    and each caller's task ids in an index by creation time. Written once against the
    :class:`~flask_tooldiscovery.state.store.StateStore` interface, so that a store in process
    memory and one in Redis behave alike; in Redis, these are the keys and the JSON earlier
    releases wrote."""

    def __init__(self, state: StateStore) -> None:
        #: The state store the records are kept in.
        self.state = state
        #: The longest TTL a record may have (an app's ``TOOLDISCOVERY_TASK_TTL``, the longest of the
        #: apps sharing this store): a caller's index forgets the tasks created before that.
        self.longest = 0.0

    def put(self, task: Task) -> None:
        """Keep ``task`` (a new one) for its TTL."""
        ttl = _ttl(task)
        self.state.put_indexed(PREFIX + task.id, task.to_json().encode(), ttl, _caller_index(task.caller),
                               task.id, task.created, drop_below=time.time() - max(ttl, self.longest))

    def get(self, task_id: str) -> Task | None:
        """The task, or ``None`` (never created, or expired)."""
        raw = self.state.get(PREFIX + task_id)
        return Task.from_json(raw) if raw else None

    def claim(self, task_id: str) -> int:
        """Count one more run of the task starting; the count (1 for the first run)."""
        return self.state.count(f"{PREFIX}{task_id}:runs", RUNS_KEPT)

    def finish(self, task_id: str, state: TaskState, result: TaskResult | None = None,
               message: str | None = None) -> bool:
        """Move the task to ``state`` unless it is terminal already; True when this call moved it."""
        def end(task: Task) -> Task:
            return replace(task, state=state, result=result, message=message, updated=time.time())

        return self.update(task_id, end) is not None

    def update(self, task_id: str, change: Callable[[Task], Task | None], ended: bool = False) -> Task | None:
        """Replace a task that is not terminal with ``change(task)``, atomically (``change`` may be
        called again if another writer came first); the new record, or ``None`` (no such task,
        terminal, or ``change`` returned ``None``: nothing to change). ``ended``: a terminal task
        too (what became of its callback, in ``meta``: ``change`` never moves its state)."""
        changed: list[Task] = []

        def write(raw: bytes | None) -> tuple[bytes, float] | None:
            changed.clear()
            task = Task.from_json(raw) if raw else None
            new = None if task is None or (task.terminal and not ended) else change(task)
            if new is None:
                return None
            changed.append(new)
            return new.to_json().encode(), _ttl(new)

        return changed[0] if self.state.update(PREFIX + task_id, write) is not None else None

    def cancel(self, task_id: str) -> bool:
        """Ask the task to stop (its run sees :meth:`cancelling`); True when it was not over yet."""
        task = self.get(task_id)
        if task is None or task.terminal:
            return False
        self.state.put(f"{PREFIX}{task_id}:cancel", b"1", _ttl(task))
        return True

    def cancelling(self, task_id: str) -> bool:
        """True once someone asked the task to stop."""
        return self.state.exists(f"{PREFIX}{task_id}:cancel")

    def of_caller(self, caller: str | None, limit: int = 100) -> list[Task]:
        """The caller's tasks still kept, newest first."""
        ids = self.state.newest(_caller_index(caller), limit)
        return [Task.from_json(raw) for raw in self.state.get_many([PREFIX + i for i in ids]) if raw]

    def take_lease(self, task_id: str, owner: str, seconds: float) -> bool:
        """Take the task's lease for ``owner`` (a run in this process: the thread engine's, a
        streamed call's) for ``seconds`` unless another owner holds it; True when ``owner`` holds it."""
        return self.state.lease(lease_key(task_id), owner, seconds)

    def renew_leases(self, owners: Mapping[str, str], seconds: float) -> set[str]:
        """Hold ``seconds`` more the leases of ``owners`` (task id: owner) where each owner still
        holds its task's (a lease that lapsed, or another took, is left alone); the task ids renewed."""
        renewed = self.state.renew({lease_key(i): owner for i, owner in owners.items()}, seconds)
        return {i for i in owners if lease_key(i) in renewed}

    def held(self, task_id: str) -> bool:
        """True while the task's lease has not lapsed."""
        return self.state.exists(lease_key(task_id))


#: Seconds a task's run count is kept.
RUNS_KEPT = 7 * 24 * 3600.0


def _ttl(task: Task) -> float:
    return max(task.ttl, 1.0)


def _caller_index(caller: str | None) -> str:
    return f"{PREFIX}caller:{caller or ''}"


_LOCAL = TaskStore(MemoryStore())
_SHARED: dict[str, TaskStore] = {}
_SHARED_LOCK = threading.Lock()


def store_for(uri: str | None) -> TaskStore:
    """The task store of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: this process's memory), one
    per URI and process."""
    if not uri:
        return _LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, TaskStore(shared(uri)))


__all__ = ["COMPACT", "PREFIX", "TERMINAL", "ResultStatus", "Task", "TaskResult", "TaskState", "TaskStore",
           "lease_key", "store_for"]
