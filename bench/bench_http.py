"""Real HTTP, side by side in one run: our dialects under gunicorn beside a bare Flask route and a
raw WSGI callable serving the very same bytes, and beside the official MCP SDK under uvicorn.

Run: ``python bench/bench_http.py [ROUNDS] [SECONDS] [FILTER]`` (needs ``wrk``: ``apt-get install
-y wrk``). Every server: 1 process (gunicorn: 1 sync worker; uvicorn: 1 worker). Load: wrk, 1
thread, 8 connections. Each case is run once per round, rounds interleaved, and the median
requests per second is reported; each case runs right after its reference in every round, and the
ratio is the median of those neighbouring pairs (the machine is shared and noisy).

``BENCH_PIN=1``: every server on CPU 0 and wrk on CPU 1 (``taskset``), so that the load
generator and the server under test never take turns on one core (as when the load comes from
another machine); without it the scheduler places them, and ratios move by about +-0.05 from
run to run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
CALL = {"city": "Oslo", "days": 2}


def rpc(method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}


#: name, server, method, path, body, reference case (ratio) or None
CASES = [
    ("raw WSGI: opal bytes", "raw", "GET", "/opal", None, None),
    ("bare Flask: opal bytes", "bare", "GET", "/opal", None, None),
    ("opal GET /discovery", "ours", "GET", "/opal/discovery", None, "bare Flask: opal bytes"),
    ("bare Flask: oxp bytes", "bare", "GET", "/oxp", None, None),
    ("oxp GET /tools", "ours", "GET", "/oxp/tools", None, "bare Flask: oxp bytes"),
    ("bare Flask: tdp bytes", "bare", "GET", "/tdp", None, None),
    ("tdp GET /api/v1/tools", "ours", "GET", "/api/v1/tools", None, "bare Flask: tdp bytes"),
    ("bare Flask: explorer bytes", "bare", "GET", "/explorer", None, None),
    ("explorer GET /tools", "ours", "GET", "/explorer/tools", None, "bare Flask: explorer bytes"),
    ("opal GET /discovery (vs raw)", "ours", "GET", "/opal/discovery", None, "raw WSGI: opal bytes"),
    ("bare Flask: POST call", "bare", "POST", "/call", CALL, None),
    ("opal POST call", "ours", "POST", "/opal/tools/forecast_7", {"parameters": CALL}, "bare Flask: POST call"),
    ("oxp POST /tools/call", "ours", "POST", "/oxp/tools/call",
     {"request": {"tool_id": "Bench.forecast_7", "input": CALL}}, "bare Flask: POST call"),
    ("tdp POST execute", "ours", "POST", "/api/v1/tools/execute",
     {"tool_name": "forecast_7", "arguments": CALL}, "bare Flask: POST call"),
    ("explorer POST call", "ours", "POST", "/explorer/tools/forecast_7/call", CALL, "bare Flask: POST call"),
    ("mcp tools/call", "ours", "POST", "/mcp", rpc("tools/call", {"name": "forecast_7", "arguments": CALL}),
     "bare Flask: POST call"),
    ("MCP SDK tools/list", "sdk", "POST", "/mcp", rpc("tools/list"), None),
    ("mcp tools/list", "ours", "POST", "/mcp", rpc("tools/list"), "MCP SDK tools/list"),
    ("MCP SDK tools/call", "sdk", "POST", "/mcp", rpc("tools/call", {"name": "forecast_7", "arguments": CALL}), None),
    ("mcp tools/call (vs SDK)", "ours", "POST", "/mcp", rpc("tools/call", {"name": "forecast_7", "arguments": CALL}),
     "MCP SDK tools/call"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PIN = os.environ.get("BENCH_PIN") == "1" and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2


def pinned(cpu: int, cmd: list[str]) -> list[str]:
    """``cmd`` run on CPU ``cpu`` when ``BENCH_PIN=1``."""
    return ["taskset", "-c", str(cpu), *cmd] if PIN else cmd


def start(server: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    if server == "sdk":
        cmd = ["uvicorn", "--factory", "http_apps:sdk", "--port", str(port), "--log-level", "warning",
               "--no-access-log"]
    else:
        cmd = ["gunicorn", "-w", "1", "-k", "sync", "-b", f"127.0.0.1:{port}", "--log-level", "warning",
               f"http_apps:{server}()"]
    proc = subprocess.Popen(pinned(0, cmd), cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{server} did not start")


def check(port: int, method: str, path: str, body: object) -> None:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers=HEADERS)
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200, (path, resp.status)
        text = resp.read()
        assert b'"isError":true' not in text and b'"success":false' not in text, text[:300]


def wrk(port: int, method: str, path: str, body: object, seconds: float) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f"wrk.method = {json.dumps(method)}\n")
        for name, value in HEADERS.items():
            script.write(f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}\n")
        if body is not None:
            script.write(f"wrk.body = {json.dumps(json.dumps(body))}\n")
    out = subprocess.run(pinned(1, ["wrk", "-t1", "-c8", f"-d{seconds:g}s", "-s", script.name,
                                    f"http://127.0.0.1:{port}{path}"]),
                         capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{path}: {errors.group(1)} non-2xx responses")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


def main() -> None:
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install -y wrk")
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3
    wanted = sys.argv[3] if len(sys.argv) > 3 else ""
    cases = [c for c in CASES if wanted in c[0] or any(wanted in d[0] for d in CASES if d[0] == c[5])]
    cases = [c for c in CASES if c in cases or any(c[0] == d[5] for d in cases)]
    servers = {name: start(name) for name in {c[1] for c in cases}}
    try:
        for _, server, method, path, body, _ in cases:
            check(servers[server][1], method, path, body)
        rates: dict[str, list[float]] = {c[0]: [] for c in cases}
        ratios: dict[str, list[float]] = {c[0]: [] for c in cases}
        by_name = {c[0]: c for c in cases}
        for _ in range(rounds):  # each case right after its reference: the ratio of neighbours
            for name, server, method, path, body, ref in cases:
                if ref is not None:
                    _, rserver, rmethod, rpath, rbody, _ = by_name[ref]
                    ref_rate = wrk(servers[rserver][1], rmethod, rpath, rbody, seconds)
                    rates[ref].append(ref_rate)
                rate = wrk(servers[server][1], method, path, body, seconds)
                rates[name].append(rate)
                if ref is not None:
                    ratios[name].append(rate / ref_rate)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()
    print(f"wrk -t1 -c8 -d{seconds:g}s, median of {rounds} rounds; gunicorn 1 sync worker, uvicorn 1 worker; "
          f"{os.environ.get('TOOLS', '50')} tools; ratio: median of each round's case / reference run just before"
          + ("; servers on CPU 0, wrk on CPU 1" if PIN else ""))
    print(f"{'case':34} {'req/s':>8} {'ms/req':>7} {'ratio':>6}  reference")
    for name, _, _, _, _, ref in cases:
        rate = statistics.median(rates[name])
        ratio = f"{statistics.median(ratios[name]):.2f}" if ref else ""
        print(f"{name:34} {rate:8.0f} {1000 / rate:7.2f} {ratio:>6}  {ref or ''}")


if __name__ == "__main__":
    main()
