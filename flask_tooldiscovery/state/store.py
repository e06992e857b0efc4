"""The state store every worker and host shares: one interface, :class:`StateStore`, and two
implementations.

``TOOLDISCOVERY_STATE_STORAGE_URI`` (``redis://host:6379/0``, needs redis-py) names a Redis that
every worker and host shares (:class:`~.redis_store.RedisStore`); unset, each worker process keeps
its state in its own memory (:class:`~.memory.MemoryStore`), which is only right when it is the only
one (``init_app`` warns when the server says it runs several:
:func:`flask_tooldiscovery.serving.worker_threads.warn_unshared_state`). Every record kept there (the
claims of :mod:`.once`, the spent keys of :mod:`.single_use`, the messages of :mod:`.rendezvous`,
the changes of :mod:`.changes`, the subscriptions of :mod:`.resource_subscriptions`, the task
records, leases, outbox and callbacks of :mod:`flask_tooldiscovery.tasks`) is written through this
interface only, so it behaves the same in both; where a record needs a step done atomically, the
interface has it as one method (``update``, ``put_indexed``, ``lease``, ``renew``, ``release``,
``take_due``...), implemented in both stores. A Redis that cannot be reached raises
whatever redis-py raises; each record decides what that means for it (refuse, or go on).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


class Due(NamedTuple):
    """A member of a due list, as :meth:`StateStore.schedule` keeps it."""

    key: str
    member: str
    value: bytes
    due: float


class Inbox(Protocol):
    def get(self, timeout: float) -> bytes | None:
        """The next value, or ``None`` after ``timeout`` seconds without one."""


class StateStore(Protocol):
    """What the records need of a store: values with a lifetime (``ttl``, seconds), counters, sets,
    a time-ordered index, leases held by one owner at a time, due lists, mailboxes a request waits
    on, and channels every listener hears. Each method is one atomic step in both stores."""

    def get(self, key: str) -> bytes | None:
        """The value of ``key`` (``None``: none, or expired)."""

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The values of ``keys``, in their order."""

    def put(self, key: str, value: bytes, ttl: float, *, only_new: bool = False) -> bool:
        """Keep ``value`` under ``key`` for ``ttl`` seconds; ``only_new``: only when ``key`` holds
        nothing live (atomically). True when it was kept."""

    def put_many(self, keys: Iterable[str], value: bytes, ttl: float) -> None:
        """Keep ``value`` under each of ``keys`` for ``ttl`` seconds."""

    def take(self, key: str) -> bytes | None:
        """The value of ``key``, forgotten at once: of two takers, one gets it."""

    def delete(self, key: str) -> None:
        """Forget ``key`` (whatever it holds)."""

    def exists(self, key: str) -> bool:
        """True when ``key`` holds something live."""

    def count(self, key: str, ttl: float) -> int:
        """Add one to the counter ``key`` (kept ``ttl`` seconds from now); its new value."""

    def update(self, key: str, change: Callable[[bytes | None], tuple[bytes, float] | None]) -> bytes | None:
        """Replace ``key``'s value with ``change(value)`` (the new value and its ttl) unless another
        writer changed it meanwhile (``change`` is then called again with the newer one); the new
        value, or ``None`` when ``change`` returned ``None`` (nothing written)."""

    def add_member(self, key: str, member: str, ttl: float) -> None:
        """Add ``member`` to the set ``key``, which lives ``ttl`` seconds from now."""

    def remove_member(self, key: str, member: str) -> None:
        """Take ``member`` out of the set ``key``."""

    def has_member(self, key: str, member: str) -> bool:
        """True when ``member`` is in the set ``key``."""

    def members(self, key: str) -> set[str]:
        """The members of the set ``key`` (empty when none)."""

    def expire(self, key: str, ttl: float) -> None:
        """``key`` lives ``ttl`` seconds from now (nothing when it holds nothing)."""

    def index(self, key: str, member: str, score: float, ttl: float, *, drop_below: float) -> None:
        """Add ``member`` with ``score`` to the ordered index ``key`` (living ``ttl`` seconds from
        now), dropping the members scored below ``drop_below``."""

    def newest(self, key: str, limit: int) -> list[str]:
        """The index ``key``'s ``limit`` members of the highest score, highest first."""

    def put_indexed(self, key: str, value: bytes, ttl: float, index: str, member: str, score: float, *,
                    drop_below: float) -> None:
        """:meth:`put` ``value`` under ``key`` for ``ttl`` seconds and :meth:`index` ``member`` (the
        key's name for the reader) in ``index`` with ``score``, dropping the members scored below
        ``drop_below``, in one step; the index lives at least as long as the value (never shorter
        than it lived: a value kept for less does not take the others' entries with it)."""

    def lease(self, key: str, owner: str, ttl: float, *, then: Due | None = None) -> bool:
        """Hold the lease ``key`` for ``owner`` for ``ttl`` seconds unless another owner holds it
        (free, lapsed, or ``owner``'s already), and only then :meth:`schedule` ``then``: one atomic
        step. True when ``owner`` holds it now."""

    def renew(self, leases: Mapping[str, str], ttl: float) -> set[str]:
        """Hold each lease of ``leases`` (key: owner) ``ttl`` seconds more where its owner still
        holds it (atomically, each); the keys renewed (a lease lapsed or held by another is not)."""

    def release(self, key: str, owner: str) -> bool:
        """Let the lease ``key`` go if ``owner`` holds it (atomically: never another's); True when
        it did."""

    def schedule(self, key: str, member: str, value: bytes, due: float, *, only_new: bool = False) -> None:
        """Keep ``value`` as ``member`` of the due list ``key``, due at ``due`` (a ``time.time()``):
        kept until :meth:`unschedule` (not for a TTL: what is due must not vanish unseen);
        ``only_new``: unless ``member`` is in the list already (atomically)."""

    def next_due(self, key: str, members: Iterable[str] | None = None) -> float | None:
        """When the due list ``key``'s first member (of ``members``, when given) is due; ``None``
        when none is there."""

    def take_due(self, key: str, now: float, until: float, limit: int) -> list[tuple[str, bytes]]:
        """Up to ``limit`` members of the due list ``key`` due by ``now``, with their values, each
        due again at ``until`` as it is taken (atomically: of two takers, one gets it)."""

    def take_member(self, key: str, member: str, until: float) -> bool:
        """Take ``member`` of the due list ``key`` if it is still there: it is due again at
        ``until``. True when taken."""

    def unschedule(self, key: str, member: str) -> None:
        """Take ``member`` out of the due list ``key``, with its value."""

    def inbox(self, key: str) -> AbstractContextManager[Inbox]:
        """Receive the values :meth:`post`-ed under ``key`` while the ``with`` block runs (values
        posted before and still live included, where the store keeps them); ``key`` is forgotten
        at the end."""

    def post(self, key: str, value: bytes, ttl: float) -> bool:
        """Hand ``value`` to the inbox ``key`` (kept ``ttl`` seconds where the store keeps values
        for an inbox not open yet: Redis); False when it surely reached nobody (in process memory:
        no inbox open under ``key``)."""

    def publish(self, channel: str, data: bytes) -> None:
        """Tell every listener of ``channel`` now listening (nothing is kept for a later one)."""

    def listen(self, channel: str) -> AbstractContextManager[Inbox]:
        """Hear what is published on ``channel`` while the ``with`` block runs, from its start."""


def redis_client(uri: str) -> Any:
    """The Redis client of ``uri``: one per URI and process (redis-py's clients are thread-safe,
    each blocking call takes a connection of the pool)."""
    with _LOCK:
        client = _CLIENTS.get(uri)
        if client is None:
            import redis

            client = _CLIENTS[uri] = redis.Redis.from_url(uri)
        return client


__all__ = ["Due", "Inbox", "StateStore", "redis_client"]
