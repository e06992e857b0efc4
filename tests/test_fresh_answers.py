"""No answer goes stale: a tool registered at run time, a category named, a tool changed by
assignment, after documents were served and learned by the fast path (GET and MCP's POST), show
in every dialect's next answer. And the fast path steps aside, saying so once, for an app that
runs code of its own around requests."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.serving.fastpath import FastPath

ALL = ["explorer", "opal", "oxp", "tdp", "mcp", "utcp", "openapi", "server_card", "manifest"]
LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def idents(dialect: str, body: Any) -> list[str]:
    """The tool identifiers one dialect's discovery answer shows (OXP prefixes its toolkit,
    OpenAPI names operations and paths)."""
    if dialect == "opal":
        return [f["name"] for f in body["functions"]]
    if dialect == "explorer":
        return [t["name"] for t in body]
    if dialect == "mcp":
        return [t["name"] for t in body["result"]["tools"]]
    if dialect == "openapi":
        return [*body["paths"], *(op.get("operationId", "") for item in body["paths"].values() for op in item.values())]
    return [t["name"] for t in body[{"oxp": "items", "tdp": "tools", "utcp": "tools"}[dialect]]]


def shows(dialect: str, body: Any, name: str) -> bool:
    return any(name in ident for ident in idents(dialect, body))


def discover(client: FlaskClient, dialect: str) -> Any:
    if dialect == "mcp":
        response = client.post("/mcp", json=LIST, headers=HEADERS)
    else:
        path = {"explorer": "/explorer/tools", "opal": "/opal/discovery", "oxp": "/oxp/tools",
                "tdp": "/api/v1/tools", "utcp": "/utcp", "openapi": "/tools/openapi.json"}[dialect]
        response = client.get(path)
    assert response.status_code == 200, response.data
    return response.get_json()


def learned(app: Flask) -> int:
    fast: FastPath = app.extensions["tooldiscovery.fast"]
    return sum(len(s.answers) for s in fast._served.values()) + len(fast._posts)


def make() -> tuple[ToolDiscovery, Flask]:
    discovery = ToolDiscovery()

    @discovery.tool
    def first(x: int) -> int:
        """The first tool."""
        return x

    app = Flask("fresh")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=ALL, TOOLDISCOVERY_ALLOW_EXECUTE=False)
    discovery.init_app(app)
    return discovery, app


DISCOVERING = ["explorer", "opal", "oxp", "tdp", "mcp", "utcp", "openapi"]


def test_a_tool_and_a_category_added_at_run_time_show_in_every_next_answer() -> None:
    discovery, app = make()
    client = app.test_client()
    for _ in range(3):  # served, learned, then answered by the fast path
        for dialect in DISCOVERING:
            assert shows(dialect, discover(client, dialect), "first")
    assert learned(app) >= len(DISCOVERING) - 1  # the GETs and MCP's POST were learned

    def second(y: str) -> str:
        """A tool registered while the app serves."""
        return y

    discovery.add_tool(second, category="math")
    discovery.category("math", "Math", description="Numbers.")
    for dialect in DISCOVERING:
        body = discover(client, dialect)
        assert shows(dialect, body, "second"), (dialect, body)
        if dialect == "tdp":
            assert {"id": "math", "name": "Math", "description": "Numbers."} in body["categories"]
    card = client.get("/.well-known/tool-discovery")
    assert card.status_code == 200


def test_a_category_alone_shows_after_discovery_was_learned() -> None:
    discovery, app = make()
    client = app.test_client()
    for _ in range(3):
        assert discover(client, "tdp")["categories"] == []
    assert learned(app) >= 1
    discovery.category("math", "Math")
    assert discover(client, "tdp")["categories"] == [{"id": "math", "name": "Math"}]
    discovery.category("math", "Mathematics")  # declared anew: the new name shows
    assert discover(client, "tdp")["categories"] == [{"id": "math", "name": "Mathematics"}]


@pytest.mark.parametrize("dialect", DISCOVERING)
def test_a_tool_changed_by_assignment_shows_in_the_next_answer(dialect: str) -> None:
    discovery, app = make()
    client = app.test_client()
    for _ in range(3):
        before = discover(client, dialect)
    tool = discovery.registry.resolve().get("first")
    assert tool is not None
    tool.description = "Changed while serving."
    after = discover(client, dialect)
    assert "Changed while serving." in json.dumps(after) and "Changed while serving." not in json.dumps(before)


def test_an_assigned_input_schema_is_what_calls_are_checked_and_coerced_against() -> None:
    discovery = ToolDiscovery()

    @discovery.tool
    def echo(value: int) -> Any:
        """Echo."""
        return value

    app = Flask("assign")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_COERCE_ARGUMENTS=True)
    discovery.init_app(app)
    client = app.test_client()
    ok = client.post("/api/v1/tools/execute", json={"tool_name": "echo", "arguments": {"value": "3"}})
    assert ok.get_json()["result"] == {"value": 3}  # coerced to the declared integer
    tool = discovery.registry.resolve().get("echo")
    assert tool is not None
    tool.input_schema = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
    tool.load_arguments = None
    now = client.post("/api/v1/tools/execute", json={"tool_name": "echo", "arguments": {"value": "3"}})
    assert now.get_json()["result"] == {"value": "3"}  # the new schema: a string stays a string


def test_the_fast_path_steps_aside_for_an_app_with_request_hooks_and_says_so_once(
        caplog: pytest.LogCaptureFixture) -> None:
    _, app = make()
    seen: list[str] = []

    @app.before_request
    def count() -> None:
        seen.append("x")

    client = app.test_client()
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        for _ in range(4):
            discover(client, "opal")
            discover(client, "mcp")
    assert len(seen) == 8  # every request ran the app's hook: none was answered without Flask
    assert learned(app) == 0
    said = [r.getMessage() for r in caplog.records if "learned discovery answers are off" in r.getMessage()]
    assert len(said) == 1 and "before_request" in said[0]


def test_middleware_applied_before_init_app_turns_the_fast_path_off_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    from werkzeug.middleware.proxy_fix import ProxyFix

    discovery = ToolDiscovery()
    discovery.add_tool(lambda: 1, name="one", description="One.")
    app = Flask("proxied")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    app.wsgi_app = ProxyFix(app.wsgi_app)  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        discovery.init_app(app)
    assert app.extensions["tooldiscovery.fast"] is None
    assert any("wrapped before init_app" in r.getMessage() for r in caplog.records)
    assert app.test_client().get("/opal/discovery").status_code == 200
