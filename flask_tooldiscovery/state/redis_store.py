"""The state store in Redis (:class:`RedisStore`): shared by every worker and host that names it."""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from .store import Due, Inbox, redis_client

#: Where a due list's values were kept by development versions of 0.2.0 beside ``<key>:values``
#: (the task callbacks' due list, ``<key>:entries``): still read and forgotten, so that nothing
#: waiting there at an upgrade is lost.
EARLIER_VALUES = ":entries"


def _ms(ttl: float) -> int:
    return max(math.ceil(ttl * 1000), 1)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


#: Take the members of the due list KEYS[1] due by ARGV[1] (at most ARGV[3]), each due again at
#: ARGV[2], with their values (the hash KEYS[2], else KEYS[3]: see :data:`EARLIER_VALUES`):
#: [member, value, member, value...]. A member whose value is gone is dropped.
_TAKE_DUE = """
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local out = {}
for _, member in ipairs(members) do
  local value = redis.call('HGET', KEYS[2], member) or redis.call('HGET', KEYS[3], member)
  if value then
    redis.call('ZADD', KEYS[1], ARGV[2], member)
    table.insert(out, member); table.insert(out, value)
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
return out
"""
#: Take ARGV[1] of the due list KEYS[1] if it is there: due again at ARGV[2]. 1 when taken.
_TAKE_MEMBER = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
return 0
"""


#: Keep ARGV[1] under KEYS[1] for ARGV[2] ms and ARGV[4] in the index KEYS[2] with score ARGV[3],
#: dropping the members scored below ARGV[5]; the index lives ARGV[2] ms more unless it lives longer.
_PUT_INDEXED = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, ARGV[5])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return 1
"""
#: Replace KEYS[1]'s value with ARGV[2] (for ARGV[3] ms) if its SHA-1 is still ARGV[1]. 1 when replaced.
_SWAP = """
local current = redis.call('GET', KEYS[1])
if not current or redis.sha1hex(current) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""
#: Hold the lease KEYS[1] for ARGV[1] (ARGV[2] ms) unless another owner holds it; then, if given,
#: keep ARGV[4] as member ARGV[3] of the due list KEYS[2] (values: KEYS[3]), due at ARGV[5]. 1 when held.
_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[2] then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[3])
end
return 1
"""
#: Renew each lease KEYS[i] still held by ARGV[i] for ARGV[#KEYS + 1] ms; the keys renewed.
_RENEW = """
local ms = ARGV[#KEYS + 1]
local kept = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i] then
    redis.call('PEXPIRE', key, ms)
    table.insert(kept, key)
  end
end
return kept
"""
#: Delete the lease KEYS[1] if ARGV[1] holds it. 1 when deleted.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class _List:
    def __init__(self, client: Any, key: str) -> None:
        self.client, self.key = client, key

    def get(self, timeout: float) -> bytes | None:
        # BLPOP's timeout 0 would block for ever
        popped = self.client.blpop([self.key], timeout=max(round(timeout, 3), 0.01))
        return None if popped is None else bytes(popped[1])


