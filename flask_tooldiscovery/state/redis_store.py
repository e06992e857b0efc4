"""The state store in Redis (:class:`RedisStore`): shared by every worker and host that names it."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from .store import Inbox, redis_client


def _ms(ttl: float) -> int:
    return max(math.ceil(ttl * 1000), 1)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


#: Take the members of the due list KEYS[1] due by ARGV[1] (at most ARGV[3]), each due again at
#: ARGV[2], with their values (the hash KEYS[2]): [member, value, member, value...]. A member whose
#: value is gone is dropped.
_TAKE_DUE = """
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local out = {}
for _, member in ipairs(members) do
  local value = redis.call('HGET', KEYS[2], member)
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
        import redis

        with self.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)  # the write below fails if anyone changed the value meanwhile
                    current = pipe.get(key)
                    changed = change(None if current is None else bytes(current))
                    if changed is None:
                        return None
                    pipe.multi()
                    pipe.set(key, changed[0], px=_ms(changed[1]))
                    pipe.execute()
                    return changed[0]
                except redis.WatchError:
                    continue

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

    # a due list is a sorted set of members by due time, their values in the hash <key>:values
    def schedule(self, key: str, member: str, value: bytes, due: float) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(f"{key}:values", member, value)
            pipe.zadd(key, {member: due})
            pipe.execute()

    def take_due(self, key: str, now: float, until: float, limit: int) -> list[tuple[str, bytes]]:
        found = self._take_due(keys=[key, f"{key}:values"], args=[repr(now), repr(until), max(limit, 0)])
        return [(_text(found[i]), bytes(found[i + 1])) for i in range(0, len(found), 2)]

    def take_member(self, key: str, member: str, until: float) -> bool:
        return bool(self._take_member(keys=[key], args=[member, repr(until)]))

    def unschedule(self, key: str, member: str) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            pipe.zrem(key, member)
            pipe.hdel(f"{key}:values", member)
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


__all__ = ["RedisStore", "shared"]
