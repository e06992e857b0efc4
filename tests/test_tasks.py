"""Calls that outlive their request are tasks: a record readable from any worker, run by the app's
engine. With Celery (real worker processes, a real Redis) accepted work survives a worker killed
with ``kill -9``: a tool that is not idempotent never runs twice (its task ends ``interrupted``
and its caller is told so, once); an idempotent one runs again to completion. The thread engine
is bounded: past its backlog a new task is refused at once."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.state.memory import MemoryStore
from flask_tooldiscovery.state.redis_store import RedisStore
from flask_tooldiscovery.tasks.records import Task, TaskResult, TaskStore
from flask_tooldiscovery.tasks.runner import INTERRUPTED, tasks_of

from .celery_side import WAIT, CelerySide, celery_side, effects, wait_for  # noqa: F401  (celery_side: a fixture)
from .test_opal_async import Receiver
from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


# -- the stores ------------------------------------------------------------------------------


def stores(url: str) -> list[TaskStore]:
    return [TaskStore(MemoryStore()), TaskStore(RedisStore(url))]


def test_a_record_only_moves_forward_and_counts_its_runs(redis_url: str) -> None:  # noqa: F811
    for store in stores(redis_url):
        task = Task(id=os.urandom(8).hex(), tool="t", version="1.0.0", dialect="opal", caller="alice", digest="d")
        store.put(task)
        assert store.get(task.id) == task
        assert [store.claim(task.id), store.claim(task.id)] == [1, 2]
        assert store.cancel(task.id) and store.cancelling(task.id)
        assert store.finish(task.id, "completed", TaskResult(status="success", value=1))
        assert not store.finish(task.id, "failed", TaskResult(status="failure"))  # terminal: nobody moves it again
        ended = store.get(task.id)
        assert ended is not None and ended.state == "completed" and ended.result == TaskResult("success", value=1)
        assert not store.cancel(task.id)
        assert task.id in [t.id for t in store.of_caller("alice")] and store.of_caller("bob") == []
        assert store.get("no-such-task") is None


def test_concurrent_finishers_one_wins(redis_url: str) -> None:  # noqa: F811
    store = TaskStore(RedisStore(redis_url))
    task = Task(id=os.urandom(8).hex(), tool="t", version="1.0.0", dialect="opal", caller=None, digest="d")
    store.put(task)
    wins: list[bool] = []
    threads = [threading.Thread(target=lambda s=state: wins.append(store.finish(task.id, s)))
               for state in ["completed", "failed", "interrupted", "cancelled"] * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1


# -- the thread engine -------------------------------------------------------------------------


def test_the_thread_engine_refuses_past_its_backlog_at_once(receiver: Receiver, tmp_path: Path) -> None:
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def slow(name: str) -> dict:
        """Wait for a gate."""
        deadline = time.monotonic() + 30
        while not (tmp_path / name).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return {"done": name}

    app = Flask("thread_engine")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_TASK_WORKERS=1,
                      TOOLDISCOVERY_TASK_BACKLOG=1, TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"])
    discovery.init_app(app)
    client = app.test_client()
    urls = [receiver.url() for _ in range(3)]
    answers = [client.post("/opal/tools/slow", json={"parameters": {"name": f"g{i}"},
                                                     "async_callback": {"url": url}})
               for i, url in enumerate(urls)]
    assert [a.status_code for a in answers] == [202, 202, 503]  # one running, one waiting, one refused
    assert "Retry-After" in answers[2].headers
    first, second = (a.get_json()["task_id"] for a in answers[:2])
    store = tasks_of(app).store
    for i in range(2):
        (tmp_path / f"g{i}").touch()
    for i, url in enumerate(urls[:2]):
        assert json.loads(receiver.wait(url)[0][1]) == {"content": {"done": f"g{i}"},
                                                        "content_type": "application/json"}
    wait_for(lambda: all((t := store.get(i)) is not None and t.state == "completed" for i in (first, second)))
    time.sleep(0.5)
    assert receiver.received(urls[2]) == []


def test_a_cancelled_task_is_read_as_cancelled_whatever_its_message_says(receiver: Receiver,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancellation is the outcome's own mark, not its text: a reworded cancel message still ends
    the task cancelled (not failed)."""
    import asyncio

    from flask_tooldiscovery.runtime import invoke

    monkeypatch.setattr(invoke, "CANCELLED", "Stopped, as asked.")  # the text a later release might say
    discovery = ToolDiscovery()
    started = threading.Event()

    @discovery.tool(long_running=True)
    async def waits() -> dict:
        """Wait until cancelled."""
        started.set()
        await asyncio.sleep(30)
        return {"done": True}

    app = Flask("cancel_mark")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"],
                      TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"])
    discovery.init_app(app)
    url = receiver.url()
    answer = app.test_client().post("/opal/tools/waits", json={"parameters": {}, "async_callback": {"url": url}})
    assert answer.status_code == 202, answer.data
    task_id = answer.get_json()["task_id"]
    assert started.wait(WAIT)
    assert tasks_of(app).cancel(task_id)
    [(_, body)] = receiver.wait(url)
    assert json.loads(body)["message"] == "Stopped, as asked."
    wait_for(lambda: (t := tasks_of(app).store.get(task_id)) is not None and t.terminal)
    task = tasks_of(app).store.get(task_id)
    assert task is not None and task.state == "cancelled", task


