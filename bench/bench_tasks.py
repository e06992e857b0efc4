"""Tasks: what accepting one costs, what reading one costs, and what waiting ones hold.

In process, on a redis-server of its own (started here on a free port, stopped after):

* an Opal call answered synchronously vs the same call accepted as a task (``202``) with the
  Celery engine (the message sent to the Redis broker; no worker runs it) and with the thread
  engine;
* reading a task's record from the Redis store (``tasks/get``'s cost) beside that plain call;
* the read with 10 and with 10,000 records in the store;
* the web process's memory after accepting 2,000 Celery tasks that no worker has taken.

Two measures of an accept against an answered call:

* latency, the issue's measure: one request at a time, as a client sees it, with the Celery
  outbox's publisher idle before each (it sends the previous job to the broker after that 202; it is
  waited for, not timed), in process and over HTTP to gunicorn (one gthread worker); the median
  and the 10th and 90th percentiles of interleaved requests;
* throughput: back-to-back requests, the best of interleaved rounds (the publisher's work for
  the previous jobs then shares the process with the requests timed).

Run: ``python bench/bench_tasks.py`` (needs redis-server and the celery extra).
bench/RESULTS.rst ("Tasks") records the runs.

``python bench/bench_tasks.py --instructions`` counts instead: the machine instructions the web
process spends on one answered call and on one accepted call (cachegrind, as
``bench_inprocess.py --instructions``; Redis's own work is another process and not counted), which
the machine's load does not move; the wall time of an accept adds its Redis round trips.
"""

from __future__ import annotations

import gc
import http.client
import json
import logging
import os
import re
import socket
import statistics
import subprocess
import sys
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
from flask_tooldiscovery.state.redis_store import RedisStore  # noqa: E402
from flask_tooldiscovery.tasks.outbox import OUTBOX, Outbox  # noqa: E402
from flask_tooldiscovery.tasks.records import Task, TaskStore  # noqa: E402
from flask_tooldiscovery.tasks.runner import EXTENSION_KEY  # noqa: E402
from tests.loopback import RedisServer, free_port  # noqa: E402

ROUNDS, PER_ROUND = 9, 200


def app_with(engine: str, redis_url: str) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def report(n: int) -> dict[str, int]:
        """A report."""
        return {"n": n}

    @discovery.tool
    def lookup(n: int) -> dict[str, int]:
        """A lookup (answered at once in every dialect: MCP's plain call)."""
        return {"n": n}

    app = Flask(f"bench_{engine}")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "mcp"], TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"],
                      TOOLDISCOVERY_TASK_ENGINE=engine, TOOLDISCOVERY_STATE_STORAGE_URI=redis_url,
                      TOOLDISCOVERY_TASK_BACKLOG=100_000, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_OPAL_CALLBACK_RETRIES=0,
                      SECRET_KEY="bench-tasks-secret-key")  # the Celery engine seals its jobs with it
    if engine == "celery":
        celery = Celery(app.name, broker=redis_url)
        celery.conf.update(task_ignore_result=True)
        app.extensions["celery"] = celery
    discovery.init_app(app)
    return app


MODERN = "2026-07-28"


def mcp_body(method: str, params: dict[str, Any], tasks: bool = True) -> dict[str, Any]:
    """A 2026-07-28 request of a client that declares the tasks extension (or not: ``tasks``)."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}} if tasks else {}}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}


def mcp_headers(method: str, name: str) -> dict[str, str]:
    return {"HTTP_MCP_PROTOCOL_VERSION": MODERN, "HTTP_MCP_METHOD": method, "HTTP_MCP_NAME": name,
            "HTTP_ACCEPT": "application/json, text/event-stream"}


def request(app: Flask, body: dict[str, Any], status: int, path: str = "/opal/tools/report",
            headers: dict[str, str] | None = None, answers: list[bytes] | None = None) -> Callable[[], None]:
    """One request of ``body`` to ``path`` (asserting its status; its body appended to ``answers``)."""
    data = json.dumps(body).encode()
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, **(headers or {}), "SERVER_NAME": "127.0.0.1",
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
        text = b"".join(answer)
        getattr(answer, "close", lambda: None)()
        assert seen[0].startswith(str(status)), seen
        if answers is not None:
            answers.append(text)

    return one


LATENCY_REQUESTS = 400


def latency(cases: dict[str, Callable[[], None]], idle: Callable[[], None]) -> dict[str, list[float]]:
    """Seconds of each request of ``cases``, one request at a time, interleaved, ``idle()`` before each
    (untimed); sorted."""
    for one in cases.values():
        for _ in range(50):
            one()
    seen: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(LATENCY_REQUESTS):
        for name, one in cases.items():
            idle()
            start = time.perf_counter()
            one()
            seen[name].append(time.perf_counter() - start)
    return {name: sorted(times) for name, times in seen.items()}


def report_latency(title: str, seen: dict[str, list[float]]) -> None:
    base = statistics.median(seen["answered"])
    print(f"\nlatency, {title} (us):")
    mcp = statistics.median(seen["MCP call, answered"]) if "MCP call, answered" in seen else None
    print(f"  {'case':20s} {'median':>8s} {'p10':>8s} {'p90':>8s} {'median x answered':>18s}")
    for name, times in seen.items():
        n = len(times)
        # MCP's task read is weighed against MCP's plain call, the Opal accept against Opal's
        ratio = statistics.median(times) / (mcp if mcp is not None and name.startswith("MCP") else base)
        print(f"  {name:20s} {statistics.median(times) * 1e6:8.1f} {times[n // 10] * 1e6:8.1f} "
              f"{times[9 * n // 10] * 1e6:8.1f} {ratio:18.2f}")


def over_http(redis_url: str, bodies: dict[str, tuple[dict[str, Any], int]],
              idle: Callable[[], None]) -> dict[str, list[float]]:
    """:func:`latency` of ``bodies`` over HTTP to gunicorn (one gthread worker) serving the Celery app."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread", "--threads", "4",
         "--bind", f"127.0.0.1:{port}", f"bench_tasks:app_with('celery', {redis_url!r})"],
        cwd=Path(__file__).parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)
        connection = http.client.HTTPConnection("127.0.0.1", port)  # one kept-alive connection

        def call(body: dict[str, Any], status: int) -> Callable[[], None]:
            data = json.dumps(body)

            def one() -> None:
                connection.request("POST", "/opal/tools/report", data, {"Content-Type": "application/json"})
                answer = connection.getresponse()
                answer.read()
                assert answer.status == status, answer.status

            return one

        return latency({name: call(body, status) for name, (body, status) in bodies.items()}, idle)
    finally:
        server.terminate()
        server.wait(15)


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


