"""Where the authorization server keeps its records: clients, codes, tokens and grants.

Every record is a small JSON object under a key, with a lifetime, in the state store every other
shared record uses (:mod:`flask_tooldiscovery.state`). Through Redis
(``TOOLDISCOVERY_STATE_STORAGE_URI``) every worker and host sees the same records; unset, one
process keeps them (right for one worker only; ``init_app`` warns when gunicorn runs several, as
for approvals). Tokens and codes are never stored: their SHA-256 is the key (:func:`digest`).
Unreachable storage raises :class:`StoreError`: the server answers 503, and a token cannot be
verified (fails closed).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from ...errors import StoreError, StoreFull
from ...state.memory import MemoryStore
from ...state.redis_store import shared
from ...state.store import StateStore

PREFIX = "flask-tooldiscovery:oauth:"
#: Records the in-process store holds at most (live ones; expired ones are dropped first).
LOCAL_CAPACITY = 100_000
Record = dict[str, Any]


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


class Store:
    """The authorization server's records (JSON objects) in a :class:`~flask_tooldiscovery.state.store.StateStore`,
    under :data:`PREFIX`. Any failure of the store (Redis unreachable, a store in process memory
    full) is a :class:`StoreError`."""

    def __init__(self, state: StateStore) -> None:
        self.state = state

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.state, method)(*args, **kwargs)
        except StoreFull as exc:
            raise StoreError(f"authorization records kept in this process: {exc}") from None
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise StoreError(f"the state storage is unreachable: {type(exc).__name__}") from None

    @staticmethod
    def _load(value: bytes | None) -> Record | None:
        if value is None:
            return None
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else None

    @staticmethod
    def _dump(record: Record) -> bytes:
        return json.dumps(record).encode()

    def get(self, key: str) -> Record | None:
        """The record at ``key``, or ``None``."""
        return self._load(self._call("get", PREFIX + key))

    def get_many(self, *keys: str) -> list[Record | None]:
        """The records at ``keys``, in order (``None`` for each missing one), read at once: one
        round trip to Redis."""
        return [self._load(v) for v in self._call("get_many", [PREFIX + key for key in keys])] if keys else []

    def put(self, key: str, record: Record, ttl: float) -> None:
        """Keep ``record`` at ``key`` for ``ttl`` seconds (replacing what was there)."""
        self._call("put", PREFIX + key, self._dump(record), ttl)

    def add(self, key: str, record: Record, ttl: float) -> bool:
        """Keep ``record`` at ``key`` unless something is there: True when it was added."""
        return bool(self._call("put", PREFIX + key, self._dump(record), ttl, only_new=True))

    def renew(self, key: str, record: Record, ttl: float) -> bool:
        """Replace the record at ``key`` and keep it ``ttl`` seconds, only while one is there
        (atomically: a record deleted meanwhile stays deleted). True when it was renewed."""
        value = self._dump(record)
        return self._call("update", PREFIX + key, lambda now: None if now is None else (value, ttl)) is not None

    def take(self, key: str) -> Record | None:
        """The record at ``key``, removed at once: of two takers, one gets it."""
        return self._load(self._call("take", PREFIX + key))

    def delete(self, *keys: str) -> None:
        """Forget ``keys``."""
        for key in keys:
            self._call("delete", PREFIX + key)

    def add_member(self, key: str, member: str, ttl: float) -> None:
        """Add ``member`` to the set at ``key``, the set kept ``ttl`` seconds from now."""
        self._call("add_member", PREFIX + key, member, ttl)

    def remove_member(self, key: str, member: str) -> None:
        """Remove ``member`` from the set at ``key``."""
        self._call("remove_member", PREFIX + key, member)

    def members(self, key: str) -> set[str]:
        """The set at ``key`` (empty when none)."""
        return set(self._call("members", PREFIX + key))


_LOCAL = Store(MemoryStore(LOCAL_CAPACITY))
_SHARED: dict[str, Store] = {}
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None) -> Store:
    """The store of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: this process's), one per URI and process."""
    if not uri:
        return _LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, Store(shared(uri)))


__all__ = ["Store", "digest", "for_uri", "named_grant", "naming_grant"]
