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
from flask_tooldiscovery.state.store import Due, StateStore

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


def test_a_value_and_its_index_entry_are_kept_together(store: StateStore) -> None:
    k, i = key(), key()
    store.put_indexed(k, b"record", 30, i, "its-id", 5.0, drop_below=0.0)
    store.put_indexed(k + "b", b"other", 30, i, "other-id", 7.0, drop_below=0.0)
    assert store.get(k) == b"record" and store.newest(i, 10) == ["other-id", "its-id"]
    store.put_indexed(k + "c", b"third", 30, i, "third-id", 9.0, drop_below=6.0)
    assert store.newest(i, 10) == ["third-id", "other-id"]  # the entries scored below 6 are dropped


def test_a_lease_is_held_by_one_owner_at_a_time(store: StateStore) -> None:
    """What a task's run holds while it runs: taken only if free or the owner's own; renewed and
    let go only by its owner, so a run that stalled past its lease never takes it back from the
    run that took it after."""
    lease, due = key(), key()
    then = Due(due, "job", b"the job", time.time() + 60)
    assert store.lease(lease, "run-1", 0.3, then=then)
    assert store.next_due(due) == then.due  # kept in the same step
    later = Due(due, "job", b"another job", time.time() + 120)
    assert not store.lease(lease, "run-2", 30, then=later)  # held: nothing is changed
    assert store.next_due(due) == then.due and store.take_due(due, then.due, then.due + 1, 10) == [("job", b"the job")]
    assert store.lease(lease, "run-1", 0.3)  # the owner's own again
    assert store.renew({lease: "run-1", key(): "run-1"}, 0.3) == {lease}
    time.sleep(0.45)  # lapsed: anyone may take it
    assert store.renew({lease: "run-1"}, 30) == set() and not store.exists(lease)  # lapsed: not the owner's
    assert store.lease(lease, "run-2", 30)
    assert store.renew({lease: "run-1"}, 30) == set()  # a late renewal by the run that lost it
    assert not store.release(lease, "run-1") and store.exists(lease)  # nor can it let the new one's go
    assert store.renew({lease: "run-2"}, 30) == {lease}
    assert store.release(lease, "run-2") and not store.exists(lease)


def test_a_due_list_keeps_a_waiting_member_and_says_when_next_is_due(store: StateStore) -> None:
    k, now = key(), time.time()
    assert store.next_due(k) is None
    store.schedule(k, "a", b"first", now + 10)
    store.schedule(k, "a", b"second", now + 20, only_new=True)  # one is waiting: kept as it is
    store.schedule(k, "b", b"b", now + 5)
    assert store.next_due(k) == now + 5 and store.next_due(k, ["a", "zz"]) == now + 10
    assert store.next_due(k, []) is None and store.next_due(k, ["zz"]) is None
    assert store.take_due(k, now + 15, now + 100, 10) == [("b", b"b"), ("a", b"first")]
    store.schedule(k, "a", b"third", now + 1)  # not only_new: replaced
    assert store.take_due(k, now + 2, now + 100, 10) == [("a", b"third")]


def test_a_due_list_entry_kept_by_an_earlier_version_is_still_taken(redis_url: str) -> None:  # noqa: F811
    """Development versions of 0.2.0 kept the task callbacks' values in ``<key>:entries``: an entry
    waiting there at an upgrade is taken and dropped as the others are, never lost."""
    import redis

    store, client, k = RedisStore(redis_url + "/5"), redis.Redis.from_url(redis_url + "/5"), key()
    client.hset(k + ":entries", "old", b'["t1","opal",2]')
    client.zadd(k, {"old": 1.0})
    assert store.next_due(k) == 1.0
    assert store.take_due(k, 2.0, 500.0, 10) == [("old", b'["t1","opal",2]')]
    store.unschedule(k, "old")
    assert not client.exists(k) and not client.hexists(k + ":entries", "old")