def test_an_ended_task_goes_to_the_finisher_its_dialect_declares(receiver: Receiver) -> None:
    """The finisher is the dialect's own ``Dialect.finish_task`` (no global table by name): a dialect
    that declares another gets the ended task, and Opal's callback is then not sent."""
    import dataclasses

    from flask_tooldiscovery.dialects import load

    finished: list[tuple[str, str, int]] = []

    def finish(pipe: Any, task: Any, attempt: int) -> float | None:
        finished.append((pipe.name, task.state, attempt))
        return None if attempt >= 2 else 0.05  # a second attempt, a moment later

    discovery = ToolDiscovery()
    discovery.add_dialect(dataclasses.replace(load("flask_tooldiscovery.dialects.opal.dialect"), finish_task=finish))

    @discovery.tool(long_running=True)
    def quick(n: int) -> dict:
        """Answer at once."""
        return {"n": n}

    app = Flask("declared_finisher")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"])
    discovery.init_app(app)
    url = receiver.url()
    answer = app.test_client().post("/opal/tools/quick", json={"parameters": {"n": 1}, "async_callback": {"url": url}})
    assert answer.status_code == 202, answer.data
    wait_for(lambda: len(finished) == 2)
    assert finished == [("opal", "completed", 1), ("opal", "completed", 2)]
    time.sleep(0.3)
    assert receiver.received(url) == []  # Opal's own finisher was not the one declared


# -- Celery: real workers, kill -9 ---------------------------------------------------------------


def call(app: Flask, tool: str, parameters: dict[str, Any], url: str) -> str:
    answer = app.test_client().post(f"/opal/tools/{tool}", json={
        "parameters": parameters, "async_callback": {"url": url, "tool_call_id": "tc-1"}})
    assert answer.status_code == 202, answer.data
    task_id: str = answer.get_json()["task_id"]
    return task_id


def test_celery_runs_a_task_and_its_record_is_read_where_it_was_accepted(celery_side: CelerySide,  # noqa: F811
                                                                        receiver: Receiver) -> None:
    app = celery_side.web()
    celery_side.worker()
    url = receiver.url()
    task_id = call(app, "quick", {"n": 3}, url)
    [(_, body)] = receiver.wait(url)
    assert json.loads(body) == {"content": {"n": 3}, "content_type": "application/json"}
    task = tasks_of(app).store.get(task_id)
    assert task is not None and task.state == "completed" and task.result == TaskResult("success", value={"n": 3})


def test_the_message_celery_shows_and_logs_carries_no_credentials(celery_side: CelerySide,  # noqa: F811
                                                                 redis_url: str) -> None:  # noqa: F811
    """Celery logs, sends as events and shows (Flower) a message's ``argsrepr``: a task's job
    carries the caller's credentials, which must not be there."""
    import redis

    app = celery_side.web()
    answer = app.test_client().post("/opal/tools/quick", json={
        "parameters": {"n": 1}, "auth": {"provider": "acme", "credentials": {"access_token": "tok-SECRET-0451"}},
        "async_callback": {"url": "http://127.0.0.1:9/never", "tool_call_id": "tc-1"}})
    assert answer.status_code == 202, answer.data
    task_id = answer.get_json()["task_id"]
    broker = redis.Redis.from_url(redis_url)

    def sent() -> list[dict[str, Any]]:  # the publish follows the 202 (the outbox sends it)
        return [m for m in map(json.loads, broker.lrange("celery", 0, -1)) if m["headers"]["id"] == task_id]

    wait_for(sent)
    [message] = sent()
    assert "tok-SECRET-0451" not in json.dumps(message["headers"])
    assert message["headers"]["argsrepr"] == f"[call of task {task_id}]"


