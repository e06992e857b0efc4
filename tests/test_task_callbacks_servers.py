"""Callbacks under real servers in a hostile world: a graceful reload or stop of gunicorn
(``kill -HUP``, ``kill -TERM``) while Opal async calls run loses none of their callbacks, on the
thread engine and on Celery (a real Celery worker, a real redis-server), and says in its log what
it did; a callback host that accepts connections and never answers (a tarpit) holds hundreds of
callbacks while honest calls are still accepted and their results delivered; the callbacks it
holds wait in Redis (their records say so) and reach the host once it answers, from a new server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from flask_tooldiscovery.state.redis_store import RedisStore
from flask_tooldiscovery.tasks.callback_queue import CallbackQueue
from flask_tooldiscovery.tasks.records import TaskStore

from .celery_side import CelerySide, celery_side, effects, wait_for  # noqa: F401  (celery_side: a fixture)
from .loopback import Receiver, Tarpit, free_port
from .test_deploy import ROOT, wait_until_up
from .test_operating_server import GUNICORN_CONF, redis_url  # noqa: F401  (redis_url: a fixture)

pytestmark = pytest.mark.slow
WAIT = 60


class Gunicorn:
    """gunicorn with the shipped deploy/gunicorn.conf.py (its worker_exit hook), one gthread worker,
    its output in a file (read by :meth:`lines`)."""

    def __init__(self, app_spec: str, log: Path, env: dict[str, str] | None = None, graceful: int = 10) -> None:
        self.log = log
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "--workers", "1", "--worker-class", "gthread",
             "--threads", "8", "--graceful-timeout", str(graceful), "--bind", f"127.0.0.1:{port}", app_spec],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
            stdout=log.open("a"), stderr=subprocess.STDOUT)
        try:
            wait_until_up(self.base + "/oxp/health", self.proc, timeout=60)
        except Exception:
            self.stop()
            raise

    def lines(self) -> list[dict[str, Any]]:
        """The library's log lines (JSON)."""
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith('{"time"')]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def accept(base: str, tool: str, parameters: dict[str, Any], url: str) -> str:
    answer = requests.post(f"{base}/opal/tools/{tool}", timeout=30, json={
        "parameters": parameters, "async_callback": {"url": url, "tool_call_id": "tc-" + url[-6:]}})
    assert answer.status_code == 202, answer.text
    task_id: str = answer.json()["task_id"]
    return task_id


def said(lines: list[dict[str, Any]], level: str, words: str) -> list[str]:
    return [line["message"] for line in lines if line["level"] == level and words in line["message"]]


# -- a graceful reload or stop: the thread engine ------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["HUP", "TERM"])
def test_a_graceful_reload_or_stop_sends_the_callbacks_of_the_tasks_it_accepted(
        sig: signal.Signals, receiver: Receiver, tmp_path: Path) -> None:
    server = Gunicorn("tests.apps.opal_async_app:create_app(hosts='127.0.0.1', call_log='json')",
                      tmp_path / "gunicorn.log", graceful=10)
    try:
        urls = [receiver.url() for _ in range(3)]
        ids = [accept(server.base, "build_report", {"n": i, "gate": str(tmp_path / f"gate-{i}")}, url)
               for i, url in enumerate(urls)]
        stuck = accept(server.base, "build_report", {"n": 9, "gate": str(tmp_path / "never")}, receiver.url())
        time.sleep(0.5)  # all four are running, each waiting for its gate
        server.proc.send_signal(sig)  # HUP: a new worker; the old one stops gracefully. TERM: the server stops
        time.sleep(1.0)
        for i in range(3):
            (tmp_path / f"gate-{i}").touch()  # the three end while their worker stops
        for i, url in enumerate(urls):
            [(_, body)] = receiver.wait(url)
            assert json.loads(body) == {"content": {"n": i, "double": 2 * i}, "content_type": "application/json"}
        if sig == signal.SIGHUP:  # the new worker answers
            again = receiver.url()
            accept(server.base, "build_report", {"n": 5}, again)
            receiver.wait(again)
        wait_for(lambda: said(server.lines(), "WARNING", "left to their lease"), WAIT)
    finally:
        server.stop()
    lines = server.lines()
    [stopping] = said(lines, "INFO", "stopping: 4 task(s)")
    assert all(task_id in stopping for task_id in [*ids, stuck])
    [stopped] = said(lines, "INFO", "3 task(s) ended, 3 callback(s) sent while stopping")
    [left] = said(lines, "WARNING", "1 task(s) still running or waiting when the worker stopped are left to")
    assert stuck in left and not any(task_id in left for task_id in ids), (stopped, left)
    assert said(lines, "WARNING", "callback(s) not yet sent") == []


