"""Tasks: what accepting one costs, what reading one costs, and what waiting ones hold.

In process, on a redis-server of its own (started here on a free port, stopped after):

* an Opal call answered synchronously vs the same call accepted as a task (``202``) with the
  Celery engine (the message sent to the Redis broker; no worker runs it) and with the thread
  engine;
* reading a task's record from the Redis store (``tasks/get``'s cost) beside that plain call;
* the read with 10 and with 10,000 records in the store;
* the web process's memory after accepting 2,000 Celery tasks that no worker has taken.

Microseconds per request, the best of interleaved rounds. Run: ``python bench/bench_tasks.py``
(needs redis-server and the celery extra). bench/RESULTS.rst ("Tasks") records a run.

``python bench/bench_tasks.py --instructions`` counts instead: the machine instructions the web
process spends on one answered call and on one accepted call (cachegrind, as
``bench_inprocess.py --instructions``; Redis's own work is another process and not counted), which
the machine's load does not move; the wall time of an accept adds its Redis round trips.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
logging.disable(logging.CRITICAL)

from celery import Celery  # noqa: E402
from flask import Flask  # noqa: E402

from flask_tooldiscovery import ToolDiscovery  # noqa: E402
from flask_tooldiscovery.calls.outbox import OUTBOX  # noqa: E402
from flask_tooldiscovery.calls.tasks import RedisTaskStore, Task  # noqa: E402

ROUNDS, PER_ROUND = 9, 200


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def app_with(engine: str, redis_url: str) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def report(n: int) -> dict[str, int]:
        """A report."""
        return {"n": n}

    app = Flask(f"bench_{engine}")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"],
                      TOOLDISCOVERY_TASK_ENGINE=engine, TOOLDISCOVERY_STATE_STORAGE_URI=redis_url,
                      TOOLDISCOVERY_TASK_BACKLOG=100_000, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_OPAL_CALLBACK_RETRIES=0)
    if engine == "celery":
        celery = Celery(app.name, broker=redis_url)
        celery.conf.update(task_ignore_result=True)
        app.extensions["celery"] = celery
    discovery.init_app(app)
    return app


def request(app: Flask, body: dict[str, Any], status: int) -> Callable[[], None]:
    data = json.dumps(body).encode()
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/opal/tools/report", "SERVER_NAME": "127.0.0.1",
               "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1", "CONTENT_TYPE": "application/json",
               "CONTENT_LENGTH": str(len(data)), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr}
    seen: list[str] = []

    def start_response(line: str, headers: Any, exc_info: Any = None) -> None:
        seen[:] = [line]

    def one() -> None:
        import io

        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(data)
        answer = app(env, start_response)
        b"".join(answer)
        getattr(answer, "close", lambda: None)()
        assert seen[0].startswith(str(status)), seen

    return one


def thread_cpu(one: Callable[[], None], requests: int = 600) -> float:
    """CPU seconds of this thread per request of ``one`` (the best of three runs)."""
    for _ in range(50):
        one()
    runs = []
    for _ in range(3):
        start = time.thread_time()
        for _ in range(requests):
            one()
        runs.append((time.thread_time() - start) / requests)
    return min(runs)


def best(cases: dict[str, Callable[[], None]]) -> dict[str, float]:
    for one in cases.values():
        for _ in range(50):
            one()
    out = dict.fromkeys(cases, float("inf"))
    for _ in range(ROUNDS):
        for name, one in cases.items():
            start = time.perf_counter()
            for _ in range(PER_ROUND):
                one()
            out[name] = min(out[name], (time.perf_counter() - start) / PER_ROUND)
    return out


INSTRUCTION_CASES = {"answered": ({"parameters": {"n": 1}}, 200),
                     "accepted": ({"parameters": {"n": 1}, "async_callback": {"url": "http://127.0.0.1:9/never"}}, 202)}


def counted_run(case: str, requests: int) -> None:
    """One measured run of ``--instructions``: ``requests`` requests of ``case`` (after a warm-up)."""
    body, status = INSTRUCTION_CASES[case]
    one = request(app_with("celery", os.environ["BENCH_REDIS_URL"]), body, status)
    for _ in range(30):
        one()
    gc.collect()
    for _ in range(requests):
        one()


def instructions(case: str, url: str, requests: int = 300) -> float:
    counts = []
    for n in (0, requests):
        run = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
             sys.executable, __file__, "--requests", str(n), case],
            capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": "0", "BENCH_REDIS_URL": url})
        counts.append(int(re.findall(r"I\s+refs:\s+([\d,]+)", run.stderr)[-1].replace(",", "")))
    return (counts[1] - counts[0]) / requests


def main() -> None:
    if sys.argv[1:2] == ["--requests"]:
        counted_run(sys.argv[3], int(sys.argv[2]))
        return
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port, folder = free_port(), tempfile.mkdtemp()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        import redis

        deadline = time.monotonic() + 15
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        if sys.argv[1:2] == ["--instructions"]:
            counted = {case: instructions(case, url) for case in INSTRUCTION_CASES}
            for case, count in counted.items():
                print(f"opal call, {case:10s} {count:10.0f} instructions/request "
                      f"{count / counted['answered']:6.2f} x answered")
            return
        celery_app, thread_app = app_with("celery", url), app_with("thread", url)
        plain = {"parameters": {"n": 1}}
        accepted = {"parameters": {"n": 1}, "async_callback": {"url": "http://127.0.0.1:9/never"}}
        store = RedisTaskStore(url)
        probe = Task(id="probe", tool="report", version="1.0.0", dialect="opal", caller=None, digest="d")
        store.put(probe)
        times = best({
            "opal call, answered": request(celery_app, plain, 200),
            "opal call, accepted (celery)": request(celery_app, accepted, 202),
            "opal call, accepted (thread)": request(thread_app, accepted, 202),
            "task read (10 records)": lambda: store.get("probe"),
        })
        for i in range(10_000):
            store.put(Task(id=f"filler-{i}", tool="report", version="1.0.0", dialect="opal", caller="bench",
                           digest="d"))
        times["task read (10,000 records)"] = best({"read": lambda: store.get("probe")})["read"]
        base = times["opal call, answered"]
        print(f"{'case':34s} {'us':>8s} {'x answered call':>16s}")
        for name, seconds in times.items():
            print(f"{name:34s} {seconds * 1e6:8.1f} {seconds / base:16.2f}")
        # The request's own work: CPU time of the thread serving it (waits on Redis excluded, and
        # the Celery outbox's publisher, another thread, too); steadier than wall time under load.
        cpu = {name: thread_cpu(request(celery_app, body, status))
               for name, (body, status) in (("answered", (plain, 200)), ("accepted (celery)", (accepted, 202)))}
        print(f"\nrequest thread CPU: answered {cpu['answered'] * 1e6:.1f} us, accepted (celery) "
              f"{cpu['accepted (celery)'] * 1e6:.1f} us ({cpu['accepted (celery)'] / cpu['answered']:.2f}x)")
        one = request(celery_app, accepted, 202)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for _ in range(2000):
            one()
        outbox = redis.Redis.from_url(url)
        while outbox.zcard(OUTBOX):  # the publisher sends them to the broker after their 202s
            time.sleep(0.05)
        gc.collect()
        after = tracemalloc.take_snapshot()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
        print(f"\nweb process memory after 2,000 accepted celery tasks no worker took: {grown / 1024:+.1f} KiB "
              f"({grown / 2000:+.1f} bytes per task)")
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
