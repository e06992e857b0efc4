"""Work done once per key, its answer kept: the first :meth:`Once.begin` of a key claims it, and
until the claim is released every later one, from any thread (and, in the state store, any worker
and host), is told the key is taken, with the answer kept once the first finished. Opal's
rollbacks run this way, once per ``operation_id``.

Through Redis (``TOOLDISCOVERY_STATE_STORAGE_URI``) one ``SET key NX EX ttl`` decides; in process
(unset) a table with expiry under a lock. Unreachable storage raises :class:`OnceError`: the caller
refuses rather than run the work a second time.
"""

from __future__ import annotations

import json
import math
import threading
import time
import weakref
from typing import Any, Protocol

from ..errors import ToolDiscoveryError
from .store import redis_client

REDIS_PREFIX = "flask-tooldiscovery:once:"
RUNNING = {"state": "running"}
#: Keys the in-process table holds at most (expired ones are dropped first).
LOCAL_CAPACITY = 100_000


class OnceError(ToolDiscoveryError, RuntimeError):
    """Whether the key is taken cannot be decided: the storage is unreachable, or full."""


class Once(Protocol):
    def begin(self, key: str, ttl: float) -> dict[str, Any] | None:
        """``None`` when this caller claimed ``key`` (for ``ttl`` seconds); else the record of whoever
        did: :data:`RUNNING` while it works, its answer once :meth:`finish` kept one."""

    def finish(self, key: str, answer: dict[str, Any], ttl: float) -> None:
        """Keep ``answer`` as ``key``'s record for ``ttl`` seconds."""

    def release(self, key: str) -> None:
        """Forget the claim on ``key`` (the work failed: the next caller may try again)."""


class LocalOnce:
    """Claims and answers of this process."""

    def __init__(self, capacity: int = LOCAL_CAPACITY) -> None:
        self.capacity = capacity
        self._records: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def begin(self, key: str, ttl: float) -> dict[str, Any] | None:
        now = time.monotonic()
        with self._lock:
            found = self._records.get(key)
            if found is not None and found[0] > now:
                return found[1]
            if len(self._records) >= self.capacity:
                for old in [k for k, (expiry, _) in self._records.items() if expiry <= now]:
                    del self._records[old]
                if len(self._records) >= self.capacity:
                    raise OnceError(f"{len(self._records)} records of this process are still live")
            self._records[key] = (now + ttl, RUNNING)
            return None

    def finish(self, key: str, answer: dict[str, Any], ttl: float) -> None:
        with self._lock:
            self._records[key] = (time.monotonic() + ttl, answer)

    def release(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)


class RedisOnce:
    """Claims and answers every worker and host sharing one Redis sees."""

    def __init__(self, uri: str) -> None:
        self.client = redis_client(uri)

    def begin(self, key: str, ttl: float) -> dict[str, Any] | None:
        name = REDIS_PREFIX + key
        try:
            if self.client.set(name, json.dumps(RUNNING), nx=True, ex=max(math.ceil(ttl), 1)):
                return None
            found = self.client.get(name)
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise OnceError(f"the state storage is unreachable: {type(exc).__name__}") from None
        return json.loads(found) if found is not None else self.begin(key, ttl)  # expired in between

    def finish(self, key: str, answer: dict[str, Any], ttl: float) -> None:
        try:
            self.client.set(REDIS_PREFIX + key, json.dumps(answer), ex=max(math.ceil(ttl), 1))
        except Exception as exc:
            raise OnceError(f"the state storage is unreachable: {type(exc).__name__}") from None

    def release(self, key: str) -> None:
        try:
            self.client.delete(REDIS_PREFIX + key)
        except Exception as exc:
            raise OnceError(f"the state storage is unreachable: {type(exc).__name__}") from None


LOCAL = LocalOnce()
_SHARED: dict[str, RedisOnce] = {}
_OWNED: weakref.WeakKeyDictionary[Any, LocalOnce] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None, owner: Any = None) -> Once:
    """The records of a ``TOOLDISCOVERY_STATE_STORAGE_URI``, one per URI and process; unset, those
    of this process: ``owner``'s own (an app's core: two apps never see each other's), else :data:`LOCAL`."""
    with _SHARED_LOCK:
        if uri:
            return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisOnce(uri))
        if owner is None:
            return LOCAL
        return _OWNED.get(owner) or _OWNED.setdefault(owner, LocalOnce())


__all__ = ["LOCAL", "RUNNING", "LocalOnce", "Once", "OnceError", "RedisOnce", "for_uri"]
