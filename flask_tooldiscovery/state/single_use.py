"""Keys that can be spent once: the first :meth:`~Ledger.spend` of a key wins, every later one,
from any thread (and, in the state store, any worker and host), is told it was spent already.

A key is remembered for the ``ttl`` it was spent with, which should outlast whatever it stands for
(a sealed approval: its remaining lifetime). One atomic "keep unless kept" of the state store
(:mod:`.store`: Redis's ``SET key 1 NX PX ttl`` under ``TOOLDISCOVERY_STATE_STORAGE_URI``) decides;
unreachable, nothing can be decided and :class:`SpendError` says so (the caller refuses: spending
fails closed). In process (unset: one ledger per process) a bounded table with expiry decides;
full of live keys, it refuses to spend more rather than forget one.
"""

from __future__ import annotations

import functools

from ..errors import SpendError, StoreFull
from .memory import MemoryStore
from .redis_store import shared
from .store import StateStore

REDIS_PREFIX = "flask-tooldiscovery:spent:"
#: Keys the in-process ledger holds at most (live ones: expired keys are dropped first).
LOCAL_CAPACITY = 100_000


class Ledger:
    """Keys spent in ``store``."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def spend(self, key: str, ttl: float) -> bool:
        """True the first time ``key`` is spent (remembered ``ttl`` seconds), False ever after;
        :class:`SpendError` when that cannot be decided."""
        try:
            return self.store.put(REDIS_PREFIX + key, b"1", max(ttl, 0.0), only_new=True)
        except StoreFull as exc:
            raise SpendError(f"keys spent in this process: {exc}") from None
        except Exception as exc:  # redis.RedisError: unreachable, timed out, refused
            raise SpendError(f"the state storage is unreachable: {type(exc).__name__}") from None

    def __len__(self) -> int:
        """How many spent keys are remembered (in process memory only)."""
        return len(self.store) if isinstance(self.store, MemoryStore) else 0


#: The ledger of this process.
LOCAL = Ledger(MemoryStore(LOCAL_CAPACITY))


@functools.cache
def _shared(uri: str) -> Ledger:
    return Ledger(shared(uri))


def for_uri(uri: str | None) -> Ledger:
    """The ledger of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one per URI and
    process."""
    return _shared(uri) if uri else LOCAL


__all__ = ["LOCAL", "LOCAL_CAPACITY", "Ledger", "for_uri"]
