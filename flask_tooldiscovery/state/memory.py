"""The state store in process memory (:class:`MemoryStore`): right for one worker process only."""

from __future__ import annotations

import heapq
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress

from ..errors import StoreFull
from .store import Due, Inbox

#: Values a store in process memory holds at most (live ones: expired values are dropped first).
CAPACITY = 100_000
#: Messages a listener of this process holds before dropping the oldest.
BACKLOG = 1024


class _Queue:
    def __init__(self, size: int = 0) -> None:
        self.items: queue.Queue[bytes] = queue.Queue(size)

    def put(self, item: bytes) -> None:
        while True:
            try:
                self.items.put_nowait(item)
                return
            except queue.Full:  # a listener that falls behind loses the oldest first
                with suppress(queue.Empty):
                    self.items.get_nowait()

    def get(self, timeout: float) -> bytes | None:
        try:
            return self.items.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None


class MemoryStore:
    """A :class:`~.store.StateStore` in this process's memory, at most ``capacity`` live values
    (a full store refuses a new one with :class:`~..errors.StoreFull`). Nothing is kept for an inbox
    nobody opened: a post to it reaches nobody."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._values: dict[str, tuple[float, bytes]] = {}
        self._expiries: list[tuple[float, str]] = []  # (expiry, key) of the values, soonest first
        self._sets: dict[str, tuple[float, set[str]]] = {}
        self._indexes: dict[str, tuple[float, dict[str, float]]] = {}
        self._due: dict[str, dict[str, tuple[float, bytes]]] = {}  # due list -> member -> (due, value)
        self._inboxes: dict[str, _Queue] = {}
        self._channels: dict[str, set[_Queue]] = {}
        self._lock = threading.RLock()

    # values ---------------------------------------------------------------------------------------

    def _forget_expired(self, now: float) -> None:
        expiries = self._expiries
        while expiries and expiries[0][0] <= now:
            expiry, key = heapq.heappop(expiries)
            found = self._values.get(key)
            if found is not None and found[0] == expiry:
                del self._values[key]

    def _live(self, key: str, now: float) -> bytes | None:
        found = self._values.get(key)
        return found[1] if found is not None and found[0] > now else None

    def _keep(self, key: str, value: bytes, ttl: float, now: float) -> None:
        if key not in self._values and len(self._values) >= self.capacity:
            self._forget_expired(now)
            if len(self._values) >= self.capacity:
                raise StoreFull(f"{len(self._values)} values of this process are still live")
        expiry = now + max(ttl, 0.0)
        self._values[key] = (expiry, value)
        heapq.heappush(self._expiries, (expiry, key))

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._live(key, time.monotonic())

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        now = time.monotonic()
        with self._lock:
            return [self._live(k, now) for k in keys]

    def put(self, key: str, value: bytes, ttl: float, *, only_new: bool = False) -> bool:
        now = time.monotonic()
        with self._lock:
            self._forget_expired(now)
            if only_new and self._live(key, now) is not None:
                return False
            self._keep(key, value, ttl, now)
            return True

    def put_many(self, keys: Iterable[str], value: bytes, ttl: float) -> None:
        now = time.monotonic()
        with self._lock:
            for key in keys:
                self._keep(key, value, ttl, now)

    def take(self, key: str) -> bytes | None:
        with self._lock:
            value = self._live(key, time.monotonic())
            self._values.pop(key, None)
            return value

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)
            self._sets.pop(key, None)
            self._indexes.pop(key, None)

    def exists(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            return (self._live(key, now) is not None or self._live_set(key, now) is not None
                    or self._live_index(key, now) is not None)

    def count(self, key: str, ttl: float) -> int:
        now = time.monotonic()
        with self._lock:
            value = int(self._live(key, now) or b"0") + 1
            self._keep(key, str(value).encode(), ttl, now)
            return value

    def update(self, key: str, change: Callable[[bytes | None], tuple[bytes, float] | None]) -> bytes | None:
        now = time.monotonic()
        with self._lock:
            changed = change(self._live(key, now))
            if changed is None:
                return None
            self._keep(key, changed[0], changed[1], now)
            return changed[0]

    def expire(self, key: str, ttl: float) -> None:
        now = time.monotonic()
        with self._lock:
            value = self._live(key, now)
            if value is not None:
                self._keep(key, value, ttl, now)
            if (members := self._live_set(key, now)) is not None:
                self._sets[key] = (now + ttl, members)
            if (scores := self._live_index(key, now)) is not None:
                self._indexes[key] = (now + ttl, scores)

    # sets and indexes -----------------------------------------------------------------------------

    def _live_set(self, key: str, now: float) -> set[str] | None:
        found = self._sets.get(key)
        if found is None or found[0] <= now:
            self._sets.pop(key, None)
            return None
        return found[1]

    def _live_index(self, key: str, now: float) -> dict[str, float] | None:
        found = self._indexes.get(key)
        if found is None or found[0] <= now:
            self._indexes.pop(key, None)
            return None
        return found[1]

    def add_member(self, key: str, member: str, ttl: float) -> None:
        now = time.monotonic()
        with self._lock:
            members = self._live_set(key, now) or set()
            members.add(member)
            self._sets[key] = (now + ttl, members)
            for stale in [k for k, (until, _) in self._sets.items() if until <= now]:
                del self._sets[stale]

    def remove_member(self, key: str, member: str) -> None:
        with self._lock:
            members = self._live_set(key, time.monotonic())
            if members is not None:
                members.discard(member)

    def has_member(self, key: str, member: str) -> bool:
        with self._lock:
            members = self._live_set(key, time.monotonic())
            return members is not None and member in members

    def members(self, key: str) -> set[str]:
        with self._lock:
            return set(self._live_set(key, time.monotonic()) or ())

    def index(self, key: str, member: str, score: float, ttl: float, *, drop_below: float) -> None:
        now = time.monotonic()
        with self._lock:
            scores = self._live_index(key, now) or {}
            scores[member] = score
            self._indexes[key] = (now + ttl, {m: s for m, s in scores.items() if s >= drop_below})

    def newest(self, key: str, limit: int) -> list[str]:
        with self._lock:
            scores = self._live_index(key, time.monotonic()) or {}
            return sorted(scores, key=lambda m: (scores[m], m), reverse=True)[:limit]

    def put_indexed(self, key: str, value: bytes, ttl: float, index: str, member: str, score: float, *,
                    drop_below: float) -> None:
        now = time.monotonic()
        with self._lock:
            self._forget_expired(now)
            self._keep(key, value, ttl, now)
            until, scores = self._indexes.get(index) or (0.0, {})
            if until <= now:
                scores = {}
            scores[member] = score
            self._indexes[index] = (max(until, now + ttl), {m: s for m, s in scores.items() if s >= drop_below})

    # leases ---------------------------------------------------------------------------------------

    def lease(self, key: str, owner: str, ttl: float, *, then: Due | None = None) -> bool:
        now = time.monotonic()
        with self._lock:
            holder = self._live(key, now)
            if holder is not None and holder != owner.encode():
                return False
            self._keep(key, owner.encode(), ttl, now)
            if then is not None:
                self.schedule(*then)
            return True

    def renew(self, leases: Mapping[str, str], ttl: float) -> set[str]:
        now = time.monotonic()
        with self._lock:
            kept = {key for key, owner in leases.items() if self._live(key, now) == owner.encode()}
            for key in kept:
                self._keep(key, leases[key].encode(), ttl, now)
            return kept

    def release(self, key: str, owner: str) -> bool:
        with self._lock:
            if self._live(key, time.monotonic()) != owner.encode():
                return False
            del self._values[key]
            return True

    # due lists ------------------------------------------------------------------------------------

    def schedule(self, key: str, member: str, value: bytes, due: float, *, only_new: bool = False) -> None:
        with self._lock:
            listed = self._due.setdefault(key, {})
            if not (only_new and member in listed):
                listed[member] = (due, value)

    def next_due(self, key: str, members: Iterable[str] | None = None) -> float | None:
        with self._lock:
            listed = self._due.get(key) or {}
            if members is None:
                return min((due for due, _ in listed.values()), default=None)
            return min((listed[m][0] for m in members if m in listed), default=None)

    def take_due(self, key: str, now: float, until: float, limit: int) -> list[tuple[str, bytes]]:
        with self._lock:
            listed = self._due.get(key) or {}
            taken = sorted((d, m) for m, (d, _) in listed.items() if d <= now)[:max(limit, 0)]
            out = []
            for _, member in taken:
                value = listed[member][1]
                listed[member] = (until, value)
                out.append((member, value))
            return out

    def take_member(self, key: str, member: str, until: float) -> bool:
        with self._lock:
            listed = self._due.get(key) or {}
            if member not in listed:
                return False
            listed[member] = (until, listed[member][1])
            return True

    def unschedule(self, key: str, member: str) -> None:
        with self._lock:
            listed = self._due.get(key)
            if listed is not None:
                listed.pop(member, None)
                if not listed:
                    del self._due[key]

    # inboxes and channels -------------------------------------------------------------------------

    @contextmanager
    def inbox(self, key: str) -> Iterator[Inbox]:
        box = _Queue()
        with self._lock:
            self._inboxes[key] = box
        try:
            yield box
        finally:
            with self._lock:
                if self._inboxes.get(key) is box:
                    del self._inboxes[key]

    def post(self, key: str, value: bytes, ttl: float) -> bool:
        with self._lock:
            box = self._inboxes.get(key)
        if box is not None:
            box.put(value)
        return box is not None

    def publish(self, channel: str, data: bytes) -> None:
        with self._lock:
            listeners = list(self._channels.get(channel, ()))
        for listener in listeners:
            listener.put(data)

    @contextmanager
    def listen(self, channel: str) -> Iterator[Inbox]:
        box = _Queue(BACKLOG)
        with self._lock:
            self._channels.setdefault(channel, set()).add(box)
        try:
            yield box
        finally:
            with self._lock:
                self._channels.get(channel, set()).discard(box)

    def __len__(self) -> int:
        """How many values are live."""
        with self._lock:
            self._forget_expired(time.monotonic())
            return len(self._values)


__all__ = ["BACKLOG", "CAPACITY", "MemoryStore"]
