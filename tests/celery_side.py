"""Celery on a real Redis, for the tests: the web side in process (``tests/apps/celery_app.py``'s
``create_app``, or an app a test builds) and Celery workers as processes of their own
(``celery -A tests.apps.celery_app:celery worker``), made by one fixture, :func:`celery_side`.

Its teardown stops, in this order, everything that uses the test's Redis, before the module's
``redis_url`` fixture stops the server: the workers (Celery's warm shutdown, ``SIGKILL`` after
15 s), then each web side's tasks (``Tasks.stop``: the engine, the callback sender and the
outbox's publisher). Celery keeps every app it was given alive to the end of the process (the
tasks an app declares stay in its finalizers, the last one made is its default app), so the
threads an app's tasks run for as long as the app lives would otherwise read a Redis that is gone
and log a ``ConnectionError`` for each look, through every test that follows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery.tasks.runner import tasks_of

from .test_deploy import ROOT

#: Seconds a test waits for what a worker does (a redelivery after a killed worker comes ~10 s later).
WAIT = 90
#: Seconds a web side's tasks are given to stop at teardown.
STOP = 10.0


def wait_for(check: Any, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def effects(folder: Path, kind: str) -> int:
    """How many side effects of ``kind`` the tools recorded in ``folder`` (``TD_EFFECTS``)."""
    return len(list((folder / kind).glob("*"))) if (folder / kind).exists() else 0


class Worker:
    """``celery -A tests.apps.celery_app:celery worker`` in a process group of its own."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tests.apps.celery_app:celery", "worker", "--pool", "prefork",
             "--concurrency", "1", "--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "INFO"],
            cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: "ready." in log.read_text() or self.proc.poll() is not None, 60)
        assert self.proc.poll() is None, log.read_text()[-3000:]

    def kill(self) -> None:
        """``kill -9`` of the whole worker (its main process and its child)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


class CelerySide:
    """One test's Celery: its settings (``TD_*`` environment variables, read by
    ``tests/apps/celery_app.py`` in process and in the workers), its web sides and its workers."""

    def __init__(self, redis_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.redis_url, self.folder = redis_url, folder
        self._monkeypatch = monkeypatch
        self.apps: list[Flask] = []
        self.workers: list[Worker] = []
        self.configure(TD_REDIS_URL=redis_url, TD_EFFECTS=str(folder))

    def configure(self, **values: str) -> None:
        """Set these ``TD_*`` values for the web sides and workers made from now on (undone after the test)."""
        for name, value in values.items():
            self._monkeypatch.setenv(name, value)

    @property
    def env(self) -> dict[str, str]:
        """The environment of a process started now (a worker, gunicorn)."""
        return {**os.environ, "PYTHONPATH": str(ROOT)}

    def web(self, app: Flask | None = None) -> Flask:
        """A web side: ``tests/apps/celery_app.py``'s app made now, or ``app`` (a test's own, on the
        Celery engine); its tasks are stopped at teardown."""
        if app is None:
            from tests.apps.celery_app import create_app

            app = create_app()
        self.apps.append(app)
        return app

    def worker(self, **values: str) -> Worker:
        """A Celery worker started now (``values``: ``TD_*`` for it alone), its log in the test's folder."""
        worker = Worker({**self.env, **values}, self.folder / f"worker-{len(self.workers) + 1}.log")
        self.workers.append(worker)
        return worker

    def close(self) -> None:
        """Stop the workers, then the web sides' tasks: nothing of this test reads its Redis after."""
        for worker in self.workers:
            worker.stop()
        for app in self.apps:
            tasks_of(app).stop(STOP)


@pytest.fixture
def celery_side(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CelerySide]:
    """A test's :class:`CelerySide` on the module's redis-server (request ``redis_url`` from
    ``tests/test_operating_server.py`` in the module), stopped in order after the test."""
    pytest.importorskip("celery")
    side = CelerySide(redis_url, tmp_path, monkeypatch)
    try:
        yield side
    finally:
        side.close()


__all__ = ["STOP", "WAIT", "CelerySide", "Worker", "celery_side", "effects", "wait_for"]
