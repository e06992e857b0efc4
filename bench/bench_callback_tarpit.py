"""Callback tarpits: honest calls while N callbacks are held by a host that never answers.

A loopback "tarpit" accepts every connection and never answers. The app
(``tests.apps.opal_async_app``, the thread engine, its defaults: 4 task threads, a backlog of 64,
``TOOLDISCOVERY_OPAL_CALLBACK_TIMEOUT`` 10 s, 3 attempts) runs under gunicorn (one gthread worker,
8 threads, ``deploy/gunicorn.conf.py``). The bench sends N Opal async calls whose callback is the
tarpit, then, at once, honest calls one every 0.25 s: an async call whose callback is a receiver of
its own (its 202 timed, then the wait until its result arrives, at most 40 s) and a synchronous
call (timed). It reports how many of each were accepted and answered, and their latencies.

Run: ``python bench/bench_callback_tarpit.py [--root CHECKOUT] [--tarpit 0 120 400]``; ``--root``
serves another checkout of the project (the code before a change: ``git archive <commit> | tar -x
-C /tmp/before``). bench/RESULTS.rst ("Callback tarpits") records the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
HONEST, PACE, WAIT = 20, 0.25, 40.0

from tests.loopback import Receiver, Tarpit, free_port, stop  # noqa: E402  (the tests' loopback servers)


def post(url: str, body: dict[str, Any]) -> tuple[int, float]:
    started = time.monotonic()
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = 0
    return status, time.monotonic() - started


def serve(root: Path, log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(root / "deploy" / "gunicorn.conf.py"), "--workers", "1",
         "--worker-class", "gthread", "--threads", "8", "--bind", f"127.0.0.1:{port}",
         "tests.apps.opal_async_app:create_app(hosts='127.0.0.1')"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/opal/discovery", timeout=1).read()
            return base, proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(log.read_text()[-2000:])


def run(root: Path, tarpits: int) -> dict[str, Any]:
    tarpit, receiver = Tarpit(backlog=4096), Receiver()
    with tempfile.TemporaryDirectory() as folder:
        base, proc = serve(root, Path(folder) / "gunicorn.log")
        try:
            trapped = [post(f"{base}/opal/tools/build_report", {
                "parameters": {"n": i}, "async_callback": {"url": f"{tarpit.url}?n={i}"}})[0] for i in range(tarpits)]
            sent: dict[str, float] = {}
            accepted, sync_ok, accept_times, sync_times = 0, 0, [], []
            for i in range(HONEST):
                path, started = f"/cb/{i}", time.monotonic()
                status, took = post(f"{base}/opal/tools/build_report", {
                    "parameters": {"n": i}, "async_callback": {"url": receiver.base + path}})
                if status == 202:
                    accepted += 1
                    accept_times.append(took)
                    sent[path] = started  # the result's wait is counted from the call's start
                status, took = post(f"{base}/opal/tools/quick", {"parameters": {"n": i}})
                if status == 200:
                    sync_ok += 1
                    sync_times.append(took)
                time.sleep(PACE)
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline and len(receiver.arrived) < len(sent):
                time.sleep(0.1)
            reported = [receiver.arrived[p] - t for p, t in sent.items() if p in receiver.arrived]
        finally:
            stop(proc, 40)
    tarpit.close()
    receiver.close()
    return {"tarpit": tarpits, "tarpit_accepted": trapped.count(202), "accepted": accepted, "reported": len(reported),
            "accept_ms": statistics.median(accept_times) * 1000 if accept_times else None,
            "report_s": statistics.median(reported) if reported else None,
            "report_max_s": max(reported) if reported else None,
            "sync_ok": sync_ok, "sync_ms": statistics.median(sync_times) * 1000 if sync_times else None}


def load() -> list[str]:
    """The machine's load average (1, 5, 15 minutes)."""
    return Path("/proc/loadavg").read_text().split()[:3]


def shown(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout to serve")
    parser.add_argument("--tarpit", type=int, nargs="*", default=[0, 120, 400])
    args = parser.parse_args()
    print(f"root {args.root}; load average before: {load()}; "
          f"{os.cpu_count()} cores")
    print(f"{HONEST} honest async calls and {HONEST} synchronous calls, one of each every {PACE} s, "
          f"right after the tarpit calls; a result not reported within {WAIT:.0f} s counts as lost")
    print(f"{'tarpit calls':>12} {'accepted':>9} | {'honest 202':>10} {'202 ms':>7} {'reported':>8} "
          f"{'report s (median/max)':>22} | {'sync 200':>8} {'sync ms':>8}")
    for n in args.tarpit:
        r = run(args.root, n)
        print(f"{r['tarpit']:>12} {r['tarpit_accepted']:>9} | {r['accepted']:>7}/{HONEST} "
              f"{shown(r['accept_ms'], '.1f'):>7} "
              f"{r['reported']:>5}/{HONEST} {shown(r['report_s'], '.2f'):>10} / {shown(r['report_max_s'], '.2f'):>9} | "
              f"{r['sync_ok']:>5}/{HONEST} {shown(r['sync_ms'], '.1f'):>8}", flush=True)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