def test_an_accept_the_broker_never_heard_of_is_sent_later_and_runs_once(
        celery_side: CelerySide, redis_url: str, receiver: Receiver) -> None:  # noqa: F811
    """The 202 comes once the record and the job are in Redis; the publish follows. A web side whose
    broker is unreachable (or that died before publishing) leaves the job in the outbox, and a
    Celery worker's process sends it once due: the call runs once, its callback arrives once."""
    import redis

    from flask_tooldiscovery.tasks.outbox import OUTBOX

    JOBS = f"{OUTBOX}:values"  # the due list's values in Redis

    celery_side.configure(TD_OUTBOX_GRACE="1", TD_BROKER_URL="redis://127.0.0.1:9/0")  # nothing listens there
    app, folder = celery_side.web(), celery_side.folder
    url = receiver.url()
    task_id = call(app, "refund", {"order": "O"}, url)  # answered: the job is kept, not yet sent
    (folder / "gate-O").touch()
    store = redis.Redis.from_url(redis_url)
    assert store.zscore(OUTBOX, task_id) is not None and store.hget(JOBS, task_id) is not None
    celery_side.worker(TD_BROKER_URL="")
    [(_, body)] = receiver.wait(url)
    assert json.loads(body) == {"content": {"refunded": "O"}, "content_type": "application/json"}
    wait_for(lambda: store.zscore(OUTBOX, task_id) is None and store.hget(JOBS, task_id) is None)
    time.sleep(3)  # several more rounds of every publisher
    assert effects(folder, "refund-O") == 1 and len(receiver.received(url)) == 1
    task = tasks_of(app).store.get(task_id)
    assert task is not None and task.state == "completed"


def test_a_killed_worker_never_runs_a_tool_twice_the_caller_reads_interrupted(celery_side: CelerySide,  # noqa: F811
                                                                             receiver: Receiver) -> None:
    app, folder = celery_side.web(), celery_side.folder
    first = celery_side.worker()
    url = receiver.url()
    task_id = call(app, "refund", {"order": "A"}, url)
    wait_for(lambda: effects(folder, "refund-A") == 1)  # the refund happened; the tool waits for its gate
    first.kill()
    celery_side.worker()  # the task is delivered again to this one
    [(_, body)] = receiver.wait(url)
    problem = json.loads(body)
    assert problem["error"]["error_code"] == "INTERRUPTED" and problem["message"] == INTERRUPTED
    (folder / "gate-A").touch()
    time.sleep(2)
    assert effects(folder, "refund-A") == 1  # never a second refund
    assert len(receiver.received(url)) == 1  # one callback
    task = tasks_of(app).store.get(task_id)
    assert task is not None and task.state == "interrupted"


def test_a_killed_worker_runs_an_idempotent_tool_again_to_completion(celery_side: CelerySide,  # noqa: F811
                                                                     receiver: Receiver) -> None:
    app, folder = celery_side.web(), celery_side.folder
    first = celery_side.worker()
    url = receiver.url()
    task_id = call(app, "recount", {"name": "B"}, url)
    wait_for(lambda: effects(folder, "recount-B") == 1)
    first.kill()
    celery_side.worker()
    wait_for(lambda: effects(folder, "recount-B") == 2)  # delivered again and run again
    (folder / "gate-B").touch()
    [(_, body)] = receiver.wait(url)
    assert json.loads(body) == {"content": {"recounted": "B"}, "content_type": "application/json"}
    task = tasks_of(app).store.get(task_id)
    assert task is not None and task.state == "completed"


def test_a_stop_asked_on_the_web_side_reaches_the_call_running_on_a_celery_worker(
        celery_side: CelerySide, receiver: Receiver) -> None:  # noqa: F811
    app, folder = celery_side.web(), celery_side.folder
    celery_side.worker()
    url = receiver.url()
    task_id = call(app, "waits", {"name": "C"}, url)
    wait_for(lambda: effects(folder, "waits-C") == 1)  # running in the worker process
    assert tasks_of(app).cancel(task_id)  # this process only writes the stop mark in Redis
    [(_, body)] = receiver.wait(url)
    assert json.loads(body)["message"] == "The call was cancelled."
    task = tasks_of(app).store.get(task_id)
    assert task is not None and task.state == "cancelled"
    assert not tasks_of(app).cancel(task_id)  # over: nothing left to stop


