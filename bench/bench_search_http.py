"""Tool search over real HTTP: an MCP ``tools/call`` of ``search_tools`` against a plain MCP
``tools/call`` of a trivial tool, on one gunicorn server holding GitHub's REST API as 1,223 tools
(registered as a provider, ``TOOLDISCOVERY_TOOL_SEARCH`` on) beside the trivial tool: once as a
provider answering the catalogue's dicts (each request reads them: the cost every call pays), once as
a provider answering ``Tool`` objects read beforehand (the search's own cost shows).

    python bench/bench_search_http.py [ROUNDS] [REQUESTS] [path/to/github-rest-tools.json] [SIZE...]

With sizes given (``1223 10000``), each size is served from ``Tool`` objects (the catalogue, then
renamed copies whose texts differ, as ``bench/bench_search.py`` makes them); without, the catalogue's
1,223 tools as dicts and as ``Tool`` objects.

    python bench/bench_search_http.py --against OTHER_TREE [ROUNDS] [REQUESTS] [path/to/...json] SIZE...

``--against`` serves each size from this tree and from another checkout of the project (its
``flask_tooldiscovery`` and ``bench``) at the same time, on two servers, the rounds alternating
between them: a change's before and after in the same minutes (the machine is shared); both
servers' answers to a plain call and to every search are checked to be the same.

The server: gunicorn, 1 sync worker. The client: one keep-alive connection sending requests one
after another (no ``wrk`` needed), so a figure is a request's whole cost as a client sees it
(parsing, the pipeline, the answer, the loopback). Each round sends ``REQUESTS`` plain calls,
``REQUESTS`` searches (limit 5) and ``REQUESTS`` plain calls through ``call_tool``, each round
starting with the next. The searches are the plain-language tasks of the four task sets that are
not blind in turn, on from where the last round stopped: a run of six rounds of 100 goes through
their 513 tasks (506 distinct queries) before any comes again, more than the 256 queries whose
analysis is kept, so each search analyses its query (the bench searched the first 100 tasks of
``search_tasks.txt`` again each round, their analysis kept from the second round on). A round's
figure is the median latency, and the ratio is the median over rounds of each round's search
median / plain median (the machine is shared and noisy). The load average is printed before and after.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "github-rest-tools.json"  # beside the repository
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}


def app() -> Any:
    """The served app (gunicorn's factory): the catalogue as a provider, a trivial tool, MCP with search on."""
    from flask import Flask

    from flask_tooldiscovery import ToolDiscovery

    discovery = ToolDiscovery()

    @discovery.tool
    def ping(text: str) -> str:
        """Answer the text given."""
        return text

    data = Path(os.environ.get("BENCH_SEARCH_DATA", DEFAULT_DATA))
    catalogue = json.loads(data.read_text())["tools"]
    if os.environ.get("BENCH_SEARCH_SIZE"):  # Tool objects, copied up to the size (bench_search_calls.py's)
        from bench_search_calls import catalogue as many

        catalogue = many(data, int(os.environ["BENCH_SEARCH_SIZE"]))
    elif os.environ.get("BENCH_SEARCH_PROVIDER") == "tools":  # read once, into Tool objects
        from flask_tooldiscovery.tools.providers import tool_from_object

        catalogue = [tool_from_object(t) for t in catalogue]
    discovery.add_provider(catalogue)
    flask_app = Flask("bench_search_http")
    flask_app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True)
    discovery.init_app(flask_app)
    return flask_app


#: The task sets searched: those not blind (never a ``search_tasks_blind*`` file).
TASK_SETS = ("search_tasks.txt", "search_tasks_dev.txt", "search_tasks_dev2.txt", "search_tasks_dev3.txt")


def tasks() -> list[str]:
    lines = [line for name in TASK_SETS for line in (HERE / name).read_text().splitlines()]
    return [line.split("|")[1].strip() for line in lines if line.strip() and not line.startswith("#")]


