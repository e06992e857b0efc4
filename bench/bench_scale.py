"""Linear cost: registration, start-up, discovery latency and memory at 10 .. 10,000 tools, and
the cost of one MCP ``tools/list`` page (first and last) against the registry size.

Run: ``python bench/bench_scale.py`` (in-process WSGI calls, no sockets; bench/RESULTS.rst
records a run). Discovery is timed twice: through the fast path (the default) and with the fast
path off (the full Flask request path, the bytes still cached).
"""

from __future__ import annotations

import gc
import io
import json
import logging
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
logging.disable(logging.WARNING)

from flask import Flask  # noqa: E402

from flask_tooldiscovery import ToolDiscovery  # noqa: E402


def forecast(city: str, days: int = 1) -> dict[str, Any]:
    """Fetch a forecast.

    Args:
        city: City name.
        days: How many days.
    """
    return {"city": city, "days": days}


def request(app: Any, method: str, path: str, body: bytes = b"") -> bytes:
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
               "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http", "CONTENT_TYPE": "application/json",
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr}
    statuses: list[str] = []
    out = b"".join(app(environ, lambda status, headers: statuses.append(status)))
    assert statuses[0].startswith("200"), statuses
    return out


def us_per(fn: Any, seconds: float = 0.3) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    rounds = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


def main() -> None:
    print(f"{'tools':>6} {'register s':>10} {'init_app s':>10} {'1st disc ms':>11} {'fast us':>8} {'flask us':>9} "
          f"{'mcp p1 us':>9} {'mcp last us':>11} {'KB/tool':>8}")
    for n in (10, 100, 1000, 10_000):
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        d = ToolDiscovery()
        for i in range(n):
            d.add_tool(forecast, name=f"forecast_{i}")
        registered = time.perf_counter() - started
        app = Flask("scale")
        app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "mcp"], TOOLDISCOVERY_MAX_CONCURRENT_CALLS=0)
        started = time.perf_counter()
        d.init_app(app)
        initialized = time.perf_counter() - started
        started = time.perf_counter()
        request(app, "GET", "/opal/discovery")
        first = (time.perf_counter() - started) * 1000
        kib = (tracemalloc.get_traced_memory()[0] - before) / 1024 / n
        tracemalloc.stop()
        fast = us_per(lambda app=app: request(app, "GET", "/opal/discovery"))
        flask_path = us_per(lambda app=app: request(app.wsgi_app.wsgi_app, "GET", "/opal/discovery"))
        pages = max(n // 100, 1)  # MCP_PAGE_SIZE is 100
        first_page = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        last_cursor = json.loads(request(app, "POST", "/mcp", first_page)).get("result", {}).get("nextCursor")
        last_page = first_page
        if last_cursor is not None:
            from flask_tooldiscovery.wire import page_cursor

            last_page = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                    "params": {"cursor": page_cursor((pages - 1) * 100)}}).encode()
        p1 = us_per(lambda app=app, body=first_page: request(app, "POST", "/mcp", body))
        plast = us_per(lambda app=app, body=last_page: request(app, "POST", "/mcp", body))
        print(f"{n:>6} {registered:10.3f} {initialized:10.3f} {first:11.1f} {fast:8.1f} {flask_path:9.1f} "
              f"{p1:9.1f} {plast:11.1f} {kib:8.2f}")


if __name__ == "__main__":
    main()
