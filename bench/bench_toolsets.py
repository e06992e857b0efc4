"""Toolsets against the full list and against tool search: the bytes an MCP client reads from
``tools/list`` (every page) at the full mount ``/mcp`` and at each toolset's ``/mcp/x/<name>``, with
GitHub's REST API as 1,223 tools (registered as a provider; each tool tagged with GitHub's own
category of the operation, its operationId's first part), and what tool search costs instead
(``tools/list`` with ``TOOLDISCOVERY_TOOL_SEARCH``, plus one ``search_tools`` answer of 5 tools);
also the read-only forms (``/mcp/readonly``, ``/mcp/x/issues/readonly``) and two toolsets chosen by
the ``X-MCP-Toolsets`` header.

    python bench/bench_toolsets.py [--learned] [path/to/github-rest-tools.json] [category ...]

Bytes, not time: the figures are the same on every machine (Flask's test client, 2025-06-18).

``--learned``: time instead, of the first page of ``tools/list`` in process (the WSGI callable with a
prepared environ), at the full mount, chosen by header and at ``/mcp/readonly``, with the fast path's
learned answers and through Flask (a ``request_started`` receiver turns the fast path off). The
catalogue is registered as Python tools (its names, descriptions, tags and hints; one parameter
each), as a provider's answers are never learned. Microseconds per request, the best of 7 rounds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "github-rest-tools.json"  # beside the repository
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
CATEGORIES = ("issues", "pulls", "repos", "actions", "git", "search")


def catalogue(path: Path) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(path.read_text())["tools"]
    for tool in tools:
        category = tool["x-http"]["operationId"].split("/")[0]
        tool["category"], tool["tags"] = category, [category]
    return tools


def app(tools: list[dict[str, Any]], categories: tuple[str, ...], **config: Any) -> Any:
    from flask import Flask

    from flask_tooldiscovery import ToolDiscovery

    flask_app = Flask("bench_toolsets")
    flask_app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, **config,
                            TOOLDISCOVERY_TOOLSETS={name: {"tags": [name]} for name in categories})
    ToolDiscovery(tools=tools, call_handler=lambda name, arguments: None).init_app(flask_app)
    return flask_app


def rpc(client: Any, path: str, method: str, params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    response = client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                           headers={**HEADERS, **(headers or {})})
    return len(response.get_data()), response.get_json()["result"]


def listing(client: Any, path: str, headers: dict[str, str] | None = None) -> tuple[int, int, int]:
    """(tools, pages, bytes) of a whole ``tools/list``."""
    tools = pages = size = 0
    cursor = None
    while True:
        read, result = rpc(client, path, "tools/list", {"cursor": cursor} if cursor else None, headers)
        tools, pages, size = tools + len(result["tools"]), pages + 1, size + read
        cursor = result.get("nextCursor")
        if not cursor:
            return tools, pages, size


def learned(tools: list[dict[str, Any]], categories: tuple[str, ...]) -> None:
    """The ``--learned`` figures (see the module's text)."""
    import io
    import time

    from flask import Flask, request_started
    from werkzeug.test import EnvironBuilder

    from flask_tooldiscovery import ToolDiscovery

    discovery = ToolDiscovery()
    for tool in tools:
        discovery.add_tool(lambda repo="": repo, name=tool["name"].replace("/", "_"),
                           description=tool.get("description") or tool["name"], tags=tool["tags"],
                           annotations={k: v for k, v in (tool.get("annotations") or {}).items()
                                        if k in ("readOnlyHint", "destructiveHint")})
    flask_app = Flask("bench_toolsets_learned")
    flask_app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                            TOOLDISCOVERY_TOOLSETS={name: {"tags": [name]} for name in categories})
    discovery.init_app(flask_app)
    data = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    cases = (("/mcp (full)", "/mcp", {}), ("X-MCP-Toolsets: issues,pulls", "/mcp", {"X-MCP-Toolsets": "issues,pulls"}),
             ("X-MCP-Readonly: true", "/mcp", {"X-MCP-Readonly": "true"}), ("/mcp/readonly", "/mcp/readonly", {}))

    def runner(path: str, headers: dict[str, str]) -> Any:
        environ = EnvironBuilder(path=path, method="POST", data=data,
                                 headers={**HEADERS, "Host": "127.0.0.1", **headers}).get_environ()
        status: list[str] = []

        def one() -> None:
            answer = flask_app.wsgi_app({**environ, "wsgi.input": io.BytesIO(data)},
                                        lambda line, headers, exc_info=None: status.append(line))
            b"".join(answer)
            getattr(answer, "close", lambda: None)()
            assert status.pop().startswith("200")

        return one

    def best(one: Any) -> float:
        for _ in range(50):
            one()
        rounds = []
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(200):
                one()
            rounds.append((time.perf_counter() - start) / 200)
        return min(rounds) * 1e6

    fast = {label: best(runner(path, headers)) for label, path, headers in cases}
    request_started.connect(lambda sender, **extra: None, flask_app, weak=False)
    slow = {label: best(runner(path, headers)) for label, path, headers in cases}
    print(f"{'tools/list, first page':<30}{'learned':>10}{'Flask':>10}  (us per request)")
    for label, _, _ in cases:
        print(f"{label:<30}{fast[label]:>10.0f}{slow[label]:>10.0f}")


def main() -> None:
    if "--learned" in sys.argv:
        sys.argv.remove("--learned")
        path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
        learned(catalogue(path), tuple(sys.argv[2:]) or CATEGORIES)
        return
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    categories = tuple(sys.argv[2:]) or CATEGORIES
    tools = catalogue(path)
    client = app(tools, categories).test_client()
    full = listing(client, "/mcp")
    print(f"{'mount':<30}{'tools':>7}{'pages':>7}{'bytes':>11}{'of full':>9}")
    print(f"{'/mcp (full)':<30}{full[0]:>7}{full[1]:>7}{full[2]:>11,}{'100%':>9}")
    for name in categories:
        count, pages, size = listing(client, f"/mcp/x/{name}")
        print(f"{'/mcp/x/' + name:<30}{count:>7}{pages:>7}{size:>11,}{size / full[2]:>9.1%}")
    for label, where, headers in (("/mcp/readonly", "/mcp/readonly", None),
                                  ("/mcp/x/issues/readonly", "/mcp/x/issues/readonly", None),
                                  ("X-MCP-Toolsets: issues,pulls", "/mcp", {"X-MCP-Toolsets": "issues,pulls"})):
        count, pages, size = listing(client, where, headers)
        print(f"{label:<30}{count:>7}{pages:>7}{size:>11,}{size / full[2]:>9.1%}")
    searching = app(tools, (), TOOLDISCOVERY_TOOL_SEARCH=True).test_client()
    count, pages, size = listing(searching, "/mcp")
    found, _ = rpc(searching, "/mcp", "tools/call",
                   {"name": "search_tools", "arguments": {"query": "comment on an issue", "limit": 5}})
    print(f"{'/mcp, tool search':<30}{count:>7}{pages:>7}{size:>11,}{size / full[2]:>9.1%}"
          f"   + {found:,} bytes a search_tools answer of 5 tools")


if __name__ == "__main__":
    main()
