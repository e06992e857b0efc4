"""Callbacks of ended tasks, in process over real loopback sockets: a callback host that accepts
connections and never answers (a tarpit) holds none of the task engine's threads, honest calls
are still accepted and their results delivered, and once the tarpit failed enough attempts in a
row the callbacks waiting for it are given up on, which their records say. A graceful stop lets
the tasks it accepted end and sends their callbacks, and logs what it left."""

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

from .test_opal_async import Receiver
from .test_task_callbacks_servers import Tarpit
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


def test_a_tarpit_holds_no_task_thread_and_is_given_up_on(receiver: Receiver, tarpit: Tarpit, tmp_path: Path) -> None:
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
    store = tasks_of(app).store

    def delivery(task_id: str) -> dict[str, Any]:
        task = store.get(task_id)
        return dict(task.meta.get("delivery") or {}) if task is not None else {}

    wait_for(lambda: all(delivery(t).get("state") == "given_up" for t in trapped), 30)
    given = [delivery(t) for t in trapped]
    tried, untried = [d for d in given if d["attempts"]], [d for d in given if not d["attempts"]]
    assert len(tried) >= 2 and len(untried) >= 20, given  # two at a time to one host; then its circuit is open
    assert all("timed out" in d["error"] for d in tried), tried
    assert all("failed 2 attempts in a row" in d["error"] for d in untried), untried
    wait_for(lambda: delivery(honest_id).get("state") == "delivered", 10)
    assert delivery(honest_id)["attempts"] == 1


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
