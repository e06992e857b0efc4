"""Linear cost: registration, start-up, discovery latency and memory at 10 .. 10,000 tools, and
the cost of one MCP ``tools/list`` page (first and last) against the registry size.

Run: ``python bench/bench_scale.py [MAX_TOOLS]`` (in-process WSGI calls, no sockets;
bench/RESULTS.rst records runs). Every tool is a different function (its own name, parameter
name, default and docstring), so no cache keyed on a schema's text can flatter the figures.

Timings are taken without tracing; memory is measured in a second, traced pass (tracemalloc
slows Python down several times, which an earlier version of this script counted as
registration time). "start-up" is registration + ``init_app`` + the first discovery document
(wall clock; "cpu s" is the process's CPU time over the same span). Discovery is timed through
the fast path (the default) and with it off (the full Flask request path, the bytes still
cached). The provider rows time a discovery request whose tools come from a
provider returning the same N dicts every time (a new document is not built: only the provider's
resolution and the cache look-up), and the same with ``Tool`` objects built once.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
logging.disable(logging.WARNING)

from flask import Flask  # noqa: E402

from flask_tooldiscovery import ToolDiscovery  # noqa: E402

SOURCE = '''
def forecast_{i}(city_{i}: str, days: int = {days}, units: Literal["metric", "imperial"] = "metric"
                 ) -> dict[str, Any]:
    """Fetch forecast number {i}.

    Args:
        city_{i}: The city, number {i}.
        days: How many days.
        units: Unit system.
    """
    return {{"city": city_{i}, "days": days}}
'''


def make_tools(n: int) -> list[Callable[..., Any]]:
    """``n`` different functions (name, parameter, default and docstring differ)."""
    out = []
    for i in range(n):
        namespace: dict[str, Any] = {"Any": Any, "Literal": Literal}
        exec(SOURCE.format(i=i, days=i % 7 + 1), namespace)
        out.append(namespace[f"forecast_{i}"])
    return out


def provided(n: int) -> list[dict[str, Any]]:
    """``n`` provider tools as dicts (MCP's shape)."""
    return [{"name": f"remote_{i}", "description": f"Remote tool number {i}.",
             "inputSchema": {"type": "object", "properties": {f"q_{i}": {"type": "string", "description": "Query."},
                                                              "limit": {"type": "integer", "default": i % 10}},
                             "required": [f"q_{i}"]}} for i in range(n)]


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


def start(funcs: list[Callable[..., Any]]) -> tuple[Flask, float, float, float, float]:
    """An app with ``funcs`` as tools: (app, registration s, init_app s, first discovery ms, the
    process's CPU seconds over all three: on a shared machine, less disturbed by the neighbours)."""
    cpu = time.process_time()
    started = time.perf_counter()
    d = ToolDiscovery()
    for func in funcs:
        d.add_tool(func)
    registered = time.perf_counter() - started
    app = Flask("scale")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "mcp"], TOOLDISCOVERY_MAX_CONCURRENT_CALLS=0)
    started = time.perf_counter()
    d.init_app(app)
    initialized = time.perf_counter() - started
    started = time.perf_counter()
    request(app, "GET", "/opal/discovery")
    first = (time.perf_counter() - started) * 1000
    return app, registered, initialized, first, time.process_time() - cpu


def provider_app(tools: list[Any]) -> Flask:
    app = Flask("provider")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_MAX_CONCURRENT_CALLS=0)
    ToolDiscovery(app, tools=lambda: tools)
    return app


def main() -> None:
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    sizes = [n for n in (10, 100, 1000, 10_000) if n <= top]
    print(f"Python {sys.version.split()[0]}; times untraced, memory in a separate traced pass")
    print(f"{'tools':>6} {'register s':>10} {'init_app s':>10} {'1st disc ms':>11} {'start-up s':>10} "
          f"{'cpu s':>6} {'fast us':>8} {'flask us':>9} {'mcp p1 us':>9} {'mcp last us':>11} {'KB/tool':>8}")
    for n in sizes:
        funcs = make_tools(n)
        gc.collect()
        app, registered, initialized, first, cpu = start(funcs)
        startup = registered + initialized + first / 1000
        fast = us_per(lambda app=app: request(app, "GET", "/opal/discovery"))
        flask_path = us_per(lambda app=app: request(app.wsgi_app.wsgi_app, "GET", "/opal/discovery"))
        pages = max(n // 100, 1)  # MCP_PAGE_SIZE is 100
        first_page = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        last_cursor = json.loads(request(app, "POST", "/mcp", first_page)).get("result", {}).get("nextCursor")
        last_page = first_page
        if last_cursor is not None:
            from flask_tooldiscovery.serving.wire import page_cursor

            last_page = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                    "params": {"cursor": page_cursor((pages - 1) * 100)}}).encode()
        p1 = us_per(lambda app=app, body=first_page: request(app, "POST", "/mcp", body))
        plast = us_per(lambda app=app, body=last_page: request(app, "POST", "/mcp", body))
        del app
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        app = start(funcs)[0]
        kib = (tracemalloc.get_traced_memory()[0] - before) / 1024 / n
        tracemalloc.stop()
        del app
        print(f"{n:>6} {registered:10.3f} {initialized:10.3f} {first:11.1f} {startup:10.3f} {cpu:6.3f} {fast:8.1f} "
              f"{flask_path:9.1f} {p1:9.1f} {plast:11.1f} {kib:8.2f}")
    print()
    print(f"{'tools':>6} {'provider: dicts, us/discovery':>30} {'provider: Tool objects, us/discovery':>37}")
    from flask_tooldiscovery.tools.providers import tool_from_object

    for n in sizes:
        dicts = provided(n)
        built = [tool_from_object(t) for t in dicts]
        a, b = provider_app(dicts), provider_app(built)
        request(a, "GET", "/opal/discovery")
        request(b, "GET", "/opal/discovery")
        da = us_per(lambda a=a: request(a, "GET", "/opal/discovery"))
        db = us_per(lambda b=b: request(b, "GET", "/opal/discovery"))
        print(f"{n:>6} {da:30.1f} {db:37.1f}")


if __name__ == "__main__":
    main()
