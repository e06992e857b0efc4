"""Throughput and memory of flask-tooldiscovery against bare Flask.

Run: ``python bench/bench_dialects.py`` (writes a table to stdout; bench/RESULTS.rst records a run).
Requests go through Flask's test client (no sockets), so the numbers compare the work each layer
adds, not network or server overhead. Each figure is the median of 5 rounds.
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import timing
from flask import Flask, jsonify, request

from flask_tooldiscovery import ToolDiscovery

N_TOOLS = 50
ROUNDS = 5


def build(n_tools: int) -> ToolDiscovery:
    d = ToolDiscovery()
    for i in range(n_tools):
        def tool(city: Annotated[str, "City name"], days: int = 1,
                 units: Literal["metric", "imperial"] = "metric", tags: list[str] | None = None) -> dict:
            """Fetch a forecast.

            Args:
                days: How many days.
            """
            return {"city": city, "days": days}
        d.add_tool(tool, name=f"forecast_{i}")
    return d


def app_with(dialects: list[str]) -> Flask:
    app = Flask("bench")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=dialects, TOOLDISCOVERY_ALLOW_EXECUTE=True)
    build(N_TOOLS).init_app(app)
    return app


def bare_app() -> Flask:
    app = Flask("bare")
    doc = [{"name": f"forecast_{i}", "description": "Fetch a forecast."} for i in range(N_TOOLS)]

    @app.get("/tools")
    def tools():
        return jsonify(doc)

    @app.post("/call")
    def call():
        args = request.get_json()
        return jsonify({"city": args["city"], "days": args.get("days", 1)})

    return app


def per_second(fn: Callable[[], object], n: int) -> float:
    return timing.per_second(fn, n, ROUNDS)


def main() -> None:
    full = app_with(["explorer", "opal", "oxp", "tdp", "mcp"]).test_client()
    bare = bare_app().test_client()
    call_body = {"city": "Oslo", "days": 2}
    mcp_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    mcp_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "forecast_7", "arguments": call_body}}
    oxp_call = {"request": {"tool_id": "Bench.forecast_7", "input": call_body}}
    tdp_call = {"tool_name": "forecast_7", "arguments": call_body}
    cases = [
        ("bare Flask: GET list (prebuilt JSON)", lambda: bare.get("/tools"), 500),
        ("explorer GET /tools", lambda: full.get("/explorer/tools"), 500),
        ("opal GET /discovery", lambda: full.get("/opal/discovery"), 200),
        ("oxp GET /tools", lambda: full.get("/oxp/tools"), 200),
        ("tdp GET /api/v1/tools (spec)", lambda: full.get("/api/v1/tools"), 200),
        ("mcp tools/list", lambda: full.post("/mcp", json=mcp_list), 200),
        ("bare Flask: POST call", lambda: bare.post("/call", json=call_body), 1000),
        ("explorer POST call", lambda: full.post("/explorer/tools/forecast_7/call", json=call_body), 1000),
        ("opal POST call", lambda: full.post("/opal/tools/forecast_7", json={"parameters": call_body}), 1000),
        ("oxp POST /tools/call", lambda: full.post("/oxp/tools/call", json=oxp_call), 1000),
        ("tdp POST execute", lambda: full.post("/api/v1/tools/execute", json=tdp_call), 1000),
        ("mcp tools/call", lambda: full.post("/mcp", json=mcp_call), 1000),
    ]
    print(f"{N_TOOLS} tools, Python {sys.version.split()[0]}, median of {ROUNDS} rounds")
    print(f"{'case':45} {'req/s':>10}")
    for label, fn, n in cases:
        warm = fn()  # warm-up: first request compiles validators and memoizes wire documents
        assert warm.status_code == 200, (label, warm.status_code, warm.get_data(as_text=True)[:200])
        print(f"{label:45} {per_second(fn, n):10.0f}")

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    registry = build(1000)
    after = tracemalloc.take_snapshot()
    size = sum(s.size_diff for s in after.compare_to(before, "filename"))
    print(f"memory for 1000 decorated tools: {size / 1024:.0f} KiB ({size / 1000:.0f} bytes per tool)")
    del registry
    doc = json.dumps(full.get("/opal/discovery").get_json())
    print(f"opal discovery document for {N_TOOLS} tools: {len(doc) / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
