"""A trivial tool call through every dialect against a bare Flask view that parses the JSON, calls
the same function and returns JSON: in process (requests straight into the WSGI callables, no
sockets), so the figures are the work each side does per request, without the server's.

Run: ``python bench/bench_calls.py [ROUNDS]`` (bench/RESULTS.rst records runs). The apps are
``bench/http_apps.py``'s (50 tools, every dialect). Rounds interleave the cases; each case's
figure is the median over rounds of its microseconds per call, and the latency ratio is the median
of (case / the bare view measured just before it) over rounds.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import http_apps  # noqa: E402
from timing import against, calibrated, wsgi_request  # noqa: E402

CALL = {"city": "Oslo", "days": 2}
HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("opal POST call", "/opal/tools/forecast_7", {"parameters": CALL}),
    ("oxp POST /tools/call", "/oxp/tools/call", {"request": {"tool_id": "Bench.forecast_7", "input": CALL}}),
    ("tdp POST execute", "/api/v1/tools/execute", {"tool_name": "forecast_7", "arguments": CALL}),
    ("explorer POST call", "/explorer/tools/forecast_7/call", CALL),
    ("mcp tools/call", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "forecast_7", "arguments": CALL}}),
    ("utcp POST call", "/utcp/tools/forecast_7", CALL),
]


def post(app: Any, path: str, body: dict[str, Any]) -> Callable[[], bytes]:
    return wsgi_request(app, "POST", path, json.dumps(body).encode(), HEADERS,
                        check=lambda out: b'"isError":true' not in out and b'"success":false' not in out)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    ours, bare = http_apps.ours(), http_apps.bare()
    reference = post(bare, "/call", CALL)
    cases = [(label, post(ours, path, body)) for label, path, body in CASES if _mounted(ours, path)]
    n = calibrated(reference, 0.2)
    times: dict[str, list[float]] = {"bare Flask: parse, call, JSON": []}
    ratios: dict[str, list[float]] = {}
    for _ in range(rounds):
        for label, fn in cases:
            ref, mine = against(fn, reference, n)
            times["bare Flask: parse, call, JSON"].append(ref)
            times.setdefault(label, []).append(mine)
            ratios.setdefault(label, []).append(mine / ref)
    print(f"Python {sys.version.split()[0]}, {rounds} rounds of {n} calls, in-process WSGI, 50 tools")
    print(f"{'case':32} {'us/call':>8} {'latency ratio':>14}")
    for label, values in times.items():
        ratio = f"{statistics.median(ratios[label]):.2f}" if label in ratios else ""
        print(f"{label:32} {statistics.median(values):8.1f} {ratio:>14}")


def _mounted(app: Any, path: str) -> bool:
    adapter = app.url_map.bind("127.0.0.1")
    try:
        adapter.match(path, method="POST")
    except Exception:
        return False
    return True


if __name__ == "__main__":
    main()
