"""Every dialect's call, MCP ``tools/list`` and a discovery GET, in process: the WSGI callables of
``bench/http_apps.py`` called with a prepared environ (no sockets, no test client), beside the
bare Flask view and the raw WSGI callable. Microseconds per request, the best of interleaved
rounds (the machine is shared: the best round is the one least disturbed); with ``--profile CASE``,
a cProfile of that case grouped by file, then its own functions' times.

Run: ``python bench/bench_inprocess.py [CASE,CASE...] [--profile CASE]`` (``ROUNDS`` env var: rounds
of 300 requests each, default 9; ``TOOLS`` and ``HIDDEN``: the registry, see ``http_apps.py``).
Each case's request is what its real clients send: Opal's carries its ``X-Opal-*`` ids, and an
MCP call comes after the client listed the tools (the fast path has then learned the list, and
reads every POST to the endpoint to tell a list from a call).

``--paired`` times each case against the bare view side by side instead (``PAIRS`` env var, default
300): the median of many ratios, each of two batches taken a few milliseconds apart, which moves
far less with the machine's load than the best rounds do.
bench/RESULTS.rst ("Speed, part 4" and "part 5") records runs.

``--instructions CASE,CASE...`` counts instead of timing: the machine instructions one request of
each case executes, under valgrind's cachegrind (``apt-get install valgrind``): two runs of this
script (``--requests 0 CASE`` and ``--requests 400 CASE``: the apps built, 20 requests, a garbage
collection, then that many requests), the difference divided by 400. The count does not move with
the machine's load, so it compares commits and registry sizes on a shared machine; it weighs every
instruction alike (a cache miss costs nothing in it), so read it beside the timings. Garbage
collection is off in both runs after the first collection (as ``--paired`` times): a full
collection that falls in one run and not the other moved a case's count by 100,000 a request.
"""

from __future__ import annotations

import collections
import cProfile
import gc
import io
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from http_apps import bare, ours, raw
from werkzeug.test import EnvironBuilder

CALL = {"city": "Oslo", "days": 2}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18", "Host": "127.0.0.1"}


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}


#: name: (server, method, path, JSON body or None)
CASES: dict[str, tuple[str, str, str, Any]] = {
    "bare": ("bare", "POST", "/call", CALL),
    "opal": ("ours", "POST", "/opal/tools/forecast_7", {"parameters": CALL}),
    "oxp": ("ours", "POST", "/oxp/tools/call", {"request": {"tool_id": "Bench.forecast_7", "input": CALL}}),
    "tdp": ("ours", "POST", "/api/v1/tools/execute", {"tool_name": "forecast_7", "arguments": CALL}),
    "explorer": ("ours", "POST", "/explorer/tools/forecast_7/call", CALL),
    "mcpcall": ("ours", "POST", "/mcp", rpc("tools/call", {"name": "forecast_7", "arguments": CALL})),
    "mcplist": ("ours", "POST", "/mcp", rpc("tools/list")),
    "opaldisc": ("ours", "GET", "/opal/discovery", None),
    "raw": ("raw", "GET", "/opal", None),
}
#: Headers a case's real clients send besides :data:`HEADERS` (Opal names its thread and executions).
EXTRA_HEADERS: dict[str, dict[str, str]] = {
    "opal": {"X-Opal-Thread-Id": "thread-1", "X-Opal-Workflow-Execution-Id": "workflow-1",
             "X-Opal-Agent-Execution-Id": "agent-1"},
}
#: Requests a case's real clients send first, once (an MCP client lists the tools before it calls one).
BEFORE: dict[str, str] = {"mcpcall": "mcplist"}


def runner(apps: dict[str, Any], name: str) -> Callable[[], None]:
    """One request of case ``name``, as a function (asserts a 200)."""
    server, method, path, body = CASES[name]
    app = apps[server]
    data = json.dumps(body).encode() if body is not None else b""
    headers = {**HEADERS, **EXTRA_HEADERS.get(name, {})} if body is not None else {"Host": "127.0.0.1"}
    environ = EnvironBuilder(path=path, method=method, data=data if body is not None else None,
                             headers=headers).get_environ()
    status: list[str] = []

    def start_response(line: str, headers: Any, exc_info: Any = None) -> None:
        status[:] = [line]

    def one() -> None:
        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(data)
        answer = app(env, start_response)
        b"".join(answer)
        getattr(answer, "close", lambda: None)()
        assert status[0].startswith("200"), (name, status)

    if name in BEFORE:
        first = runner(apps, BEFORE[name])
        for _ in range(3):
            first()
    return one


