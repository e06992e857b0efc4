"""MCP ``tools/list`` (and ``tools/call``) in process: microseconds per request through the Flask
test client (no sockets), and a cProfile of the same requests, grouped by function.

Run: ``python bench/profile_mcp.py [N] [METHOD] [VERSION]`` (N requests, default 3000; METHOD
``tools/list`` or ``tools/call``; VERSION the protocol version sent, default 2025-06-18;
``2026-07-28`` sends the per-request ``_meta`` envelope and routing headers too). The app is
``bench/http_apps.py``'s ``ours()`` (50 tools unless ``TOOLS`` says otherwise).
"""

from __future__ import annotations

import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from http_apps import ours

CALL = {"city": "Oslo", "days": 2}


def request_of(method: str, version: str) -> tuple[bytes, dict[str, str]]:
    params: dict[str, object] = {"name": "forecast_7", "arguments": CALL} if method == "tools/call" else {}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": version, "Host": "127.0.0.1"}
    if version >= "2026-07-28":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version,
                           "io.modelcontextprotocol/clientCapabilities": {}}
        headers["Mcp-Method"] = method
        if method == "tools/call":
            headers["Mcp-Name"] = "forecast_7"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    return json.dumps(body).encode(), headers


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    method = sys.argv[2] if len(sys.argv) > 2 else "tools/list"
    version = sys.argv[3] if len(sys.argv) > 3 else "2025-06-18"
    client = ours().test_client()
    data, headers = request_of(method, version)

    def one() -> None:
        response = client.post("/mcp", data=data, headers=headers)
        assert response.status_code == 200, response.get_data()[:300]

    for _ in range(200):
        one()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n // 5):
            one()
        best = min(best, (time.perf_counter() - start) / (n // 5))
    print(f"{method} {version}: {best * 1e6:.1f} us/request (best of 5 rounds of {n // 5}, test client)")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        one()
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()
