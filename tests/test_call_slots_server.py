"""Defaults that hold under slow tools, under a real gunicorn with nothing about call slots or
deadlines set: the call slots leave a thread of every worker for discovery and health, whatever
``--threads`` is, and a tool that would run forever is answered at the default deadline.

Outcomes only (answered, refused, how); every wait is bounded, so a regression fails instead of
hanging."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from flask_tooldiscovery.settings import SPECS

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


def test_eleven_calls_that_would_run_forever_leave_the_server_answering(tmp_path) -> None:
    """The issue's attack: 11 calls of a tool that would run for hours, on one gthread worker with
    4 threads. Each running call is answered at the deadline; the others are refused as busy."""
    spec = "tests.apps.slots_app:create_app(default_timeout=1)"
    with gunicorn(spec, tmp_path / "gunicorn.log", threads=4) as base, \
            concurrent.futures.ThreadPoolExecutor(11) as pool:
        answers = list(pool.map(lambda _: opal(base, "forever", timeout=30), range(11)))
        timed_out = [a for a in answers if a.status_code == 500]
        assert len(timed_out) == 3 and all("did not finish within 1 seconds" in a.json()["error"] for a in timed_out)
        for answer in answers:
            if answer.status_code != 500:
                assert_busy(answer)
        # The three tools still run (Python cannot stop a thread) and keep their slots: calls
        # are refused, discovery and health answer.
        assert_busy(opal(base, "forever", timeout=10))
        assert_discovery_answers(base)


def test_unset_a_sync_worker_answers_a_tool_that_would_run_forever_at_the_default_deadline(tmp_path) -> None:
    """Nothing set, the sync worker (one request at a time): the call is answered at the shipped
    default deadline, then the worker answers discovery while the tool still runs, and refuses the
    next call as busy (the tool holds the worker's one call slot)."""
    default = next(spec.default for spec in SPECS if spec.name == "DEFAULT_TIMEOUT")
    with gunicorn("tests.apps.slots_app:create_app()", tmp_path / "gunicorn.log", worker_class="sync",
                  threads=1) as base:
        answer = opal(base, "forever", timeout=default + 30)
        assert answer.status_code == 500
        assert answer.json()["error"] == f"The tool did not finish within {default:g} seconds."
        assert answer.json()["can_retry"] is True
        assert_discovery_answers(base)
        assert_busy(opal(base, "forever", timeout=10))