def paired(runners: dict[str, Callable[[], None]], pairs: int, batch: int = 25) -> dict[str, list[float]]:
    """Each case's time over the bare view's, measured side by side: ``pairs`` times, a batch of
    ``batch`` requests of the case and one of the bare view right after (or before: the order
    alternates), and the ratio of the two; garbage collection off while timing, run between
    pairs. Two batches a few milliseconds apart meet the same machine, so the ratios hold still
    where each time alone moves with the load: read their median.

    After each collection every case runs once untimed: a full collection walks the whole heap
    and leaves the caches cold for whatever runs next, and on a core with a small L2 (1 MB) that
    made the first case's batch after it about 14% slower. With the bare view and the first case
    taking turns to run first, that case's ratios split in two (Opal's, first in the usual list:
    x1.16 with the bare view first, x1.45 with Opal first, in alternate pairs), and their median
    fell anywhere in the gap between the halves."""
    bare_one = runners["bare"]
    ratios: dict[str, list[float]] = {name: [] for name in runners if name != "bare"}
    clock = time.perf_counter
    for i in range(pairs):
        for name, ratio in ratios.items():
            took = {}
            gc.disable()
            for which in ((name, "bare") if i % 2 else ("bare", name)):
                one = bare_one if which == "bare" else runners[name]
                start = clock()
                for _ in range(batch):
                    one()
                took[which] = clock() - start
            gc.enable()
            ratio.append(took[name] / took["bare"])
        gc.collect()
        for one in runners.values():
            one()
    return ratios


def profile(one: Callable[[], None], n: int = 3000) -> None:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        one()
    prof.disable()
    stats = pstats.Stats(prof)
    by_file: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0.0
    for (file, line, func), (_, calls, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        group = ("flask_tooldiscovery" if "flask_tooldiscovery" in file else "flask" if "/flask/" in file
                 else "werkzeug" if "werkzeug" in file else "json" if "/json/" in file
                 else "builtins" if file == "~" else Path(file).name)
        by_file[group] += tottime
        if "flask_tooldiscovery" in file:
            own[f"{file.split('flask_tooldiscovery/')[-1]}:{line}({func}) x{calls / n:.0f}"] += tottime
    print(f"  profiled: {total / n * 1e6:.0f} us/request (cProfile slows every call; read the shares)")
    for group, seconds in by_file.most_common(8):
        print(f"  {seconds / total * 100:5.1f}%  {group}")
    print("  this package's functions, own time:")
    for func, seconds in own.most_common(15):
        print(f"  {seconds / total * 100:5.1f}%  {func}")


#: numpy's BLAS threads (numpy comes with tool search) are held to one: cachegrind counts every
#: thread's instructions, and idle BLAS workers spinning moved a case's count by tens of thousands.
_ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def instructions(case: str, requests: int = 400) -> float:
    """Machine instructions per request of ``case`` (see the module's doc)."""
    counts = []
    for n in (0, requests):
        run = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
             sys.executable, __file__, "--requests", str(n), case],
            capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": "0", **dict.fromkeys(_ONE_THREAD, "1")})
        counts.append(int(re.findall(r"I\s+refs:\s+([\d,]+)", run.stderr)[-1].replace(",", "")))
    return (counts[1] - counts[0]) / requests


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--requests"]:  # one measured run of --instructions
        server = CASES[args[2]][0]
        one = runner({server: {"ours": ours, "bare": bare, "raw": raw}[server]()}, args[2])
        for _ in range(20):
            one()
        gc.collect()
        gc.disable()  # as --paired times: a collection falling in one of the two runs only is no request's
        for _ in range(int(args[1])):
            one()
        return
    if args[:1] == ["--instructions"]:
        for name in args[1].split(","):
            print(f"{name:10s} {instructions(name):10.0f} instructions/request", flush=True)
        return
    wanted = CASES if not args or args[0].startswith("--") else args[0].split(",")
    apps = {"ours": ours(), "bare": bare(), "raw": raw()}
    runners = {name: runner(apps, name) for name in wanted}
    for one in runners.values():
        for _ in range(300):
            one()
    if "--paired" in args:
        ratios = paired({"bare": runner(apps, "bare"), **runners}, int(os.environ.get("PAIRS", "300")))
        for name, found in ratios.items():
            found.sort()
            quartile = len(found) // 4
            print(f"{name:10s} x{statistics.median(found):.3f} the bare view "
                  f"(middle half x{found[quartile]:.3f}-x{found[-quartile - 1]:.3f}, {len(found)} pairs)")
        return
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(int(os.environ.get("ROUNDS", "9"))):
        for name, one in runners.items():
            start = time.perf_counter()
            for _ in range(300):
                one()
            best[name] = min(best[name], (time.perf_counter() - start) / 300)
    for name in runners:
        print(f"{name:10s} {best[name] * 1e6:7.1f} us")
    if "--profile" in args:
        name = args[args.index("--profile") + 1]
        print(f"\nprofile of {name}:")
        profile(runners.get(name) or runner(apps, name))


if __name__ == "__main__":
    main()
