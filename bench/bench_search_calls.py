"""Tool search end to end in process: an MCP ``tools/call`` of ``search_tools`` (request to answer,
through the app's WSGI callable: the body read, the JSON-RPC checked, the pipeline, the search, each
hit's ``tools/list`` entry, the answer encoded) against a plain MCP ``tools/call`` of a trivial tool
on the same app, at 1,223 tools (GitHub's REST API) and at 10,000 (the catalogue with renamed copies
whose texts differ, as ``bench/bench_search.py`` makes them), in both MCP eras (2025-06-18 and the
stateless 2026-07-28 revision with its routing headers). The tools come from a provider answering
``Tool`` objects read beforehand, beside the trivial tool; ``TOOLDISCOVERY_TOOL_SEARCH`` is on.

    python bench/bench_search_calls.py [ROUNDS] [REQUESTS] [path/to/github-rest-tools.json]
    python bench/bench_search_calls.py --profile [SIZE]   # cProfile of 300 searches, top functions

Each round sends ``REQUESTS`` plain calls then ``REQUESTS`` searches (the plain-language tasks of
``bench/search_tasks.txt`` in turn, limit 5), the order alternating between rounds; a round gives
each case's median and p95, wall and CPU (``time.process_time``: what the machine's other work does
not add). The figure is the median over rounds, with the rounds' range; the ratio is search / plain
per round. The load average is printed before and after: the machine is shared.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
DEFAULT_DATA = Path(os.environ.get("TOOLDISCOVERY_GITHUB_TOOLS")  # as the tests find it, else beside the repository
                    or HERE.parent.parent / "shared" / "data" / "github-rest-tools.json")
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def catalogue(data: Path, size: int) -> list[Any]:
    """``size`` tools: the catalogue, then renamed copies whose texts differ (``bench_search.py``'s)."""
    from bench_search import _renumbered

    from flask_tooldiscovery.tools.model import Tool
    from flask_tooldiscovery.tools.providers import tool_from_object

    tools = [tool_from_object(t) for t in json.loads(data.read_text())["tools"]]
    many, n = [*tools], 0
    while len(many) < size:
        n += 1
        many += [Tool(name=f"{t.name}_{n}", description=f"{t.description} ({n})", title=f"{t.title} ({n})",
                      input_schema=_renumbered(t.input_schema, n), annotations=t.annotations)
                 for t in tools[: size - len(many)]]
    return many[:size]


def app(tools: list[Any]) -> Any:
    from flask import Flask

    from flask_tooldiscovery import ToolDiscovery

    discovery = ToolDiscovery()

    @discovery.tool
    def ping(text: str) -> str:
        """Answer the text given."""
        return text

    discovery.add_provider(lambda: tools)
    flask_app = Flask("bench_search_calls")
    flask_app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True,
                            TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    discovery.init_app(flask_app)
    return flask_app


def tasks() -> list[str]:
    lines = (HERE / "search_tasks.txt").read_text().splitlines()
    return [line.split("|")[1].strip() for line in lines if line.strip() and not line.startswith("#")]


def request(era: str, name: str, arguments: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """A ``tools/call``'s body and headers (WSGI environ keys) in ``era``."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    headers = {"CONTENT_TYPE": "application/json", "HTTP_ACCEPT": "application/json, text/event-stream"}
    if era == "stateless":
        params = {"_meta": META, **params}
        headers.update(HTTP_MCP_PROTOCOL_VERSION=MODERN, HTTP_MCP_METHOD="tools/call", HTTP_MCP_NAME=name)
    else:
        headers["HTTP_MCP_PROTOCOL_VERSION"] = "2025-06-18"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    return body, headers


def caller(wsgi: Any) -> Callable[[bytes, dict[str, str]], bytes]:
    """Sends one request to the WSGI callable as a server would (a fresh environ, the body read whole)."""
    base = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "SCRIPT_NAME": "", "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
            "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False, "wsgi.version": (1, 0)}
    status: list[str] = []

    def start_response(s: str, headers: Any, exc_info: Any = None) -> None:
        status.append(s)

    def send(body: bytes, headers: dict[str, str]) -> bytes:
        status.clear()
        environ = {**base, **headers, "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
        chunks = wsgi(environ, start_response)
        try:
            out = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        assert status[0].startswith("200"), (status, out[:300])
        return out

    return send


def check(answer: bytes, search: bool) -> None:
    result = json.loads(answer)["result"]
    assert not result.get("isError"), answer[:300]
    if search:
        assert result["structuredContent"]["tools"], answer[:300]


def p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95)]


def timed(send: Callable[[bytes, dict[str, str]], bytes], requests: list[tuple[bytes, dict[str, str]]],
          count: int) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for i in range(count):
        body, headers = requests[i % len(requests)]
        started, used = time.perf_counter(), time.process_time()
        send(body, headers)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    return wall, cpu


def measure(tools: list[Any], era: str, rounds: int, count: int) -> dict[str, dict[str, list[float]]]:
    send = caller(app(tools).wsgi_app)
    plain = [request(era, "ping", {"text": "hello"})]
    searches = [request(era, "search_tools", {"query": q, "limit": 5}) for q in tasks()]
    check(send(*searches[0]), True)  # builds the index: not measured
    check(send(*plain[0]), False)
    for body, headers in searches:  # every query once (warm, as a server that has run a while)
        check(send(body, headers), True)
    figures: dict[str, dict[str, list[float]]] = {case: {"median": [], "p95": [], "cpu median": [], "cpu p95": []}
                                                  for case in ("plain", "search")}
    for turn in range(rounds):
        order = [("plain", plain), ("search", searches)]
        for case, requests in order if turn % 2 == 0 else order[::-1]:
            wall, cpu = timed(send, requests, count)
            figures[case]["median"].append(statistics.median(wall))
            figures[case]["p95"].append(p95(wall))
            figures[case]["cpu median"].append(statistics.median(cpu))
            figures[case]["cpu p95"].append(p95(cpu))
    return figures


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ({min(values) * 1000:.2f}-{max(values) * 1000:.2f})"


def report(label: str, figures: dict[str, dict[str, list[float]]]) -> None:
    plain, search = figures["plain"], figures["search"]
    print(f"  {label}")
    for kind in ("median", "p95", "cpu median", "cpu p95"):
        ratios = [s / p for s, p in zip(search[kind], plain[kind], strict=True)]
        print(f"    {kind:10s} plain {ms(plain[kind])} ms  search_tools {ms(search[kind])} ms  "
              f"ratio x{statistics.median(ratios):.2f} (x{min(ratios):.2f}-x{max(ratios):.2f})")


def profile(data: Path, size: int) -> None:
    import cProfile
    import pstats

    send = caller(app(catalogue(data, size)).wsgi_app)
    searches = [request("2025", "search_tools", {"query": q, "limit": 5}) for q in tasks()]
    for body, headers in searches:
        send(body, headers)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(300):
        send(*searches[i % len(searches)])
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--profile":
        profile(DEFAULT_DATA, int(args[1]) if len(args) > 1 else 10_000)
        return
    rounds = int(args[0]) if args else 5
    count = int(args[1]) if len(args) > 1 else 200
    data = Path(args[2]) if len(args) > 2 else DEFAULT_DATA
    for size in (1223, 10_000):
        tools = catalogue(data, size)
        for era in ("2025-06-18", "stateless"):
            print(f"{size:,} tools, {era}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            report(f"medians over {rounds} rounds of {count} (range of rounds)", measure(tools, era, rounds, count))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
