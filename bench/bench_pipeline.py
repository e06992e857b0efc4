"""The core pipeline at scale, in-process (a WSGI callable, no sockets): discovery bytes cached per
tool set, and OXP calls found through an index instead of a scan.

Run: ``python bench/bench_pipeline.py`` (bench/RESULTS.rst records a run). Compares, with 57 and
5,057 tools, ``GET /opal/discovery`` against a bare Flask view returning the very same bytes, and
an OXP call against a bare Flask view that parses the JSON, calls the function and returns JSON.
Each figure is the median of 5 rounds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import timing
from flask import Flask, Response, jsonify, request
from timing import calibrated, wsgi_request

from flask_tooldiscovery import ToolDiscovery

ROUNDS = 5


def build(n_tools: int) -> Flask:
    d = ToolDiscovery()
    for i in range(n_tools):
        def tool(city: str, days: int = 1) -> dict:
            """Fetch a forecast.

            Args:
                city: City name.
                days: How many days.
            """
            return {"city": city, "days": days}
        d.add_tool(tool, name=f"forecast_{i}")
    app = Flask("bench")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "oxp"], TOOLDISCOVERY_MAX_CONCURRENT_CALLS=0)
    d.init_app(app)
    return app


def bare(document: bytes) -> Flask:
    app = Flask("bare")

    @app.get("/discovery")
    def discovery() -> Response:
        return Response(document, mimetype="application/json")

    def forecast(city: str, days: int = 1) -> dict:
        return {"city": city, "days": days}

    @app.post("/call")
    def call() -> Response:
        return jsonify(forecast(**request.get_json()["request"]["input"]))

    return app


def wsgi(app: Flask, method: str, path: str, body: bytes = b"") -> Callable[[], bytes]:
    """A request straight into the app's WSGI callable; returns the body."""
    return wsgi_request(app.wsgi_app, method, path, body)


def per_second(fn: Callable[[], object]) -> float:
    return timing.per_second(fn, calibrated(fn, 0.3), ROUNDS)  # about 0.3 s a round


def main() -> None:
    print(f"Python {sys.version.split()[0]}, median of {ROUNDS} rounds, in-process WSGI")
    print(f"{'tools':>6} {'case':42} {'req/s':>9} {'us/req':>9} {'ratio':>6}")
    for n_tools in (57, 5057):
        app = build(n_tools)
        discovery = wsgi(app, "GET", "/opal/discovery")
        document = discovery()
        plain = bare(document)
        call = json.dumps({"request": {"tool_id": f"Bench.forecast_{n_tools - 3}",
                                       "input": {"city": "Oslo", "days": 2}}}).encode()
        rows = [
            ("bare Flask: the same discovery bytes", wsgi(plain, "GET", "/discovery"), None),
            ("opal GET /discovery", discovery, 0),
            ("bare Flask: parse, call, JSON", wsgi(plain, "POST", "/call", call), None),
            ("oxp POST /tools/call", wsgi(app, "POST", "/oxp/tools/call", call), 2),
        ]
        rates: list[float] = []
        for label, fn, against in rows:
            rate = per_second(fn)
            rates.append(rate)
            ratio = f"{rate / rates[against]:.2f}" if against is not None else ""
            print(f"{n_tools:>6} {label:42} {rate:9.0f} {1e6 / rate:9.1f} {ratio:>6}")
        print(f"{n_tools:>6} discovery document: {len(document) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
