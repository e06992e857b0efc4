"""The state store's one interface behaves the same in process memory and in a real Redis: every
record (once, single use, rendezvous, changes, subscriptions) relies on nothing else."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from flask_tooldiscovery.errors import StoreFull
from flask_tooldiscovery.state.memory import MemoryStore
from flask_tooldiscovery.state.redis_store import RedisStore
from flask_tooldiscovery.state.store import StateStore

from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        yield RedisStore(request.getfixturevalue("redis_url") + "/5")


def key() -> str:
    return "test:" + os.urandom(6).hex()


def test_values_live_for_their_ttl_and_only_new_keeps_one(store: StateStore) -> None:
    k = key()
    assert store.get(k) is None and not store.exists(k)
    assert store.put(k, b"first", 30, only_new=True)
    assert not store.put(k, b"second", 30, only_new=True) and store.get(k) == b"first"
    assert store.put(k, b"third", 30) and store.get(k) == b"third" and store.exists(k)
    short = key()
    store.put(short, b"x", 0.05)
    time.sleep(0.15)
    assert store.get(short) is None and store.put(short, b"again", 30, only_new=True)
    assert store.get_many([k, "test:none", short]) == [b"third", None, b"again"]
    store.delete(k)
    assert store.get(k) is None
    many = [key(), key()]
    store.put_many(many, b"1", 30)
    assert all(store.exists(m) for m in many)


def test_take_gives_a_value_to_one_taker(store: StateStore) -> None:
    k = key()
    store.put(k, b"prize", 30)
    got: list[bytes | None] = []
    threads = [threading.Thread(target=lambda: got.append(store.take(k))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=lambda v: v or b"") == [None] * 5 + [b"prize"] and store.get(k) is None
    assert store.take(key()) is None


def test_counters_count_and_update_replaces_atomically(store: StateStore) -> None:
    k = key()
    assert [store.count(k, 30), store.count(k, 30)] == [1, 2]
    v = key()
    store.put(v, b"0", 30)

    def add_one(current: bytes | None) -> tuple[bytes, float]:
        return str(int(current or b"0") + 1).encode(), 30

    threads = [threading.Thread(target=lambda: [store.update(v, add_one) for _ in range(20)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get(v) == b"80"  # no increment lost to another writer
    assert store.update(v, lambda current: None) is None and store.get(v) == b"80"


def test_sets_and_the_ordered_index(store: StateStore) -> None:
    s = key()
    store.add_member(s, "a", 30)
    store.add_member(s, "b", 30)
    assert store.members(s) == {"a", "b"} and store.members(key()) == set()
    store.remove_member(s, "a")
    assert not store.has_member(s, "a") and store.has_member(s, "b") and store.members(s) == {"b"}
    store.expire(s, 0.05)
    time.sleep(0.15)
    assert not store.has_member(s, "b")
    i = key()
    for n, member in enumerate(["old", "mid", "new"]):
        store.index(i, member, float(n), 30, drop_below=0.0)
    assert store.newest(i, 2) == ["new", "mid"]
    store.index(i, "newer", 3.0, 30, drop_below=1.5)
    assert store.newest(i, 10) == ["newer", "new"]


def test_an_inbox_receives_what_is_posted_while_it_is_open(store: StateStore) -> None:
    k = key()
    with store.inbox(k) as inbox:
        assert store.post(k, b"one", 30) and store.post(k, b"two", 30)
        assert (inbox.get(2), inbox.get(2), inbox.get(0.05)) == (b"one", b"two", None)
    assert not store.exists(k)


def test_a_channel_reaches_every_listener(store: StateStore) -> None:
    channel = key()
    with store.listen(channel) as first, store.listen(channel) as second:
        store.publish(channel, b"hello")
        assert first.get(2) == b"hello" and second.get(2) == b"hello"
        assert first.get(0.05) is None
    store.publish(channel, b"nobody hears this")


def test_process_memory_refuses_a_value_rather_than_forget_a_live_one() -> None:
    store = MemoryStore(capacity=2)
    store.put("a", b"1", 30)
    store.put("gone", b"1", 0)
    store.put("b", b"1", 30)  # the expired one made room
    with pytest.raises(StoreFull):
        store.put("c", b"1", 30)
    assert store.put("a", b"2", 30) and len(store) == 2  # a live key may still change
    assert not store.post("nobody-waits", b"x", 30)  # in process, nothing is kept for an inbox not open


def test_a_due_list_gives_each_due_member_to_one_taker(store: StateStore) -> None:
    """What the task outbox keeps its jobs in: members with a value and a due time; taking the due
    ones moves their due time on, so of several takers each member goes to one."""
    k, now = key(), time.time()
    store.schedule(k, "early", b"job-1", now - 5)
    store.schedule(k, "later", b"job-2", now + 60)
    got: list[list[tuple[str, bytes]]] = []
    threads = [threading.Thread(target=lambda: got.append(store.take_due(k, time.time(), now + 30, 10)))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(x for taken in got for x in taken) == [("early", b"job-1")]  # once, and "later" not yet
    assert store.take_due(k, now + 31, now + 90, 10) == [("early", b"job-1")]  # due again after ``until``
    assert store.take_member(k, "later", now + 90) and store.take_due(k, now + 61, now + 120, 10) == []
    store.unschedule(k, "early")
    store.unschedule(k, "later")
    assert not store.take_member(k, "early", now) and store.take_due(k, now + 1000, now + 2000, 10) == []
