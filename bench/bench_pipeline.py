"""The core pipeline at scale, in-process (a WSGI callable, no sockets): discovery bytes cached per
tool set, and OXP calls found through an index instead of a scan.

Run: ``python bench/bench_pipeline.py`` (bench/RESULTS.rst records a run). Compares, with 57 and
5,057 tools, ``GET /opal/discovery`` against a bare Flask view returning the very same bytes, and
an OXP call against a bare Flask view that parses the JSON, calls the function and returns JSON.
Each figure is the median of 5 rounds.
"""

from __future__ import annotations

import gc
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import Flask, Response, jsonify, request

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
    """A request straight into the WSGI callable; returns the body."""
    base = {"REQUEST_METHOD": method, "PATH_INFO": path, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http", "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)), "wsgi.errors": sys.stderr}

    def run() -> bytes:
        statuses: list[str] = []
        environ = {**base, "wsgi.input": io.BytesIO(body)}
        out = b"".join(app.wsgi_app(environ, lambda status, headers: statuses.append(status)))
        assert statuses[0].startswith("200"), (statuses, out[:200])
        return out

    return run


def per_second(fn: Callable[[], object]) -> float:
    n, rates = 0, []
    start = time.perf_counter()
    while time.perf_counter() - start < 0.3:  # calibrate: about 0.3 s a round
        fn()
        n += 1
    for _ in range(ROUNDS):
        gc.collect()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


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
