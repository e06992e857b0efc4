"""Callbacks of ended tasks, in process over real loopback sockets: a callback host that accepts
connections and never answers (a tarpit) holds none of the task engine's threads, honest calls
are still accepted and their results delivered. Once a host failed enough attempts in a row its
circuit opens and the callbacks due to it are postponed, not given up: a receiver that was down
and comes back gets every one of them (a few at once), one down for longer than the callbacks'
retry window gets them given up with that reason, and past the host's backlog the newest are given
up at once; each task's record says what became of its callback and after how many attempts. A
graceful stop lets the tasks it accepted end and sends their callbacks, and logs what it left."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.tasks.runner import tasks_of

from .loopback import LoopbackServer, QuietHandler, Receiver, Tarpit, free_port
from .test_tasks import wait_for


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture
def tarpit() -> Iterator[Tarpit]:
    t = Tarpit()
    yield t
    t.close()


def app_with(tmp_path: Path, **config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def report(n: int, gate: str = "") -> dict:
        """Answer, once the gate file exists (when one is named; 20 s at most)."""
        deadline = time.monotonic() + 20
        while gate and not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return {"n": n}

    app = Flask("task_callbacks")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"],
                      **config)
    discovery.init_app(app)
    return app


def accept(app: Flask, url: str, **parameters: Any) -> str:
    answer = app.test_client().post("/opal/tools/report", json={"parameters": parameters,
                                                                "async_callback": {"url": url}})
    assert answer.status_code == 202, answer.data
    task_id: str = answer.get_json()["task_id"]
    return task_id


def delivery(app: Flask, task_id: str) -> dict[str, Any]:
    """What task ``task_id``'s record says of its callback (``meta["delivery"]``)."""
    task = tasks_of(app).store.get(task_id)
    return dict(task.meta.get("delivery") or {}) if task is not None else {}


def states(app: Flask, task_ids: list[str]) -> list[str]:
    return [str(delivery(app, t).get("state")) for t in task_ids]


class Comeback(LoopbackServer):
    """A receiver started on ``port`` (where nothing listened before): records each POST by path,
    answers 204 after a short while, and how many it answered at once at most (``peak``)."""

    def __init__(self, port: int) -> None:
        self.posts: dict[str, list[bytes]] = {}
        self.live = self.peak = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.live += 1
                    receiver.peak = max(receiver.peak, receiver.live)
                time.sleep(0.05)
                with receiver.lock:
                    receiver.live -= 1
                    receiver.posts.setdefault(self.path, []).append(body)
                self.reply(204)

        super().__init__(Handler, port)


def test_a_tarpit_holds_no_task_thread_and_its_callbacks_wait_for_its_probe(
        receiver: Receiver, tarpit: Tarpit, tmp_path: Path) -> None:
    app = app_with(tmp_path, TOOLDISCOVERY_TASK_WORKERS=1, TOOLDISCOVERY_TASK_BACKLOG=2,
                   TOOLDISCOVERY_OPAL_CALLBACK_TIMEOUT=1, TOOLDISCOVERY_OPAL_CALLBACK_RETRIES=0,
                   TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_FAILURES=2, TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_OPEN=60)
    trapped = []
    for i in range(30):  # one task thread, two waiting: callbacks that held it would be refused by now
        trapped.append(accept(app, f"{tarpit.url}?n={i}", n=i))
        time.sleep(0.01)
    honest = receiver.url()
    honest_id = accept(app, honest, n=99)
    [(_, body)] = receiver.wait(honest)
    assert json.loads(body) == {"content": {"n": 99}, "content_type": "application/json"}
    wait_for(lambda: all(s in ("given_up", "postponed") for s in states(app, trapped)), 30)
    given = [delivery(app, t) for t in trapped]
    tried, waiting = [d for d in given if d["attempts"]], [d for d in given if d["state"] == "postponed"]
    # two at a time to one host, each given up after its one attempt (RETRIES=0); then its circuit
    # opens and the others wait for its probe, a minute away, no attempt made, no thread held
    assert len(tried) >= 2 and all(d["state"] == "given_up" and "timed out" in d["error"] for d in tried), tried
    assert len(waiting) >= 20 and all(d["attempts"] == 0 for d in waiting), given
    assert all("failed 2 attempts in a row" in d["error"] and "circuit is open" in d["error"] for d in waiting)
    assert all(d["until"] > time.time() + 50 for d in waiting), waiting
    wait_for(lambda: delivery(app, honest_id).get("state") == "delivered", 10)
    assert delivery(app, honest_id)["attempts"] == 1


