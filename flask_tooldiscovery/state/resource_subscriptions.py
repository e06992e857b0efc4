"""Which resource URIs a client subscribed to, under a key the dialect makes (who, on which stream).

Kept where every worker finds them, in the state store (:mod:`.store`): in this process
(:data:`LOCAL`, the default) or in Redis (``TOOLDISCOVERY_STATE_STORAGE_URI``), one set per key,
each expiring ``ttl`` seconds after it was last written or touched, so a client that went away
leaves nothing behind.
"""

from __future__ import annotations

import functools
from contextlib import suppress

from .memory import MemoryStore
from .redis_store import shared
from .store import StateStore

REDIS_PREFIX = "flask-tooldiscovery:subscriptions:"


class Subscriptions:
    """Subscriptions kept in ``store``."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def add(self, key: str, uri: str, ttl: float) -> None:
        """Subscribe ``key`` to ``uri`` (raises when the storage is unreachable)."""
        self.store.add_member(REDIS_PREFIX + key, uri, max(int(ttl), 1))

    def remove(self, key: str, uri: str) -> None:
        """Unsubscribe ``key`` from ``uri`` (nothing when it was not subscribed)."""
        self.store.remove_member(REDIS_PREFIX + key, uri)

    def has(self, key: str, uri: str) -> bool:
        """True when ``key`` is subscribed to ``uri`` (False when the storage is unreachable)."""
        try:
            return self.store.has_member(REDIS_PREFIX + key, uri)
        except Exception:  # unreachable: a notification fewer, the stream goes on
            return False

    def touch(self, key: str, ttl: float) -> None:
        """Keep ``key``'s subscriptions ``ttl`` more seconds."""
        with suppress(Exception):  # unreachable: the next touch tries again
            self.store.expire(REDIS_PREFIX + key, max(int(ttl), 1))


#: The subscriptions of this process.
LOCAL = Subscriptions(MemoryStore())


@functools.cache
def _shared(uri: str) -> Subscriptions:
    return Subscriptions(shared(uri))


def for_uri(uri: str | None) -> Subscriptions:
    """The subscriptions of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one store
    per URI and process."""
    return _shared(uri) if uri else LOCAL


__all__ = ["LOCAL", "Subscriptions", "for_uri"]