# -- a graceful reload or stop: Celery ------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["HUP", "TERM"])
def test_on_celery_a_reload_or_stop_of_gunicorn_and_of_the_celery_worker_loses_no_callback(
        sig: signal.Signals, receiver: Receiver, celery_side: CelerySide, tmp_path: Path) -> None:  # noqa: F811
    """The web side (gunicorn) and the Celery worker each stop gracefully mid-run: the callbacks of
    the tasks that ran are sent once each, by whichever process is left to send them."""
    celery_side.configure(TD_OUTBOX_GRACE="2")
    server = Gunicorn("tests.apps.celery_app:create_app()", tmp_path / "gunicorn.log", env=celery_side.env)
    worker = celery_side.worker()
    try:
        first, second = receiver.url(), receiver.url()
        accept(server.base, "recount", {"name": "A"}, first)
        wait_for(lambda: effects(tmp_path, "recount-A") == 1)  # running on the Celery worker
        server.proc.send_signal(sig)  # the web side reloads or stops while it runs
        if sig == signal.SIGTERM:
            server.proc.wait(30)
        (tmp_path / "gate-A").touch()
        [(_, body)] = receiver.wait(first)
        assert json.loads(body) == {"content": {"recounted": "A"}, "content_type": "application/json"}
        if sig == signal.SIGTERM:
            server = Gunicorn("tests.apps.celery_app:create_app()", tmp_path / "gunicorn-2.log", env=celery_side.env)
        accept(server.base, "recount", {"name": "B"}, second)
        wait_for(lambda: effects(tmp_path, "recount-B") == 1)
        worker.proc.send_signal(signal.SIGTERM)  # Celery's warm shutdown: the running task ends first
        time.sleep(1.0)
        (tmp_path / "gate-B").touch()
        worker.proc.wait(60)
        [(_, body)] = receiver.wait(second)
        assert json.loads(body) == {"content": {"recounted": "B"}, "content_type": "application/json"}
        time.sleep(3)
        assert len(receiver.received(first)) == 1 and len(receiver.received(second)) == 1
        assert effects(tmp_path, "recount-A") == 1 and effects(tmp_path, "recount-B") == 1  # nothing ran twice
    finally:
        server.stop()


# -- callback tarpits -----------------------------------------------------------------------------


def test_a_callback_tarpit_does_not_starve_honest_calls_and_its_callbacks_wait_in_redis_until_it_answers(
        receiver: Receiver, redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    """200 callbacks to a tarpit: honest calls are served meanwhile; once the tarpit failed 5
    attempts in a row its circuit opens and the callbacks still due to it are postponed, kept in
    Redis, untried. The server stops; where the tarpit was, a receiver starts; a new server started
    on the same Redis sends every postponed callback there."""
    tarpit = Tarpit()
    port = int(tarpit.url.split(":")[2].split("/")[0])
    app_spec = (f"tests.apps.opal_async_app:create_app(hosts='127.0.0.1', call_log='json', "
                f"TOOLDISCOVERY_STATE_STORAGE_URI={redis_url!r}, TOOLDISCOVERY_OPAL_CALLBACK_TIMEOUT=2, "
                f"TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_OPEN=3)")
    server = Gunicorn(app_spec, tmp_path / "gunicorn.log")
    store = TaskStore(RedisStore(redis_url))

    def delivery(task_id: str) -> dict[str, Any]:
        task = store.get(task_id)
        assert task is not None and task.state == "completed"
        return dict(task.meta.get("delivery") or {})

    try:
        trapped = [accept(server.base, "build_report", {"n": i}, tarpit.url + f"?n={i}") for i in range(200)]
        honest = [receiver.url() for _ in range(4)]
        for i, url in enumerate(honest):  # accepted, run and delivered while the tarpit holds the others
            accept(server.base, "build_report", {"n": i}, url)
        for i, url in enumerate(honest):
            [(_, body)] = receiver.wait(url)
            assert json.loads(body) == {"content": {"n": i, "double": 2 * i}, "content_type": "application/json"}
        quick = requests.post(f"{server.base}/opal/tools/quick", json={"parameters": {"n": 1}}, timeout=10)
        assert quick.status_code == 200 and quick.json() == {"n": 1}
        # the first few were tried (and timed out); the rest wait for the tarpit's probes, untried
        wait_for(lambda: all(delivery(t).get("state") in ("postponed", "failing", "given_up") for t in trapped), WAIT)
        records = [delivery(t) for t in trapped]
        untried = [d for d in records if d["state"] == "postponed" and d["attempts"] == 0]
        assert len(untried) > 150 and all("failed 5 attempts in a row" in d["error"] for d in untried), records[:5]
        assert all(d["attempts"] == 3 and "(no attempt left)" in d["error"]  # one tried 3 times (RETRIES=2)
                   for d in records if d["state"] == "given_up"), records
        queue = CallbackQueue(RedisStore(redis_url))
        assert all(queue.next_due([t]) is not None for t in trapped)  # each kept in Redis, due again
    finally:
        server.stop()
        tarpit.close()
    assert len(said(server.lines(), "WARNING", "failed 5 times in a row")) >= 1
    # the stopped server left them due at its host's next probe (not two minutes on, as taken by a dead one)
    assert all((queue.next_due([t]) or 0) < time.time() + 10 for t in trapped if delivery(t)["state"] != "given_up")
    back = Receiver(port)  # the host answers again, where the tarpit was
    again = Gunicorn(app_spec, tmp_path / "gunicorn-2.log")
    try:
        wait_for(lambda: all(delivery(t).get("state") in ("delivered", "given_up") for t in trapped), WAIT)
        records = [delivery(t) for t in trapped]
        assert all(d["attempts"] == 3 for d in records if d["state"] == "given_up"), records
        delivered = [i for i, d in enumerate(records) if d["state"] == "delivered"]
        assert len(delivered) > 180, records
        for i in delivered:
            bodies = back.received(f"{back.base}/cb?n={i}")
            assert bodies and json.loads(bodies[0][1]) == {"content": {"n": i, "double": 2 * i},
                                                          "content_type": "application/json"}, (i, bodies)
    finally:
        again.stop()
        back.close()
