"""Keys that can be spent once: the first :meth:`~Ledger.spend` of a key wins, every later one,
from any thread (and, in the state store, any worker and host), is told it was spent already.

A key is remembered for the ``ttl`` it was spent with, which should outlast whatever it stands for
(a sealed approval: its remaining lifetime). Through Redis (``TOOLDISCOVERY_STATE_STORAGE_URI``)
one ``SET key 1 NX EX ttl`` decides atomically; unreachable, nothing can be decided and
:class:`SpendError` says so (the caller refuses: spending fails closed). In process (unset: one
ledger per process) a bounded table with expiry decides, under a lock; full of live keys, it
refuses to spend more rather than forget one.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from typing import Protocol

from ..errors import ToolDiscoveryError
from .store import redis_client

REDIS_PREFIX = "flask-tooldiscovery:spent:"
#: Keys the in-process ledger holds at most (live ones: expired keys are dropped first).
LOCAL_CAPACITY = 100_000


class SpendError(ToolDiscoveryError, RuntimeError):
    """Whether the key was spent cannot be decided: the storage is unreachable, or full."""


class Ledger(Protocol):
    def spend(self, key: str, ttl: float) -> bool:
        """True the first time ``key`` is spent (remembered ``ttl`` seconds), False ever after;
        :class:`SpendError` when that cannot be decided."""


class LocalLedger:
    """Keys spent in this process, each kept until its expiry, at most ``capacity`` of them."""

    def __init__(self, capacity: int = LOCAL_CAPACITY) -> None:
        self.capacity = capacity
        self._expiry: dict[str, float] = {}
        self._queue: list[tuple[float, str]] = []  # (expiry, key), soonest first
        self._lock = threading.Lock()

    def spend(self, key: str, ttl: float) -> bool:
        now = time.monotonic()
        with self._lock:
            self._forget_expired(now)
            if key in self._expiry:
                return False
            if len(self._expiry) >= self.capacity:
                raise SpendError(f"{len(self._expiry)} keys spent in this process are still live")
            expiry = now + max(ttl, 0.0)
            self._expiry[key] = expiry
            heapq.heappush(self._queue, (expiry, key))
            return True

    def _forget_expired(self, now: float) -> None:
        queue = self._queue
        while queue and queue[0][0] <= now:
            expiry, key = heapq.heappop(queue)
            if self._expiry.get(key) == expiry:
                del self._expiry[key]

    def __len__(self) -> int:
        with self._lock:
            self._forget_expired(time.monotonic())
            return len(self._expiry)


class RedisLedger:
    """Keys spent by any worker and host sharing one Redis."""

    def __init__(self, uri: str) -> None:
        self.client = redis_client(uri)

    def spend(self, key: str, ttl: float) -> bool:
        try:
            created = self.client.set(REDIS_PREFIX + key, b"1", nx=True, ex=max(math.ceil(ttl), 1))
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise SpendError(f"the state storage is unreachable: {type(exc).__name__}") from None
        return bool(created)


LOCAL = LocalLedger()
_SHARED: dict[str, RedisLedger] = {}
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None) -> Ledger:
    """The ledger of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one per URI and
    process."""
    if not uri:
        return LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisLedger(uri))


__all__ = ["LOCAL", "LOCAL_CAPACITY", "Ledger", "LocalLedger", "RedisLedger", "SpendError", "for_uri"]
