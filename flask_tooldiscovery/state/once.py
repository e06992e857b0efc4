"""Work done once per key, its answer kept: the first :meth:`Once.begin` of a key claims it, and
until the claim is released every later one, from any thread (and, in the state store, any worker
and host), is told the key is taken, with the answer kept once the first finished. Opal's
rollbacks run this way, once per ``operation_id``.

One atomic "keep unless kept" of the state store (:mod:`.store`: Redis's ``SET key NX PX ttl``
under ``TOOLDISCOVERY_STATE_STORAGE_URI``; unset, a table with expiry in process memory) decides.
Unreachable or full storage raises :class:`OnceError`: the caller refuses rather than run the work
a second time.
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from typing import Any

from ..errors import OnceError, ToolDiscoveryError
from .memory import MemoryStore
from .redis_store import shared
from .store import StateStore

REDIS_PREFIX = "flask-tooldiscovery:once:"
RUNNING = {"state": "running"}
_RUNNING = json.dumps(RUNNING).encode()
#: Keys the in-process table holds at most (expired ones are dropped first).
LOCAL_CAPACITY = 100_000


def _failed(exc: Exception) -> OnceError:
    if isinstance(exc, ToolDiscoveryError):  # a full store in process memory
        return OnceError(str(exc))
    return OnceError(f"the state storage is unreachable: {type(exc).__name__}")  # redis.RedisError


class Once:
    """Claims and answers kept in ``store``."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def begin(self, key: str, ttl: float) -> dict[str, Any] | None:
        """``None`` when this caller claimed ``key`` (for ``ttl`` seconds); else the record of whoever
        did: :data:`RUNNING` while it works, its answer once :meth:`finish` kept one."""
        name = REDIS_PREFIX + key
        while True:
            try:
                if self.store.put(name, _RUNNING, ttl, only_new=True):
                    return None
                found = self.store.get(name)
            except Exception as exc:
                raise _failed(exc) from None
            if found is not None:  # else: expired in between
                answer: dict[str, Any] = json.loads(found)
                return answer

    def finish(self, key: str, answer: dict[str, Any], ttl: float) -> None:
        """Keep ``answer`` as ``key``'s record for ``ttl`` seconds."""
        try:
            self.store.put(REDIS_PREFIX + key, json.dumps(answer).encode(), ttl)
        except Exception as exc:
            raise _failed(exc) from None

    def release(self, key: str) -> None:
        """Forget the claim on ``key`` (the work failed: the next caller may try again)."""
        try:
            self.store.delete(REDIS_PREFIX + key)
        except Exception as exc:
            raise _failed(exc) from None


#: The claims of this process that no app owns.
LOCAL = Once(MemoryStore(LOCAL_CAPACITY))
_OWNED: weakref.WeakKeyDictionary[Any, Once] = weakref.WeakKeyDictionary()
_OWNED_LOCK = threading.Lock()


@functools.cache
def _shared(uri: str) -> Once:
    return Once(shared(uri))


def for_uri(uri: str | None, owner: Any = None) -> Once:
    """The records of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (one store per URI and process); unset,
    those of this process: ``owner``'s own (an app's core: two apps never see each other's), else
    :data:`LOCAL`."""
    if uri:
        return _shared(uri)
    if owner is None:
        return LOCAL
    with _OWNED_LOCK:
        return _OWNED.get(owner) or _OWNED.setdefault(owner, Once(MemoryStore(LOCAL_CAPACITY)))


__all__ = ["LOCAL", "RUNNING", "Once", "for_uri"]
