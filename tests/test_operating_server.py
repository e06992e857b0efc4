"""Operating under real servers: one rate limit shared by two gunicorn servers through a real Redis
(Debian's redis-server, started here on a free port and stopped after), and Prometheus metrics
added up across two gunicorn workers. Without redis-server the Redis tests skip locally, and fail
when CI is set."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from .loopback import REDIS_SERVER, RedisServer, free_port, redis_binary
from .test_deploy import ROOT, stop, wait_until_up

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of our own on 127.0.0.1 at a free port, without persistence."""
    missing = None if redis_binary() else f"no redis-server at {REDIS_SERVER}"
    try:
        import redis  # noqa: F401
    except ImportError:
        missing = missing or "the redis package is not installed (pip install -e '.[test]')"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"Redis tests cannot run in CI: {missing}")
        pytest.skip(missing)
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.close()


#: The shipped gunicorn configuration: its post_fork hook tells the app its workers and threads, as
#: in a deployment (the command line's options win over the file's).
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"


def start(app_spec: str, *, workers: int = 1, worker_class: str = "gthread", threads: int = 4,
          env: dict[str, str] | None = None, ready: str = "/oxp/health") -> tuple[str, subprocess.Popen]:
    """``app_spec`` under gunicorn on a free port, once a worker answers ``ready`` (the master
    listens before its workers have booted): its base URL and process (``stop`` it)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "--workers", str(workers),
         "--worker-class", worker_class, "--threads", str(threads), "--bind", f"127.0.0.1:{port}", app_spec],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + ready, proc, timeout=60)
    except Exception:
        stop(proc)
        raise
    return base, proc


@contextlib.contextmanager
def app_servers(factory: str, ready: str, **defaults: Any) -> Iterator[Callable[..., str]]:
    """``start(workers=1, **args)``: ``factory(**defaults, **args)`` (a ``module:function`` of an
    app factory) under gunicorn gthread, its base URL; every server started is stopped at the end."""
    procs: list[subprocess.Popen] = []

    def start_one(workers: int = 1, **args: Any) -> str:
        call = ", ".join(f"{k}={v!r}" for k, v in {**defaults, **args}.items())
        base, proc = start(f"{factory}({call})", workers=workers, ready=ready)
        procs.append(proc)
        return base

    try:
        yield start_one
    finally:
        for proc in procs:
            stop(proc)


@contextlib.contextmanager
def two_servers_of(app_spec: str, **options: Any) -> Iterator[tuple[str, str]]:
    """Two gunicorn servers of ``app_spec`` (``start``'s options); their base URLs; both stopped."""
    (first, one), (second, two) = start(app_spec, **options), start(app_spec, **options)
    try:
        yield first, second
    finally:
        stop(one)
        stop(two)


def opal(base: str, tool: str, **arguments: object) -> requests.Response:
    return requests.post(f"{base}/opal/tools/{tool}", json={"parameters": arguments}, timeout=10)


def mcp(base: str, tool: str) -> requests.Response:
    return requests.post(f"{base}/mcp", timeout=10, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}}})


def test_two_gunicorn_servers_share_one_limit_on_redis(redis_url) -> None:
    spec = f"tests.apps.operating_app:create_app(storage={redis_url + '/0'!r})"
    (first, one), (second, two) = start(spec), start(spec)
    try:
        served = []
        for i in range(5):  # five calls a minute, whichever server takes them
            r = opal(first if i % 2 == 0 else second, "limited")
            assert r.status_code == 200, r.text
            served.append(r.json()["pid"])
        assert len(set(served)) == 2  # two servers (two processes) answered
        for base in (first, second):
            refused = opal(base, "limited")
            assert refused.status_code == 429, refused.text
            assert refused.json()["can_retry"] is True
            seconds = int(refused.headers["Retry-After"])
            assert 1 <= seconds <= 60 and refused.json()["retry_after_ms"] == seconds * 1000
        over = mcp(second, "limited")  # the same counter in every dialect
        assert over.status_code == 200 and over.json()["result"]["isError"] is True
        assert over.headers["Retry-After"]
        assert opal(first, "pid").status_code == 200  # other tools are not limited
    finally:
        stop(one)
        stop(two)


def test_two_apps_in_process_share_a_limit_on_redis(redis_url) -> None:
    def app() -> Flask:
        d = ToolDiscovery()
        d.add_tool(lambda: "ok", name="twice", rate_limit_per_minute=2)
        a = Flask("shared")
        a.config.update(TESTING=True, TOOLDISCOVERY_RATELIMIT_STORAGE_URI=redis_url + "/1",
                        TOOLDISCOVERY_RATELIMIT_STRATEGY="moving-window")
        d.init_app(a)
        return a

    a, b = app().test_client(), app().test_client()
    assert a.post("/opal/tools/twice", json={}).status_code == 200
    assert b.post("/opal/tools/twice", json={}).status_code == 200
    assert a.post("/opal/tools/twice", json={}).status_code == 429
    assert b.post("/api/v1/tools/execute", json={"tool_name": "twice"}).status_code == 429


def test_metrics_add_up_across_two_gunicorn_workers(tmp_path) -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    folder = tmp_path / "prometheus"
    folder.mkdir()
    # threads=1: sync workers (with more threads gunicorn runs gthread, whose workers refuse calls past their slots)
    base, proc = start("tests.apps.operating_app:create_app(metrics=True)", workers=2, worker_class="sync",
                       threads=1, env={"PROMETHEUS_MULTIPROC_DIR": str(folder)})
    try:
        answers: list[requests.Response] = []
        with concurrent.futures.ThreadPoolExecutor(4) as pool:  # sync workers take one call each at a time
            for _ in range(20):  # batches until both workers have booted and taken calls
                answers += pool.map(lambda _: opal(base, "pid", seconds=0.3), range(4))
                if len({r.json()["pid"] for r in answers}) == 2:
                    break
        assert all(r.status_code == 200 for r in answers)
        pids = {r.json()["pid"] for r in answers}
        assert len(pids) == 2, pids  # both workers ran calls
        ran = len(answers)
        assert opal(base, "pid", seconds="slow").status_code == 400  # an invalid call, counted as such
        text = requests.get(f"{base}/metrics", timeout=10).text
    finally:
        stop(proc)
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for family in text_string_to_metric_families(text) for s in family.samples}
    labels = (("dialect", "opal"), ("tool", "pid"))
    assert values[("tooldiscovery_tool_calls_total", (*labels[:1], ("outcome", "success"), labels[1]))] == ran
    assert values[("tooldiscovery_tool_calls_total", (*labels[:1], ("outcome", "invalid"), labels[1]))] == 1
    assert values[("tooldiscovery_tool_call_duration_seconds_count", labels)] == ran + 1
    assert values[("tooldiscovery_tool_call_duration_seconds_sum", labels)] >= ran * 0.3
    assert values[("tooldiscovery_tool_calls_in_flight", labels)] == 0
