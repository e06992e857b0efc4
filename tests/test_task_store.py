"""Task records, the callbacks waiting and the leases of running tasks are written once, against
the state store's interface: in process memory and in a real Redis they behave alike. A run holds
its task's lease as its own (taken in one step with its job kept in the outbox; renewed and let go
only by its owner); what the previous release left in Redis is read as it was; and an accepted
Celery call still costs two Redis round trips before its answer."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.state.memory import MemoryStore
from flask_tooldiscovery.state.redis_store import RedisStore
from flask_tooldiscovery.state.store import StateStore
from flask_tooldiscovery.tasks.callback_queue import QUEUE, CallbackQueue, Entry
from flask_tooldiscovery.tasks.cancel_watch import CancelWatcher
from flask_tooldiscovery.tasks.engines import CeleryEngine
from flask_tooldiscovery.tasks.outbox import OUTBOX, RUNNING, Outbox
from flask_tooldiscovery.tasks.records import PREFIX, Task, TaskResult, TaskStore, lease_key

from .celery_side import CelerySide, celery_side  # noqa: F401  (a fixture)
from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)

pytestmark = pytest.mark.slow


@pytest.fixture(params=["memory", "redis"])
def state(request: pytest.FixtureRequest) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        yield RedisStore(request.getfixturevalue("redis_url") + "/6")


def new_id() -> str:
    return os.urandom(8).hex()


def outbox(state: StateStore) -> Outbox:
    # the engine is not reached by holding, renewing or letting go of a lease
    return Outbox(state, TaskStore(state), cast(CeleryEngine, None), grace=30.0)


def kept_jobs(state: StateStore, task_id: str) -> list[tuple[str, bytes]]:
    far = time.time() + 3600
    return state.take_due(OUTBOX, far, far, 1000) and [
        (m, v) for m, v in state.take_due(OUTBOX, far * 2, far * 2, 1000) if m == task_id + RUNNING]


def test_the_records_behave_alike_in_both_stores(state: StateStore) -> None:
    store = TaskStore(state)
    task = Task(id=new_id(), tool="t", version="1.0.0", dialect="opal", caller="carol", digest="d")
    store.put(task)
    assert store.get(task.id) == task and [t.id for t in store.of_caller("carol")] == [task.id]
    assert [store.claim(task.id), store.claim(task.id)] == [1, 2]
    assert not store.cancelling(task.id) and store.cancel(task.id) and store.cancelling(task.id)
    asked = store.update(task.id, lambda t: Task(**{**t.__dict__, "state": "input_required"}))
    assert asked is not None and asked.state == "input_required"
    assert store.update(task.id, lambda t: None) is None
    assert not store.held(task.id)
    assert store.take_lease(task.id, "run-1", 30) and not store.take_lease(task.id, "run-2", 30)
    assert store.held(task.id)
    wins: list[bool] = []
    threads = [threading.Thread(target=lambda s=s: wins.append(store.finish(task.id, s, TaskResult(status="failure"))))
               for s in ["completed", "failed", "cancelled", "interrupted"] * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1  # a record only moves forward: one finisher wins
    ended = store.get(task.id)
    assert ended is not None and ended.terminal and not store.cancel(task.id)
    assert store.update(task.id, lambda t: t) is None  # terminal: changed only when told it may be
    noted = store.update(task.id, lambda t: Task(**{**t.__dict__, "meta": {"delivery": "sent"}}), ended=True)
    assert noted is not None and noted.state == ended.state and noted.meta == {"delivery": "sent"}
    short = Task(id=new_id(), tool="t", version="1.0.0", dialect="opal", caller="carol", digest="d", ttl=1.0)
    store.put(short)
    time.sleep(1.2)
    assert store.get(short.id) is None and [t.id for t in store.of_caller("carol")] == [task.id]


def test_the_callbacks_waiting_behave_alike_in_both_stores(state: StateStore) -> None:
    queue, first, second = CallbackQueue(state), new_id(), new_id()
    now = time.time()
    queue.add(Entry(first, "opal", 1), now - 1)
    queue.add(Entry(first, "opal", 9), now - 1, keep=True)  # one is waiting: kept as it is
    queue.add(Entry(second, "opal", 2), now + 60)
    assert queue.next_due([first, second]) == now - 1 and queue.next_due([second]) == now + 60
    assert queue.take(now, 10) == [Entry(first, "opal", 1)]
    assert queue.take(now, 10) == []  # taken: out of the others' reach for its lease
    queue.done(first)
    queue.done(second)
    assert queue.next_due([first, second]) is None


def test_a_refused_hold_changes_nothing(state: StateStore) -> None:
    """A delivery of a task whose run holds the lease takes nothing and moves nothing: the lease
    and the job kept in the outbox stay the run's (taking the lease and keeping the job is one
    step: the job is kept only when the lease is taken)."""
    running, again, task_id = outbox(state), outbox(state), new_id()
    assert running.hold(task_id, '{"job": "running"}', 30)
    due = state.next_due(OUTBOX, [task_id + RUNNING])
    assert not again.hold(task_id, '{"job": "again"}', 60)
    assert state.next_due(OUTBOX, [task_id + RUNNING]) == due
    again.let_go(task_id)  # its run never started: it lets go of nothing
    assert state.exists(lease_key(task_id)) and kept_jobs(state, task_id) == [
        (task_id + RUNNING, b'{"job": "running"}')]
    running.let_go(task_id)
    assert not state.exists(lease_key(task_id)) and kept_jobs(state, task_id) == []


def test_a_run_that_stalled_past_its_lease_never_takes_it_back(state: StateStore,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """A run that stalled longer than its lease (a pause, a stop of its process) while the task
    was delivered again and run elsewhere: its late renewal and its end leave the new run's lease
    and kept job alone."""
    stalled, later, task_id = outbox(state), outbox(state), new_id()
    assert stalled.hold(task_id, '{"job": "stalled"}', 0.3)
    time.sleep(0.45)  # lapsed: the task is sent again, and another run takes it
    assert later.hold(task_id, '{"job": "later"}', 30)
    stalled.renew({task_id: None}, 30)  # too late: not its lease any more
    stalled.renew({task_id: None}, 30)  # nor the next time its process renews what it runs
    stalled.let_go(task_id)
    assert state.exists(lease_key(task_id))  # still the later run's
    assert kept_jobs(state, task_id) == [(task_id + RUNNING, b'{"job": "later"}')]
    assert "lost its lease" in caplog.text
    streamed = new_id()  # a call run here without a run of the outbox's (a streamed call): by its own owner
    assert TaskStore(state).take_lease(streamed, "streamed-run", 0.3)
    assert later.renew({task_id: None, streamed: "streamed-run"}, 30) == set()
    time.sleep(0.45)
    assert state.exists(lease_key(streamed))  # renewed for 30 s
    taken = new_id()  # a streamed call whose lease lapsed and another took: left alone, reported lost
    assert state.lease(lease_key(taken), "another", 30)
    assert later.renew({taken: "stalled-run"}, 30) == {taken}
    assert state.release(lease_key(taken), "another")  # still the other's
    later.let_go(task_id)
    assert not state.exists(lease_key(task_id)) and kept_jobs(state, task_id) == []


def test_the_thread_engines_and_a_streamed_calls_leases_are_their_runs_own(
        state: StateStore, caplog: pytest.LogCaptureFixture) -> None:
    """The leases a process takes for the runs it holds itself (the thread engine's, a streamed
    call's) have owners too: a run that stalled past its lease, which lapsed and another took,
    neither renews it (overwriting the other's) nor lets it go; a run still holding its own renews it."""
    store = TaskStore(state)
    watcher = CancelWatcher(store, lease=30.0)
    stalled, alive = new_id(), new_id()
    watcher.hold(stalled)
    watcher.hold(alive)
    assert store.held(stalled) and store.held(alive)
    assert CancelWatcher(store).renewer({alive: "not-its-owner"}, 30) == {alive}  # another's: not renewed
    state.delete(lease_key(stalled))  # lapsed while its run stalled...
    assert state.lease(lease_key(stalled), "another-run", 30)  # ...and another run took it
    watcher._renewed = 0.0  # its renewal is due now
    watcher.renew()
    assert f"the run of task {stalled} lost its lease" in caplog.text
    assert state.release(lease_key(stalled), "another-run")  # still the other's: never overwritten
    assert state.lease(lease_key(stalled), "another-run", 30)
    watcher._renewed = 0.0
    watcher.renew()  # renews it no more
    watcher.release(stalled)
    assert state.release(lease_key(stalled), "another-run")
    assert store.held(alive)
    watcher.release(alive)


class Broker:
    """What the outbox's publisher sent (standing in for Celery's broker, which is not what is tested)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, job: dict[str, Any]) -> None:
        self.sent.append(str(job["task"]))


def test_a_busy_publisher_still_sends_the_jobs_left_due(state: StateStore) -> None:
    """A web worker that accepts calls without a pause (its publisher never waits for a job of its
    own) still sends, within ``grace / 3`` seconds, the jobs another process left due (it died
    before publishing, or its publish failed)."""
    broker = Broker()
    box = Outbox(state, TaskStore(state), cast(CeleryEngine, broker), grace=0.6)

    def accept(calls: int) -> None:  # calls accepted one after another
        for _ in range(calls):
            task = Task(id=new_id(), tool="t", version="1.0.0", dialect="opal", caller=None, digest="d")
            box.keep(task, {"task": task.id})

    busy = time.monotonic() + 0.5
    while time.monotonic() < busy:
        accept(20)
    left, before = new_id(), len(broker.sent)
    state.schedule(OUTBOX, left, json.dumps({"task": left}).encode(), time.time() - 1)  # due already
    deadline = time.monotonic() + 3
    while left not in broker.sent and time.monotonic() < deadline:
        accept(20)
    assert left in broker.sent, f"not sent while busy ({len(broker.sent) - before} own jobs sent meanwhile)"
    assert len(broker.sent) - before > 1  # busy with its own meanwhile


# -- what the previous release left in Redis ---------------------------------------------------------


def test_records_the_previous_release_wrote_in_redis_are_read(redis_url: str) -> None:  # noqa: F811
    """Written with a raw client as the previous release's ``RedisTaskStore`` wrote them (its Lua
    script ``_PUT``, its run count, stop request and lease), read through the one store."""
    import redis

    client = redis.Redis.from_url(redis_url + "/7")
    store = TaskStore(RedisStore(redis_url + "/7"))
    working, ended, now = new_id(), new_id(), time.time()
    old = {"id": working, "tool": "refund", "version": "1.0.0", "dialect": "opal", "caller": "dave", "digest": "d",
           "state": "working", "created": now - 5, "updated": now - 5, "ttl": 3600.0, "message": None, "result": None,
           "meta": {"then": "deliver", "lease": True}}
    done = {**old, "id": ended, "state": "completed", "created": now - 3, "result": {"status": "success",
                                                                                     "value": {"n": 1}}}
    for record in (old, done):
        client.set(PREFIX + str(record["id"]), json.dumps(record, separators=(",", ":")), ex=3600)
        client.zadd(f"{PREFIX}caller:dave", {str(record["id"]): float(record["created"])})  # type: ignore[arg-type]
    client.expire(f"{PREFIX}caller:dave", 3600)
    client.incr(f"{PREFIX}{working}:runs")
    client.set(f"{PREFIX}{working}:cancel", b"1", ex=3600)
    client.set(f"{PREFIX}{working}:lease", b"1", px=30_000)
    task = store.get(working)
    assert task is not None and task.state == "working" and task.meta == {"then": "deliver", "lease": True}
    finished = store.get(ended)
    assert finished is not None and finished.result == TaskResult(status="success", value={"n": 1})
    assert [t.id for t in store.of_caller("dave")] == [ended, working]
    assert store.claim(working) == 2 and store.cancelling(working) and store.held(working)
    # a run of this release does not take the lease the previous release's run holds
    assert not outbox(store.state).hold(working, "{}", 30)
    assert store.finish(working, "completed", TaskResult(status="success", value=2))
    assert not store.finish(ended, "failed")
    # and what this release writes, the previous one reads: the same keys and JSON
    fresh = Task(id=new_id(), tool="t", version="1.0.0", dialect="opal", caller="dave", digest="d")
    store.put(fresh)
    assert json.loads(client.get(PREFIX + fresh.id) or b"") == json.loads(fresh.to_json())
    assert client.zscore(f"{PREFIX}caller:dave", fresh.id) == fresh.created
    assert 3590 < client.ttl(PREFIX + fresh.id) <= 3600


def test_callbacks_an_earlier_version_left_waiting_in_redis_are_sent(redis_url: str) -> None:  # noqa: F811
    """The callbacks' due list of development versions of 0.2.0 kept its entries in a hash of
    its own (``<QUEUE>:entries``): an entry waiting there at an upgrade is still taken."""
    import redis

    client = redis.Redis.from_url(redis_url + "/7")
    task_id = new_id()
    client.hset(f"{QUEUE}:entries", task_id, json.dumps([task_id, "opal", 3]))
    client.zadd(QUEUE, {task_id: time.time() - 1})
    queue = CallbackQueue(RedisStore(redis_url + "/7"))
    assert queue.take(time.time(), 100) == [Entry(task_id, "opal", 3)]
    queue.done(task_id)
    assert client.zscore(QUEUE, task_id) is None and not client.hexists(f"{QUEUE}:entries", task_id)


# -- what an accepted call costs ------------------------------------------------------------------------


def test_an_accepted_celery_call_costs_two_redis_round_trips(celery_side: CelerySide, redis_url: str,  # noqa: F811
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted on the request's own thread (the outbox's publisher sends the job to the broker on
    its own): the job kept in the outbox, then the record with its caller's index."""
    pytest.importorskip("celery")
    import redis.connection
    from celery import Celery

    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def report(n: int) -> dict[str, int]:
        """A report."""
        return {"n": n}

    url = redis_url + "/8"
    app = Flask("round_trips")
    app.config.update(TESTING=True, SECRET_KEY="round-trips", TOOLDISCOVERY_DIALECTS=["opal"],
                      TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"], TOOLDISCOVERY_TASK_ENGINE="celery",
                      TOOLDISCOVERY_STATE_STORAGE_URI=url)
    app.extensions["celery"] = Celery(app.name, broker=url)
    discovery.init_app(app)
    client = celery_side.web(app).test_client()  # its tasks stopped after the test
    here = threading.get_ident()
    sent: list[Any] = []
    send = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        if threading.get_ident() == here:
            sent.append(command)
        send(self, command, check_health)

    body = {"parameters": {"n": 1}, "async_callback": {"url": "http://127.0.0.1:9/cb"}}
    for _ in range(3):  # the connections made and the scripts loaded: what every later call finds
        assert client.post("/opal/tools/report", json=body).status_code == 202
    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    counts = []
    for _ in range(3):
        sent.clear()
        assert client.post("/opal/tools/report", json=body).status_code == 202
        counts.append(len(sent))
    assert counts == [2, 2, 2], sent


def test_a_worker_whose_memory_holds_all_the_records_it_may_refuses_a_task_for_now(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """In process memory a full store never forgets a live record to make room: a new task is
    refused with 503 and Retry-After, and accepted again once there is room."""
    from flask_tooldiscovery.tasks.runner import tasks_of

    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def report(n: int) -> dict[str, int]:
        """A report."""
        return {"n": n}

    app = Flask("full_memory")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"])
    discovery.init_app(app)
    state = cast(MemoryStore, tasks_of(app).store.state)
    monkeypatch.setattr(state, "capacity", len(state))
    body = {"parameters": {"n": 1}, "async_callback": {"url": "http://127.0.0.1:9/cb"}}
    refused = app.test_client().post("/opal/tools/report", json=body)
    assert refused.status_code == 503 and refused.headers["Retry-After"], refused.data
    assert "Too many tasks" in refused.get_data(as_text=True)
    monkeypatch.setattr(state, "capacity", len(state) + 100)
    assert app.test_client().post("/opal/tools/report", json=body).status_code == 202
