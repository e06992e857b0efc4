"""WSGI/ASGI apps served side by side by ``bench/bench_http.py`` (gunicorn / uvicorn import them).

``ours()``: every dialect with 50 tools (``TOOLS`` env var to change; ``HIDDEN``: that many more,
each needing a scope no anonymous caller holds). ``bare()``: a bare Flask app
whose routes return the very same discovery bytes our dialects send, and a view that parses the
JSON, calls the same function and returns JSON. ``raw()``: a raw WSGI callable serving the same
bytes. ``sdk()``: the official MCP SDK's FastMCP (``MCPServer`` in mcp 2.x) stateless
streamable-HTTP server, same tools.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
logging.disable(logging.INFO)

from flask import Flask, Response, jsonify, request  # noqa: E402

from flask_tooldiscovery import ToolDiscovery  # noqa: E402

N_TOOLS = int(os.environ.get("TOOLS", "50"))
#: More tools, each needing the ``admin`` scope: anonymous callers do not see them (``HIDDEN`` env var).
N_HIDDEN = int(os.environ.get("HIDDEN", "0"))
#: The tools' names: ``forecast_<i>``, with ``forecast_7`` (the one every bench calls) always among them.
NAMES = [f"forecast_{i}" for i in range(N_TOOLS - 1)] + [f"forecast_{max(N_TOOLS - 1, 7)}"] if N_TOOLS else []
DIALECTS = ["explorer", "opal", "oxp", "tdp", "mcp"]
#: path on our app -> path on the bare and raw apps (same bytes).
DISCOVERY = {"/opal/discovery": "/opal", "/oxp/tools": "/oxp", "/api/v1/tools": "/tdp", "/explorer/tools": "/explorer"}


def forecast(city: str, days: int = 1) -> dict[str, Any]:
    """Fetch a forecast.

    Args:
        city: City name.
        days: How many days.
    """
    return {"city": city, "days": days}


def ours() -> Flask:
    d = ToolDiscovery()
    for name in NAMES:
        d.add_tool(forecast, name=name)
    for i in range(N_HIDDEN):
        d.add_tool(forecast, name=f"hidden_{i}", scopes=["admin"])
    app = Flask("bench")
    app.config.update(TOOLDISCOVERY_DIALECTS=DIALECTS, TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_ALLOWED_HOSTS=["127.0.0.1", "localhost"])
    d.init_app(app)
    return app


def _documents() -> dict[str, bytes]:
    client = ours().test_client()
    return {bare: client.get(path, headers={"Host": "127.0.0.1"}).get_data() for path, bare in DISCOVERY.items()}


def bare() -> Flask:
    app = Flask("bare")
    for path, body in _documents().items():
        app.add_url_rule(path, path, (lambda body=body: Response(body, mimetype="application/json")))

    @app.post("/call")
    def call() -> Response:
        return jsonify(forecast(**request.get_json()))

    return app


def raw() -> Any:
    documents = _documents()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        body = documents[environ["PATH_INFO"]]
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


def sdk() -> Any:
    from mcp.server.mcpserver import MCPServer  # mcp 2.x's name for FastMCP

    server = MCPServer("bench", log_level="WARNING")
    for name in NAMES:
        server.add_tool(forecast, name=name)
    return server.streamable_http_app(stateless_http=True, json_response=True, streamable_http_path="/mcp")


if __name__ == "__main__":
    print(json.dumps({k: len(v) for k, v in _documents().items()}))