def test_a_receiver_down_then_back_gets_every_postponed_callback(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there yet: each attempt is refused
    app = app_with(tmp_path, TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_FAILURES=2,
                   TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_OPEN=0.3, TOOLDISCOVERY_TASK_CALLBACK_HOST_LIMIT=2)
    urls = [f"http://127.0.0.1:{port}/cb/{i}" for i in range(12)]
    ids = [accept(app, url, n=i) for i, url in enumerate(urls)]
    wait_for(lambda: states(app, ids).count("postponed") >= 6, 15)
    time.sleep(1.5)  # down for several open periods: each probe fails, the others wait again
    assert "given_up" not in states(app, ids) and "delivered" not in states(app, ids)
    waiting = [d for d in map(lambda t: delivery(app, t), ids) if d.get("state") == "postponed"]
    assert waiting and all("failed 2 attempts in a row" in d["error"] for d in waiting), waiting
    back = Comeback(port)
    try:
        wait_for(lambda: states(app, ids) == ["delivered"] * len(ids), 20)
        with back.lock:
            assert {path: len(bodies) for path, bodies in back.posts.items()} == {f"/cb/{i}": 1 for i in range(12)}
            assert [json.loads(back.posts[f"/cb/{i}"][0]) for i in range(12)] == [
                {"content": {"n": i}, "content_type": "application/json"} for i in range(12)]
            assert back.peak <= 2  # the host limit holds when the postponed ones go out
        assert all(delivery(app, t)["attempts"] >= 1 for t in ids)
    finally:
        back.close()


def test_a_receiver_down_past_the_retry_window_gets_its_callbacks_given_up_saying_why(
        receiver: Receiver, tmp_path: Path) -> None:
    app = app_with(tmp_path, TOOLDISCOVERY_OPAL_CALLBACK_RETRY_WINDOW=3, TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_FAILURES=2,
                   TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_OPEN=1)
    urls = [receiver.url(*[503] * 50) for _ in range(8)]  # answered 503, always
    ids = [accept(app, url, n=i) for i, url in enumerate(urls)]
    wait_for(lambda: "postponed" in states(app, ids), 15)  # its circuit opened: they wait for its probes
    wait_for(lambda: states(app, ids) == ["given_up"] * len(ids), 15)
    store = tasks_of(app).store
    window_ended = 0
    for task_id, url in zip(ids, urls, strict=True):
        record, ended = delivery(app, task_id), store.get(task_id)
        assert ended is not None
        assert record["attempts"] == len(receiver.received(url)), record  # what the record counts was sent
        # given up once its window ended (or its next attempt would come after that), not kept on; an
        # attempt waiting for its host's probe or room may come a moment after the window's end
        assert ended.updated + 0.5 <= record["at"] <= ended.updated + 3 + 3, record
        if "retry window" in record["error"]:
            window_ended += 1
            assert "failed 2 attempts in a row" in record["error"] and "(3 s after the task ended)" in record["error"]
        else:
            assert record["error"] == "HTTP 503 (no attempt left)", record
    assert window_ended >= 3


def test_past_a_hosts_backlog_the_newest_callbacks_are_given_up(receiver: Receiver, tmp_path: Path) -> None:
    app = app_with(tmp_path, TOOLDISCOVERY_OPAL_CALLBACK_RETRIES=0, TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_FAILURES=1,
                   TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_OPEN=60, TOOLDISCOVERY_TASK_CALLBACK_HOST_BACKLOG=3)
    first = accept(app, receiver.url(503), n=0)
    wait_for(lambda: delivery(app, first).get("state") == "given_up", 10)  # one 503: the host's circuit opens
    later, urls = [], [receiver.url() for _ in range(6)]
    for i, url in enumerate(urls):
        later.append(accept(app, url, n=i + 1))
        wait_for(lambda: delivery(app, later[-1]).get("state") in ("postponed", "given_up"), 10)
    records = [delivery(app, t) for t in later]
    assert [d["state"] for d in records] == ["postponed"] * 3 + ["given_up"] * 3, records
    assert all(d["attempts"] == 0 for d in records)
    assert all("3 callbacks already wait for it (TOOLDISCOVERY_TASK_CALLBACK_HOST_BACKLOG)" in d["error"]
               for d in records[3:]), records
    assert all(receiver.received(url) == [] for url in urls)


def test_a_graceful_stop_sends_the_callbacks_of_the_tasks_it_waited_for(
        receiver: Receiver, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = app_with(tmp_path)
    url, stuck_url = receiver.url(), receiver.url()
    ended = accept(app, url, n=1, gate=str(tmp_path / "gate"))
    stuck = accept(app, stuck_url, n=2, gate=str(tmp_path / "never"))
    time.sleep(0.2)
    threading.Timer(0.5, (tmp_path / "gate").touch).start()  # the first ends while the worker stops
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        tasks_of(app).stop(3.0)
    [(_, body)] = receiver.wait(url)
    assert json.loads(body) == {"content": {"n": 1}, "content_type": "application/json"}
    said = [r.getMessage() for r in caplog.records]
    assert any("stopping: 2 task(s)" in m and ended in m and stuck in m for m in said), said
    assert any("1 task(s) ended, 1 callback(s) sent while stopping" in m for m in said), said
    [left] = [r for r in caplog.records if "left to their lease" in r.getMessage()]
    assert left.levelname == "WARNING" and stuck in left.getMessage() and ended not in left.getMessage()
    refused = app.test_client().post("/opal/tools/report", json={"parameters": {"n": 3},
                                                                 "async_callback": {"url": receiver.url()}})
    assert refused.status_code == 503 and "Retry-After" in refused.headers  # a stopping worker takes no task
    (tmp_path / "never").touch()