def rpc(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data: Path, provider: str, size: int | None = None, tree: Path = HERE.parent) \
        -> tuple[subprocess.Popen[bytes], int]:
    """A gunicorn server of ``tree``'s code (this checkout unless told) and its port."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tree / "bench"), str(tree))),
           "BENCH_SEARCH_DATA": str(data), "BENCH_SEARCH_PROVIDER": provider, "BENCH_SEARCH_SIZE": str(size or "")}
    cmd = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "sync", "-b", f"127.0.0.1:{port}",
           "--log-level", "warning", "bench_search_http:app()"]
    proc = subprocess.Popen(cmd, cwd=tree / "bench", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc, port
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    raise RuntimeError("gunicorn did not start")


def post(conn: http.client.HTTPConnection, body: bytes) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    conn.request("POST", "/mcp", body=body, headers=HEADERS)
    response = conn.getresponse()
    text = response.read()
    took = time.perf_counter() - started
    assert response.status == 200, (response.status, text[:300])
    answer = json.loads(text)
    assert not answer["result"].get("isError"), text[:300]
    return took, answer


def measure(data: Path, provider: str, rounds: int, count: int, size: int | None = None) -> dict[str, list[float]]:
    """Each round's median latency of each case, on a server whose provider answers ``provider``."""
    queries = tasks()
    proc, port = start(data, provider, size)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        plain = rpc("ping", {"text": "hello"})
        through = rpc("call_tool", {"name": "ping", "arguments": {"text": "hello"}})
        searches = [rpc("search_tools", {"query": q, "limit": 5}) for q in queries]
        _, found = post(conn, searches[0])  # builds the index: not measured
        assert found["result"]["structuredContent"]["tools"], found
        for body in (plain, through, *searches):
            post(conn, body)
        medians: dict[str, list[float]] = {"plain tools/call": [], "search_tools": [], "call_tool (ping)": []}
        cases = [("plain tools/call", [plain]), ("search_tools", searches), ("call_tool (ping)", [through])]
        for turn in range(rounds):  # each round starts with the next case
            for label, bodies in cases[turn % 3:] + cases[:turn % 3]:
                times = [post(conn, bodies[(turn * count + i) % len(bodies)])[0] for i in range(count)]
                medians[label].append(statistics.median(times))
        conn.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return medians


def paired(data: Path, other: Path, rounds: int, count: int, size: int) -> None:
    """:func:`measure` of this tree and ``other`` at once, the rounds alternating between them."""
    queries = tasks()
    plain = rpc("ping", {"text": "hello"})
    searches = [rpc("search_tools", {"query": q, "limit": 5}) for q in queries]
    servers: dict[str, tuple[subprocess.Popen[bytes], http.client.HTTPConnection]] = {}
    try:
        answers = {}
        for label, tree in (("other", other), ("this", HERE.parent)):
            proc, port = start(data, "tools", size, tree)
            servers[label] = (proc, http.client.HTTPConnection("127.0.0.1", port, timeout=60))
            answers[label] = [json.dumps(post(servers[label][1], body)[1]) for body in (plain, *searches)]
        print(f"{size:,} tools; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"the two trees' answers the same: {answers['other'] == answers['this']}")
        medians: dict[str, dict[str, list[float]]] = {label: {"plain": [], "search": []} for label in servers}
        for turn in range(rounds):
            for label in (("other", "this") if turn % 2 == 0 else ("this", "other")):
                for case in (("plain", "search") if turn % 4 < 2 else ("search", "plain")):
                    bodies = [plain] if case == "plain" else searches
                    times = [post(servers[label][1], bodies[(turn * count + i) % len(bodies)])[0] for i in range(count)]
                    medians[label][case].append(statistics.median(times))
        for label, tree in (("other", other), ("this", HERE.parent)):
            base, found = medians[label]["plain"], medians[label]["search"]
            ratios = [f / b for f, b in zip(found, base, strict=True)]
            own = statistics.median([f - b for f, b in zip(found, base, strict=True)])
            print(f"  {tree}: plain {statistics.median(base) * 1000:.3f} ms, search_tools "
                  f"{statistics.median(found) * 1000:.3f} ms (its own {own * 1000:.3f} ms); "
                  f"x{statistics.median(ratios):.2f} (rounds x{min(ratios):.2f}-x{max(ratios):.2f})")
        print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        for proc, conn in servers.values():
            conn.close()
            proc.terminate()
            proc.wait(10)


def main() -> None:
    if sys.argv[1:2] == ["--against"]:
        other = Path(sys.argv[2]).resolve()
        args = sys.argv[3:]
        data = Path(args[2]) if len(args) > 2 else DEFAULT_DATA
        for size in [int(arg) for arg in args[3:]] or [1223]:
            paired(data, other, int(args[0]) if args else 8, int(args[1]) if len(args) > 1 else 100, size)
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    data = Path(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_DATA
    sizes = [int(arg) for arg in sys.argv[4:]]
    runs: list[tuple[str, str, int | None]] = [(
        "tools", f"a provider answering {size:,} Tool objects (read once)", size) for size in sizes] or [
        ("dicts", "a provider answering the catalogue's 1,223 dicts (read on every request)", None),
        ("tools", "a provider answering 1,223 Tool objects (read once)", None)]
    for provider, about, size in runs:
        print(f"{about}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        medians = measure(data, provider, rounds, count, size)
        base = medians["plain tools/call"]
        for label, values in medians.items():
            ratios = [v / b for v, b in zip(values, base, strict=True)]
            print(f"  {label:18s} median {statistics.median(values) * 1000:.2f} ms "
                  f"(rounds {min(values) * 1000:.2f}-{max(values) * 1000:.2f}); x{statistics.median(ratios):.2f} "
                  f"of a plain call (rounds x{min(ratios):.2f}-x{max(ratios):.2f})")
        print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