ACCEPT = {"parameters": {"n": 1}, "async_callback": {"url": "http://127.0.0.1:9/never"}}
#: "accepted" counts the whole process (the request and the publisher thread that sends its job to
#: the broker after the answer); "accepted, request only" runs no publisher in the process (the jobs
#: stay in the outbox), so its count is the request's own.
INSTRUCTION_CASES = {"answered": ({"parameters": {"n": 1}}, 200), "accepted": (ACCEPT, 202),
                     "accepted, request only": (ACCEPT, 202)}


def counted_run(case: str, requests: int) -> None:
    """One measured run of ``--instructions``: ``requests`` requests of ``case`` (after a warm-up)."""
    body, status = INSTRUCTION_CASES[case]
    if case == "accepted, request only":
        Outbox.start = lambda self: None  # type: ignore[method-assign]  # no publisher in this process
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
    server = RedisServer()
    url = server.url + "/0"
    try:
        import redis

        if sys.argv[1:2] == ["--instructions"]:
            counted = {case: instructions(case, url) for case in INSTRUCTION_CASES}
            for case, count in counted.items():
                print(f"opal call, {case:22s} {count:10.0f} instructions/request "
                      f"{count / counted['answered']:6.2f} x answered")
            return
        celery_app, thread_app = app_with("celery", url), app_with("thread", url)
        plain = {"parameters": {"n": 1}}
        accepted = {"parameters": {"n": 1}, "async_callback": {"url": "http://127.0.0.1:9/never"}}
        made: list[bytes] = []  # an MCP task (the thread engine runs it: it ends), then its tasks/get
        request(thread_app, mcp_body("tools/call", {"name": "report", "arguments": {"n": 1}}), 200, "/mcp",
                mcp_headers("tools/call", "report"), made)()
        task_id = json.loads(made[0])["result"]["taskId"]
        read_args = (thread_app, mcp_body("tasks/get", {"taskId": task_id}), 200, "/mcp",
                     mcp_headers("tasks/get", task_id))
        while json.loads(made[-1])["result"]["status"] == "working":
            time.sleep(0.01)
            request(*read_args, answers=made)()
        assert json.loads(made[-1])["result"]["status"] == "completed", made[-1]
        read = request(*read_args)
        outbox = redis.Redis.from_url(url)

        def idle() -> None:  # the previous accept's job sent to the broker, the publisher waiting again
            while outbox.zcard(OUTBOX):
                time.sleep(0.002)
            time.sleep(0.003)

        mcp_answered = request(thread_app, mcp_body("tools/call", {"name": "lookup", "arguments": {"n": 1}},
                                                    tasks=False), 200, "/mcp", mcp_headers("tools/call", "lookup"))
        # A diagnostic, not an accept (nothing is kept): the same request with its one Redis write left
        # out, to show what of the accept's latency is that round trip and what is the server's own work.
        unkept_app = app_with("celery", url)
        unkept_app.extensions[EXTENSION_KEY].outbox.keep = lambda task, job: None
        report_latency("in process", latency({"answered": request(celery_app, plain, 200),
                                               "accepted (celery)": request(celery_app, accepted, 202),
                                               "  no Redis write": request(unkept_app, accepted, 202),
                                               "MCP call, answered": mcp_answered, "MCP tasks/get": read}, idle))
        report_latency("over HTTP, gunicorn", over_http(url, {"answered": (plain, 200),
                                                             "accepted (celery)": (accepted, 202)}, idle))
        print("\nthroughput, back to back (us):")
        store = TaskStore(RedisStore(url))
        probe = Task(id="probe", tool="report", version="1.0.0", dialect="opal", caller=None, digest="d")
        store.put(probe)
        times = best({
            "opal call, answered": request(celery_app, plain, 200),
            "opal call, accepted (celery)": request(celery_app, accepted, 202),
            "opal call, accepted (thread)": request(thread_app, accepted, 202),
            "task read (10 records)": lambda: store.get("probe"),
            "MCP tools/call, answered": mcp_answered,
            "MCP tasks/get": read,
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
        while outbox.zcard(OUTBOX):  # the publisher sends them to the broker after their 202s
            time.sleep(0.05)
        gc.collect()
        after = tracemalloc.take_snapshot()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
        print(f"\nweb process memory after 2,000 accepted celery tasks no worker took: {grown / 1024:+.1f} KiB "
              f"({grown / 2000:+.1f} bytes per task)")
    finally:
        server.close()


if __name__ == "__main__":
    main()
