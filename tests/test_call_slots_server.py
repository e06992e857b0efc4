"""Defaults that hold under slow tools, under a real gunicorn with nothing about call slots or
deadlines set: the call slots leave a thread of every worker for discovery and health, whatever
``--threads`` is, and a sync tool past the default deadline is answered with what it did.

Outcomes only (answered, refused, how); every wait is bounded, so a regression fails instead of
hanging."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from .conftest import free_port
from .test_deploy import ROOT, stop, wait_until_up

#: The shipped configuration, whose post_fork hook tells the app gunicorn's threads (its bind,
#: workers and threads are overridden on the command line, as gunicorn lets a command line do).
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"

pytestmark = pytest.mark.slow

DISCOVERY = ("/opal/discovery", "/oxp/health", "/oxp/tools", "/api/v1/tools", "/explorer/tools")


@contextlib.contextmanager
def gunicorn(app_spec: str, log: Path, *, worker_class: str = "gthread", threads: int = 4) -> Iterator[str]:
    """``app_spec`` under one gunicorn worker on a free port with the shipped configuration file
    (its output in ``log``): its base URL."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "--workers", "1",
             "--worker-class", worker_class, "--threads", str(threads), "--bind", f"127.0.0.1:{port}", app_spec],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/oxp/health", proc, timeout=60)
        yield base
    finally:
        stop(proc)
        with contextlib.suppress(ProcessLookupError):  # a worker whose threads never ended outlives its master
            os.killpg(proc.pid, signal.SIGKILL)


def opal(base: str, tool: str, timeout: float = 60) -> requests.Response:
    return requests.post(f"{base}/opal/tools/{tool}", json={"parameters": {}}, timeout=timeout)


def assert_discovery_answers(base: str) -> None:
    for path in DISCOVERY:
        assert requests.get(base + path, timeout=10).status_code == 200, path


def assert_busy(answer: requests.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "1" and answer.json()["can_retry"] is True


@pytest.mark.parametrize("threads", [2, 4])
def test_slow_calls_leave_discovery_answering_and_the_excess_is_refused_as_busy(tmp_path, threads) -> None:
    gate = tmp_path / "gate"
    log = tmp_path / "gunicorn.log"
    calls = threads + 4  # more than the worker has threads
    running = threads - 1  # the default: one thread kept free
    spec = f"tests.apps.slots_app:create_app(gate={str(gate)!r}, call_log='text')"
    with gunicorn(spec, log, threads=threads) as base, concurrent.futures.ThreadPoolExecutor(calls) as pool:
        try:
            futures = [pool.submit(opal, base, "wait_for_gate") for _ in range(calls)]
            refused: set[concurrent.futures.Future[requests.Response]] = set()
            for future in concurrent.futures.as_completed(futures, timeout=30):  # the gate is shut: only refusals
                refused.add(future)
                if len(refused) == calls - running:
                    break
            for future in refused:
                assert_busy(future.result())
            waiting = [f for f in futures if f not in refused]
            assert len(waiting) == running and not any(f.done() for f in waiting)
            # Every thread but one holds a call behind the gate: discovery and health still answer.
            assert_discovery_answers(base)
            assert_busy(opal(base, "wait_for_gate", timeout=10))
        finally:
            gate.touch()
        assert [f.result().status_code for f in waiting] == [200] * running
        assert opal(base, "wait_for_gate", timeout=10).status_code == 200  # the slots are free again
    said = [line for line in log.read_text().splitlines() if "at once per worker process" in line]
    assert len(said) == 1 and f"at most {running} tool" in said[0] and f"{threads} threads" in said[0], said


def test_eleven_calls_past_their_deadline_leave_the_server_answering_and_are_told_the_truth(tmp_path) -> None:
    """The issue's attack, 11 calls of a slow sync tool on one gthread worker with 4 threads and a
    default deadline of 1 s: three run and the rest are refused as busy at once; discovery and
    health answer. A sync tool cannot be stopped, so nobody is told a running call failed: the three
    callers wait, and once the tools end each is answered with what its tool did; the log says
    each overran its deadline."""
    gate, log = tmp_path / "gate", tmp_path / "gunicorn.log"
    spec = f"tests.apps.slots_app:create_app(gate={str(gate)!r}, default_timeout=1)"
    with gunicorn(spec, log, threads=4) as base, concurrent.futures.ThreadPoolExecutor(11) as pool:
        try:
            futures = [pool.submit(opal, base, "past_deadline") for _ in range(11)]
            refused = []
            for future in concurrent.futures.as_completed(futures, timeout=30):
                refused.append(future)
                if len(refused) == 8:
                    break
            for future in refused:
                assert_busy(future.result())
            time.sleep(1.5)  # past the deadline: still running, and no caller was answered
            running = [f for f in futures if f not in refused]
            assert len(running) == 3 and not any(f.done() for f in running)
            assert_busy(opal(base, "past_deadline", timeout=10))
            assert_discovery_answers(base)
        finally:
            gate.touch()
        answers = [f.result() for f in running]
    assert [(a.status_code, a.json()) for a in answers] == [(200, "finished")] * 3
    overran = [line for line in log.read_text().splitlines() if "past its deadline of 1" in line]
    assert len(overran) == 3, overran


def test_a_sync_worker_answers_a_call_past_the_default_deadline_with_what_the_tool_did(tmp_path) -> None:
    """The sync worker (one request at a time), a deadline of 1 s and a tool that takes longer:
    the answer is the tool's own, then the worker answers discovery again."""
    gate = tmp_path / "gate"
    with gunicorn(f"tests.apps.slots_app:create_app(gate={str(gate)!r}, default_timeout=1)",
                  tmp_path / "gunicorn.log", worker_class="sync", threads=1) as base:
        opener = threading.Timer(2.0, gate.touch)
        opener.start()
        try:
            answer = opal(base, "past_deadline", timeout=60)
        finally:
            opener.cancel()
        assert (answer.status_code, answer.json()) == (200, "finished")
        assert_discovery_answers(base)
