"""Where the authorization server keeps its records: clients, codes, tokens and grants.

Every record is a small JSON object under a key, with a lifetime. Through Redis
(``TOOLDISCOVERY_STATE_STORAGE_URI``) every worker and host sees the same records; unset, one
process keeps them (right for one worker only; ``init_app`` warns when gunicorn runs several, as
for approvals). Tokens and codes are never stored: their SHA-256 is the key (:func:`digest`).
Unreachable storage raises :class:`StoreError`: the server answers 503, and a token cannot be
verified (fails closed).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from typing import Any, Protocol

from ...errors import ToolDiscoveryError
from ...state.store import redis_client

PREFIX = "flask-tooldiscovery:oauth:"
#: Records the in-process store holds at most (live ones; expired ones are dropped first).
LOCAL_CAPACITY = 100_000
Record = dict[str, Any]


class StoreError(ToolDiscoveryError, RuntimeError):
    """The storage is unreachable (or, in process, full): nothing can be decided. Never leaves the
    package: the views answer 503, the verifier refuses the token."""


def digest(secret: str) -> str:
    """The key a token or code is stored under: its SHA-256, hex."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def naming_grant(token: str, family: str) -> str:
    """An access token that names its grant (``<grant id>.<secret>``), so that its record and its
    grant's are read in one round trip. Grant ids are ``token_urlsafe`` (no dot): the id says
    nothing secret and proves nothing (the verifier reads the record the whole token hashes to)."""
    return f"{family}.{token}"


def named_grant(token: str) -> str | None:
    """The grant id an access token names, ``None`` for one that names none."""
    family, dot, _ = token.partition(".")
    return family if dot and family else None


class Store(Protocol):
    def get(self, key: str) -> Record | None:
        """The record at ``key``, or ``None``."""

    def get_many(self, *keys: str) -> list[Record | None]:
        """The records at ``keys``, in order (``None`` for each missing one), read at once: one
        round trip to Redis."""

    def put(self, key: str, record: Record, ttl: float) -> None:
        """Keep ``record`` at ``key`` for ``ttl`` seconds (replacing what was there)."""

    def add(self, key: str, record: Record, ttl: float) -> bool:
        """Keep ``record`` at ``key`` unless something is there: True when it was added."""

    def take(self, key: str) -> Record | None:
        """The record at ``key``, removed at once: of two takers, one gets it."""

    def delete(self, *keys: str) -> None:
        """Forget ``keys``."""

    def add_member(self, key: str, member: str, ttl: float) -> None:
        """Add ``member`` to the set at ``key``, the set kept ``ttl`` seconds from now."""

    def remove_member(self, key: str, member: str) -> None:
        """Remove ``member`` from the set at ``key``."""

    def members(self, key: str) -> set[str]:
        """The set at ``key`` (empty when none)."""


class LocalStore:
    """Records in this process, under a lock, at most ``capacity`` of them."""

    def __init__(self, capacity: int = LOCAL_CAPACITY) -> None:
        self.capacity = capacity
        self._items: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def _live(self, key: str, now: float) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= now:
            del self._items[key]
            return None
        return item[1]

    def _room(self, now: float) -> None:
        if len(self._items) >= self.capacity:
            for key in [k for k, (expiry, _) in self._items.items() if expiry <= now]:
                del self._items[key]
            if len(self._items) >= self.capacity:
                raise StoreError(f"{len(self._items)} authorization records kept in this process are still live")

    def get(self, key: str) -> Record | None:
        with self._lock:
            value = self._live(key, time.monotonic())
            return json.loads(value) if isinstance(value, str) else None

    def get_many(self, *keys: str) -> list[Record | None]:
        with self._lock:
            now = time.monotonic()
            values = [self._live(key, now) for key in keys]
        return [json.loads(value) if isinstance(value, str) else None for value in values]

    def put(self, key: str, record: Record, ttl: float) -> None:
        now = time.monotonic()
        with self._lock:
            if key not in self._items:
                self._room(now)
            self._items[key] = (now + ttl, json.dumps(record))

    def add(self, key: str, record: Record, ttl: float) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._live(key, now) is not None:
                return False
            self._room(now)
            self._items[key] = (now + ttl, json.dumps(record))
            return True

    def take(self, key: str) -> Record | None:
        with self._lock:
            value = self._live(key, time.monotonic())
            self._items.pop(key, None)
            return json.loads(value) if isinstance(value, str) else None

    def delete(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._items.pop(key, None)

    def add_member(self, key: str, member: str, ttl: float) -> None:
        now = time.monotonic()
        with self._lock:
            found = self._live(key, now)
            members = set(found) if isinstance(found, frozenset) else set()
            if found is None:
                self._room(now)
            members.add(member)
            self._items[key] = (now + ttl, frozenset(members))

    def remove_member(self, key: str, member: str) -> None:
        now = time.monotonic()
        with self._lock:
            found = self._live(key, now)
            if isinstance(found, frozenset):
                self._items[key] = (self._items[key][0], found - {member})

    def members(self, key: str) -> set[str]:
        with self._lock:
            found = self._live(key, time.monotonic())
            return set(found) if isinstance(found, frozenset) else set()


class RedisStore:
    """Records every worker and host sharing one Redis sees."""

    def __init__(self, uri: str) -> None:
        self.client = redis_client(uri)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, method)(*args, **kwargs)
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise StoreError(f"the state storage is unreachable: {type(exc).__name__}") from None

    @staticmethod
    def _load(value: Any) -> Record | None:
        if value is None:
            return None
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else None

    def get(self, key: str) -> Record | None:
        return self._load(self._call("get", PREFIX + key))

    def get_many(self, *keys: str) -> list[Record | None]:
        if not keys:
            return []
        return [self._load(value) for value in self._call("mget", [PREFIX + key for key in keys])]

    def put(self, key: str, record: Record, ttl: float) -> None:
        self._call("set", PREFIX + key, json.dumps(record), ex=max(math.ceil(ttl), 1))

    def add(self, key: str, record: Record, ttl: float) -> bool:
        return bool(self._call("set", PREFIX + key, json.dumps(record), nx=True, ex=max(math.ceil(ttl), 1)))

    def take(self, key: str) -> Record | None:
        return self._load(self._call("getdel", PREFIX + key))

    def delete(self, *keys: str) -> None:
        if keys:
            self._call("delete", *(PREFIX + key for key in keys))

    def add_member(self, key: str, member: str, ttl: float) -> None:
        def both(pipe: Any) -> None:
            pipe.sadd(PREFIX + key, member)
            pipe.expire(PREFIX + key, max(math.ceil(ttl), 1))

        pipe = self.client.pipeline()
        both(pipe)
        self._call_pipe(pipe)

    def _call_pipe(self, pipe: Any) -> None:
        try:
            pipe.execute()
        except Exception as exc:
            raise StoreError(f"the state storage is unreachable: {type(exc).__name__}") from None

    def remove_member(self, key: str, member: str) -> None:
        self._call("srem", PREFIX + key, member)

    def members(self, key: str) -> set[str]:
        return {m.decode() if isinstance(m, bytes) else str(m) for m in self._call("smembers", PREFIX + key)}


_LOCAL = LocalStore()
_SHARED: dict[str, RedisStore] = {}
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None) -> Store:
    """The store of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: this process's), one per URI and process."""
    if not uri:
        return _LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisStore(uri))


__all__ = ["LocalStore", "RedisStore", "Store", "StoreError", "digest", "for_uri", "named_grant", "naming_grant"]
