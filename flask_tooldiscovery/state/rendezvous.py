"""One request hands a small message to another that waits for it under an unguessable key.

In process (:data:`LOCAL`, the default) a waiting request has a queue in this worker's memory, so
a message reaching another worker process finds nobody and is dropped. Through Redis
(``TOOLDISCOVERY_STATE_STORAGE_URI``, e.g. ``redis://127.0.0.1:6379/0``, needs redis-py) any worker
on any host delivers it: ``RPUSH`` + ``EXPIRE`` by the receiver, ``BLPOP`` with a timeout by the
waiter. What a message means is the caller's business.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, Protocol

from ..errors import ToolDiscoveryError
from ..observe.logs import log
from .store import redis_client

REDIS_PREFIX = "flask-tooldiscovery:rendezvous:"


class RendezvousError(ToolDiscoveryError, RuntimeError):
    """The storage was unreachable while waiting."""


class Mailbox(Protocol):
    def get(self, timeout: float) -> bytes | None:
        """The next message under the key, or ``None`` after ``timeout`` seconds without one."""


class Rendezvous(Protocol):
    def expect(self, key: str) -> AbstractContextManager[Mailbox]:
        """Wait for messages under ``key`` while the ``with`` block runs (its mailbox)."""

    def deliver(self, key: str, data: bytes, ttl: float) -> bool:
        """Hand ``data`` to whoever waits under ``key`` (kept ``ttl`` seconds where stored);
        False when it surely reached nobody."""


class _Queue:
    def __init__(self) -> None:
        self.items: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def get(self, timeout: float) -> bytes | None:
        try:
            return self.items.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None


class LocalRendezvous:
    """Waiting requests of this process, by key."""

    def __init__(self) -> None:
        self._waiting: dict[str, _Queue] = {}
        self._lock = threading.Lock()

    @contextmanager
    def expect(self, key: str) -> Iterator[Mailbox]:
        box = _Queue()
        with self._lock:
            self._waiting[key] = box
        try:
            yield box
        finally:
            with self._lock:
                if self._waiting.get(key) is box:
                    del self._waiting[key]

    def deliver(self, key: str, data: bytes, ttl: float) -> bool:
        with self._lock:
            box = self._waiting.get(key)
        if box is not None:
            box.items.put(data)
        return box is not None


class _RedisList:
    def __init__(self, client: Any, key: str) -> None:
        self.client, self.key = client, key

    def get(self, timeout: float) -> bytes | None:
        try:  # BLPOP's timeout 0 would block for ever
            popped = self.client.blpop([self.key], timeout=max(round(timeout, 3), 0.01))
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise RendezvousError(f"the state storage is unreachable: {type(exc).__name__}") from None
        return None if popped is None else bytes(popped[1])


class RedisRendezvous:
    """Waiting requests of every worker and host sharing one Redis."""

    def __init__(self, uri: str) -> None:
        self.client = redis_client(uri)

    @contextmanager
    def expect(self, key: str) -> Iterator[Mailbox]:
        name = REDIS_PREFIX + key
        try:
            yield _RedisList(self.client, name)
        finally:
            with suppress(Exception):  # an answer arriving late expires anyway
                self.client.delete(name)

    def deliver(self, key: str, data: bytes, ttl: float) -> bool:
        name = REDIS_PREFIX + key
        try:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.rpush(name, data)
                pipe.expire(name, max(int(ttl) + 1, 1))
                pipe.execute()
        except Exception as exc:
            log.warning("flask-tooldiscovery: state storage unreachable, message dropped: %s", type(exc).__name__)
            return False
        return True


LOCAL = LocalRendezvous()
_SHARED: dict[str, RedisRendezvous] = {}
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None) -> Rendezvous:
    """The rendezvous of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one per URI
    and process."""
    if not uri:
        return LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisRendezvous(uri))


__all__ = ["LOCAL", "LocalRendezvous", "Mailbox", "RedisRendezvous", "Rendezvous", "RendezvousError",
           "for_uri"]