class _Subscribed:
    def __init__(self, pubsub: Any) -> None:
        self.pubsub = pubsub

    def get(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            message = self.pubsub.get_message(ignore_subscribe_messages=True,
                                              timeout=max(deadline - time.monotonic(), 0.0))
            if message is not None and message.get("type") == "message":
                return bytes(message["data"])
            if time.monotonic() >= deadline:
                return None


class RedisStore:
    """A :class:`~.store.StateStore` in the Redis at ``uri`` (one client per URI and process).
    Values are strings, sets are sets, an index is a sorted set, an inbox a list (``RPUSH`` by the
    sender, ``BLPOP`` by the receiver: a value posted before the inbox opens waits for it), and a
    channel is pub/sub's, named with the database's number (pub/sub ignores the database, so apps
    on one Redis with different databases hear only their own)."""

    def __init__(self, uri: str) -> None:
        self.client: Any = redis_client(uri)
        self._db = self.client.connection_pool.connection_kwargs.get("db", 0)
        self._take_due = self.client.register_script(_TAKE_DUE)
        self._take_member = self.client.register_script(_TAKE_MEMBER)
        self._swap = self.client.register_script(_SWAP)
        self._put_indexed = self.client.register_script(_PUT_INDEXED)
        self._lease = self.client.register_script(_LEASE)
        self._renew = self.client.register_script(_RENEW)
        self._release = self.client.register_script(_RELEASE)

    def get(self, key: str) -> bytes | None:
        value = self.client.get(key)
        return None if value is None else bytes(value)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [None if v is None else bytes(v) for v in self.client.mget(list(keys))] if keys else []

    def put(self, key: str, value: bytes, ttl: float, *, only_new: bool = False) -> bool:
        return bool(self.client.set(key, value, px=_ms(ttl), nx=only_new))

    def put_many(self, keys: Iterable[str], value: bytes, ttl: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, value, px=_ms(ttl))
        pipe.execute()

    def take(self, key: str) -> bytes | None:
        value = self.client.getdel(key)
        return None if value is None else bytes(value)

    def delete(self, key: str) -> None:
        self.client.delete(key)

    def exists(self, key: str) -> bool:
        return bool(self.client.exists(key))

    def count(self, key: str, ttl: float) -> int:
        pipe = self.client.pipeline()
        pipe.incr(key)
        pipe.pexpire(key, _ms(ttl))
        value, _ = pipe.execute()
        return int(value)

    def update(self, key: str, change: Callable[[bytes | None], tuple[bytes, float] | None]) -> bytes | None:
        # read, change, and write back only if the value is still the one read (compared by its
        # SHA-1 in a script): two round trips, none held open between them
        while True:
            raw = self.client.get(key)
            current = None if raw is None else bytes(raw)
            changed = change(current)
            if changed is None:
                return None
            if current is None:
                written = self.client.set(key, changed[0], px=_ms(changed[1]), nx=True)
            else:
                written = self._swap(keys=[key], args=[hashlib.sha1(current).hexdigest(), changed[0],
                                                       _ms(changed[1])])
            if written:
                return changed[0]

    def add_member(self, key: str, member: str, ttl: float) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.sadd(key, member)
            pipe.pexpire(key, _ms(ttl))
            pipe.execute()

    def remove_member(self, key: str, member: str) -> None:
        self.client.srem(key, member)

    def has_member(self, key: str, member: str) -> bool:
        return bool(self.client.sismember(key, member))

    def members(self, key: str) -> set[str]:
        return {m.decode() if isinstance(m, bytes) else str(m) for m in self.client.smembers(key)}

    def expire(self, key: str, ttl: float) -> None:
        self.client.pexpire(key, _ms(ttl))

    def index(self, key: str, member: str, score: float, ttl: float, *, drop_below: float) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {member: score})
            pipe.zremrangebyscore(key, 0, f"({drop_below!r}")
            pipe.pexpire(key, _ms(ttl))
            pipe.execute()

    def newest(self, key: str, limit: int) -> list[str]:
        return [m.decode() if isinstance(m, bytes) else str(m) for m in self.client.zrevrange(key, 0, limit - 1)]

    def put_indexed(self, key: str, value: bytes, ttl: float, index: str, member: str, score: float, *,
                    drop_below: float) -> None:
        self._put_indexed(keys=[key, index], args=[value, _ms(ttl), repr(score), member, f"({drop_below!r}"])

    def lease(self, key: str, owner: str, ttl: float, *, then: Due | None = None) -> bool:
        keys, args = [key], [owner, _ms(ttl)]
        if then is not None:
            keys += [then.key, f"{then.key}:values"]
            args += [then.member, then.value, repr(then.due)]
        return bool(self._lease(keys=keys, args=args))

    def renew(self, leases: Mapping[str, str], ttl: float) -> set[str]:
        if not leases:
            return set()
        return {_text(k) for k in self._renew(keys=list(leases), args=[*leases.values(), _ms(ttl)])}

    def release(self, key: str, owner: str) -> bool:
        return bool(self._release(keys=[key], args=[owner]))

    # a due list is a sorted set of members by due time, their values in the hash <key>:values
    def schedule(self, key: str, member: str, value: bytes, due: float, *, only_new: bool = False) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            if only_new:
                pipe.hsetnx(f"{key}:values", member, value)
                pipe.zadd(key, {member: due}, nx=True)
            else:
                pipe.hset(f"{key}:values", member, value)
                pipe.zadd(key, {member: due})
            pipe.execute()

    def next_due(self, key: str, members: Iterable[str] | None = None) -> float | None:
        if members is None:
            first = self.client.zrange(key, 0, 0, withscores=True)
            return float(first[0][1]) if first else None
        listed = list(members)
        scores = self.client.zmscore(key, listed) if listed else []
        return min((float(s) for s in scores if s is not None), default=None)

    def take_due(self, key: str, now: float, until: float, limit: int) -> list[tuple[str, bytes]]:
        found = self._take_due(keys=[key, f"{key}:values", key + EARLIER_VALUES],
                               args=[repr(now), repr(until), max(limit, 0)])
        return [(_text(found[i]), bytes(found[i + 1])) for i in range(0, len(found), 2)]

    def take_member(self, key: str, member: str, until: float) -> bool:
        return bool(self._take_member(keys=[key], args=[member, repr(until)]))

    def unschedule(self, key: str, member: str) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.zrem(key, member)
            pipe.hdel(f"{key}:values", member)
            pipe.hdel(key + EARLIER_VALUES, member)
            pipe.execute()

    @contextmanager
    def inbox(self, key: str) -> Iterator[Inbox]:
        try:
            yield _List(self.client, key)
        finally:
            with suppress(Exception):  # a value arriving late expires anyway
                self.client.delete(key)

    def post(self, key: str, value: bytes, ttl: float) -> bool:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, value)
            pipe.pexpire(key, _ms(ttl))
            pipe.execute()
        return True

    def _channel(self, channel: str) -> str:
        return f"{channel}:{self._db}"

    def publish(self, channel: str, data: bytes) -> None:
        self.client.publish(self._channel(channel), data)

    @contextmanager
    def listen(self, channel: str) -> Iterator[Inbox]:
        pubsub = self.client.pubsub()
        try:
            pubsub.subscribe(self._channel(channel))
            deadline = time.monotonic() + 5  # listening from now on: Redis confirmed the subscription
            while time.monotonic() < deadline:
                message = pubsub.get_message(timeout=0.5)
                if message is not None and message.get("type") == "subscribe":
                    break
            yield _Subscribed(pubsub)
        finally:
            with suppress(Exception):
                pubsub.close()


_SHARED: dict[str, RedisStore] = {}
_SHARED_LOCK = threading.Lock()


def shared(uri: str) -> RedisStore:
    """The store of the Redis at ``uri``, one per URI and process."""
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisStore(uri))


__all__ = ["EARLIER_VALUES", "RedisStore", "shared"]
