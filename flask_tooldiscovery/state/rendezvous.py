"""One request hands a small message to another that waits for it under an unguessable key.

The waiter opens an inbox of the state store (:mod:`.store`) under the key; the receiver posts to
it. In process (:data:`LOCAL`, the default) the inbox is in this worker's memory, so a message
reaching another worker process finds nobody and is dropped. Through Redis
(``TOOLDISCOVERY_STATE_STORAGE_URI``, e.g. ``redis://127.0.0.1:6379/0``, needs redis-py) any worker
on any host delivers it (a list: ``RPUSH`` + ``PEXPIRE`` by the receiver, ``BLPOP`` with a timeout
by the waiter). What a message means is the caller's business.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ..errors import RendezvousError
from ..observe.logs import log
from .memory import MemoryStore
from .redis_store import shared
from .store import Inbox, StateStore

REDIS_PREFIX = "flask-tooldiscovery:rendezvous:"


class Mailbox(Protocol):
    def get(self, timeout: float) -> bytes | None:
        """The next message under the key, or ``None`` after ``timeout`` seconds without one."""


class _Checked:
    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    def get(self, timeout: float) -> bytes | None:
        try:
            return self.inbox.get(timeout)
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise RendezvousError(f"the state storage is unreachable: {type(exc).__name__}") from None


class Rendezvous:
    """Waiting requests whose inboxes are in ``store``."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    @contextmanager
    def expect(self, key: str) -> Iterator[Mailbox]:
        """Wait for messages under ``key`` while the ``with`` block runs (its mailbox)."""
        with self.store.inbox(REDIS_PREFIX + key) as inbox:
            yield _Checked(inbox)

    def deliver(self, key: str, data: bytes, ttl: float) -> bool:
        """Hand ``data`` to whoever waits under ``key`` (kept ``ttl`` seconds where stored);
        False when it surely reached nobody."""
        try:
            return self.store.post(REDIS_PREFIX + key, data, ttl + 1)
        except Exception as exc:
            log.warning("flask-tooldiscovery: state storage unreachable, message dropped: %s", type(exc).__name__)
            return False


#: The waiting requests of this process.
LOCAL = Rendezvous(MemoryStore())


@functools.cache
def _shared(uri: str) -> Rendezvous:
    return Rendezvous(shared(uri))


def for_uri(uri: str | None) -> Rendezvous:
    """The rendezvous of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one store per
    URI and process."""
    return _shared(uri) if uri else LOCAL


__all__ = ["LOCAL", "Mailbox", "Rendezvous", "for_uri"]