def test_a_web_side_stopped_gracefully_reads_its_redis_no_more(celery_side: CelerySide,  # noqa: F811
                                                              redis_url: str) -> None:  # noqa: F811
    """While it lives, a web side on the Celery engine looks at the outbox and the callbacks waiting
    in Redis (and Celery keeps its app alive to the end of the process); once its tasks stopped (a
    graceful stop: gunicorn's worker_exit, the fixture's teardown) it sends Redis nothing more, so
    none of it is left reading a Redis that is gone."""
    import redis

    celery_side.configure(TD_OUTBOX_GRACE="1")  # the publisher looks for due jobs every third of a second
    app = celery_side.web()
    client = redis.Redis.from_url(redis_url)

    def commands_in(seconds: float) -> int:  # those Redis processed meanwhile, less the INFO counting them
        before = int(client.info("stats")["total_commands_processed"])
        time.sleep(seconds)
        return int(client.info("stats")["total_commands_processed"]) - before - 1

    assert commands_in(1.5) >= 3  # it looks
    tasks_of(app).stop(5)
    assert commands_in(1.5) == 0


def test_apps_in_one_process_each_run_their_own_tasks(celery_side: CelerySide,  # noqa: F811
                                                         redis_url: str) -> None:  # noqa: F811
    """Apps of one process, each with its Celery app and its store: a job delivered to one's
    Celery app runs through that app's tasks (its store, its tools), never another's."""
    import redis
    from celery import Celery

    from flask_tooldiscovery.tasks.engines import CELERY_TASK
    from flask_tooldiscovery.tasks.outbox import OUTBOX

    ran: list[str] = []
    apps = []
    for name, db in (("a", 1), ("b", 2), ("c", 3)):
        discovery = ToolDiscovery()
        discovery.add_tool(lambda who=name: ran.append(who) or {"by": who}, name="mark", description="Mark.",
                           long_running=True)
        app = Flask(name)
        app.config.update(TESTING=True, SECRET_KEY="two-apps", TOOLDISCOVERY_DIALECTS=["opal"],
                          TOOLDISCOVERY_TASK_ENGINE="celery", TOOLDISCOVERY_STATE_STORAGE_URI=f"{redis_url}/{db}",
                          TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"], TOOLDISCOVERY_TASK_OUTBOX_GRACE=3600)
        # a broker nothing listens at: the job stays in the outbox, where the test reads it
        app.extensions["celery"] = Celery(name, broker="redis://127.0.0.1:9/0", set_as_current=False)
        discovery.init_app(app)
        apps.append(celery_side.web(app))
    for app in apps:
        app.extensions["celery"].finalize()  # as a worker process does when it starts
    for app, db in zip(apps, (1, 2, 3), strict=True):
        answer = app.test_client().post("/opal/tools/mark", json={
            "parameters": {}, "async_callback": {"url": "http://127.0.0.1:9/never"}})
        assert answer.status_code == 202, answer.data
        task_id = answer.get_json()["task_id"]
        wire = json.loads(redis.Redis.from_url(f"{redis_url}/{db}").hget(f"{OUTBOX}:values", task_id))
        app.extensions["celery"].tasks[CELERY_TASK].apply(args=[wire])  # as its worker would run it
        task = tasks_of(app).store.get(task_id)
        assert task is not None and task.state == "completed", (app.name, task)
    assert ran == ["a", "b", "c"]


def test_the_celery_engine_needs_its_app_and_a_shared_store() -> None:
    from flask_tooldiscovery import SettingsError

    for config, message in (({}, "app.extensions\\['celery'\\]"),):
        app = Flask("no_celery")
        app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_TASK_ENGINE="celery", **config)
        with pytest.raises(SettingsError, match=message):
            ToolDiscovery().init_app(app)
    app = Flask("no_store")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_TASK_ENGINE="celery")
    app.extensions["celery"] = object()
    with pytest.raises(SettingsError, match="STATE_STORAGE_URI"):
        ToolDiscovery().init_app(app)
