"""Which resource URIs a client subscribed to, under a key the dialect makes (who, on which stream).

Kept where every worker finds them: in this process (:data:`LOCAL`, the default) or in Redis
(``TOOLDISCOVERY_STATE_STORAGE_URI``: one set per key, ``SADD``/``SREM``/``SISMEMBER``), each key
expiring ``ttl`` seconds after it was last written or touched, so a client that went away leaves
nothing behind.
"""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from typing import Any, Protocol

from .store import redis_client

REDIS_PREFIX = "flask-tooldiscovery:subscriptions:"


class SubscriptionStore(Protocol):
    def add(self, key: str, uri: str, ttl: float) -> None:
        """Subscribe ``key`` to ``uri`` (raises when the storage is unreachable)."""

    def remove(self, key: str, uri: str) -> None:
        """Unsubscribe ``key`` from ``uri`` (nothing when it was not subscribed)."""

    def has(self, key: str, uri: str) -> bool:
        """True when ``key`` is subscribed to ``uri`` (False when the storage is unreachable)."""

    def touch(self, key: str, ttl: float) -> None:
        """Keep ``key``'s subscriptions ``ttl`` more seconds."""


class LocalSubscriptions:
    """Subscriptions in this process."""

    def __init__(self) -> None:
        self._sets: dict[str, tuple[set[str], float]] = {}
        self._lock = threading.Lock()

    def _live(self, key: str) -> set[str] | None:
        found = self._sets.get(key)
        if found is None or found[1] < time.monotonic():
            self._sets.pop(key, None)
            return None
        return found[0]

    def add(self, key: str, uri: str, ttl: float) -> None:
        with self._lock:
            uris = self._live(key) or set()
            uris.add(uri)
            self._sets[key] = (uris, time.monotonic() + ttl)
            for stale in [k for k, (_, until) in self._sets.items() if until < time.monotonic()]:
                del self._sets[stale]

    def remove(self, key: str, uri: str) -> None:
        with self._lock:
            uris = self._live(key)
            if uris is not None:
                uris.discard(uri)

    def has(self, key: str, uri: str) -> bool:
        with self._lock:
            uris = self._live(key)
            return uris is not None and uri in uris

    def touch(self, key: str, ttl: float) -> None:
        with self._lock:
            uris = self._live(key)
            if uris is not None:
                self._sets[key] = (uris, time.monotonic() + ttl)


class RedisSubscriptions:
    """Subscriptions every worker and host sharing one Redis sees."""

    def __init__(self, uri: str) -> None:
        self.client: Any = redis_client(uri)

    def add(self, key: str, uri: str, ttl: float) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.sadd(REDIS_PREFIX + key, uri)
            pipe.expire(REDIS_PREFIX + key, max(int(ttl), 1))
            pipe.execute()

    def remove(self, key: str, uri: str) -> None:
        self.client.srem(REDIS_PREFIX + key, uri)

    def has(self, key: str, uri: str) -> bool:
        try:
            return bool(self.client.sismember(REDIS_PREFIX + key, uri))
        except Exception:  # unreachable: a notification fewer, the stream goes on
            return False

    def touch(self, key: str, ttl: float) -> None:
        with suppress(Exception):  # unreachable: the next touch tries again
            self.client.expire(REDIS_PREFIX + key, max(int(ttl), 1))


LOCAL = LocalSubscriptions()
_SHARED: dict[str, RedisSubscriptions] = {}
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None) -> SubscriptionStore:
    """The store of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one per URI and process."""
    if not uri:
        return LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisSubscriptions(uri))


__all__ = ["LOCAL", "LocalSubscriptions", "RedisSubscriptions", "SubscriptionStore", "for_uri"]
