"""MCP subscriptions in one process (the in-process change bus): what a 2026-07-28 listen stream
and a handshake-era session stream carry, whom they tell, and the clear refusals of requests they
cannot serve. Across servers and with the official client: test_mcp_subscriptions_servers.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import Identity, ToolDiscovery
from flask_tooldiscovery.state import changes

MODERN = "2026-07-28"
SSE = "application/json, text/event-stream"


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool
    def ping_tool() -> str:
        """A tool."""
        return "pong"

    @d.resource("notes://today", name="today")
    def today() -> str:
        return "note"

    @d.resource("notes://secret", name="secret", scopes=["admin"])
    def secret() -> str:
        return "secret"

    d.identity(lambda req: Identity(subject=req.headers.get("X-User", "ann"),
                                    scopes=tuple(req.headers.get("X-Scopes", "").split())))
    return d


@pytest.fixture
def app(discovery: ToolDiscovery, make_app: Callable[..., Flask]) -> Flask:
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                    TOOLDISCOVERY_MCP_RESOURCES=True, TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True,
                    TOOLDISCOVERY_MCP_SUBSCRIPTION_SECONDS=1.5, TOOLDISCOVERY_STREAM_KEEPALIVE=0.2)


def modern(method: str, params: dict[str, Any], id_: Any = 1, **headers: str) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    return {"json": {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta}},
            "headers": {"Accept": SSE, "MCP-Protocol-Version": MODERN, "Mcp-Method": method, **headers}}


def legacy(method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
    return {"json": {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            "headers": {"Accept": SSE, "MCP-Protocol-Version": "2025-11-25", **headers}}


def frames(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]


def later(app: Flask, *announce: Callable[[], object]) -> threading.Thread:
    """Announce changes from another thread once the stream listens (as another request would)."""
    before = changes.LOCAL.listening

    def run() -> None:
        deadline = time.monotonic() + 10
        while changes.LOCAL.listening <= before and time.monotonic() < deadline:
            time.sleep(0.01)
        with app.app_context():
            for call in announce:
                call()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_listen_stream_acknowledges_what_it_honours_then_carries_only_that(app, discovery) -> None:
    client = app.test_client()
    thread = later(app, lambda: discovery.resource_changed("notes://other"), lambda: discovery.list_changed("prompts"),
                   lambda: discovery.resource_changed("notes://today"), lambda: discovery.list_changed("tools"),
                   lambda: discovery.list_changed("resources"))
    response = client.post("/mcp", **modern("subscriptions/listen", {"notifications": {
        "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": False,
        "resourceSubscriptions": ["notes://today", "notes://secret", "notes://nowhere"]}}, id_="sub-1"))
    thread.join()
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    got = frames(response.get_data(as_text=True))
    stamp = {"io.modelcontextprotocol/subscriptionId": "sub-1"}
    assert got[0] == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["notes://today"]}, "_meta": stamp}}
    assert got[1:3] == [
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://today",
                                                                                   "_meta": stamp}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": stamp}}]
    assert got[3]["id"] == "sub-1" and got[3]["result"]["resultType"] == "complete"  # the stream's time is up
    assert got[3]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
    assert len(got) == 4


def test_a_caller_who_may_read_a_resource_may_subscribe_to_it(app) -> None:
    response = app.test_client().post("/mcp", **modern("subscriptions/listen", {"notifications": {
        "resourceSubscriptions": ["notes://secret"]}}, **{"X-User": "bea", "X-Scopes": "admin"}))
    assert frames(response.get_data(as_text=True))[0]["params"]["notifications"] == {
        "resourceSubscriptions": ["notes://secret"]}


def test_registering_after_start_announces_the_list_change(app, discovery) -> None:
    @discovery.prompt
    def greeting() -> str:
        """Say hello."""
        return "Hello!"

    def register() -> None:
        discovery.add_tool(lambda: "new", name="late_tool", description="Registered late.")
        discovery.resource("notes://late", name="late")(lambda: "late")
        discovery.add_prompt(lambda: "Later.", name="late_prompt", description="Registered late.")

    thread = later(app, register)
    response = app.test_client().post("/mcp", **modern("subscriptions/listen", {"notifications": {
        "toolsListChanged": True, "resourcesListChanged": True, "promptsListChanged": True}}))
    thread.join()
    got = frames(response.get_data(as_text=True))
    assert got[0]["params"]["notifications"] == {"toolsListChanged": True, "promptsListChanged": True,
                                                 "resourcesListChanged": True}
    assert [f.get("method") for f in got[1:4]] == ["notifications/tools/list_changed",
                                                   "notifications/resources/list_changed",
                                                   "notifications/prompts/list_changed"]


def test_the_handshake_era_session_stream_carries_updates_of_its_own_subscriptions(app, discovery) -> None:
    client = app.test_client()
    init = client.post("/mcp", **legacy("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                       "clientInfo": {"name": "t", "version": "1"}}))
    session = init.headers["Mcp-Session-Id"]
    assert init.json["result"]["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert init.json["result"]["capabilities"]["tools"] == {"listChanged": True}
    assert client.post("/mcp", **legacy("resources/subscribe", {"uri": "notes://today"},
                                        **{"Mcp-Session-Id": session})).json["result"] == {}
    # another caller with the same session id has no subscriptions of its own
    other = later(app, lambda: discovery.resource_changed("notes://today"), lambda: discovery.list_changed("tools"))
    stream = client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
    other.join()
    assert stream.mimetype == "text/event-stream"
    assert frames(stream.get_data(as_text=True)) == [
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://today"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    thread = later(app, lambda: discovery.resource_changed("notes://today"))
    stranger = client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session, "X-User": "eve"})
    thread.join()
    assert frames(stranger.get_data(as_text=True)) == []
    assert client.post("/mcp", **legacy("resources/unsubscribe", {"uri": "notes://today"},
                                        **{"Mcp-Session-Id": session})).json["result"] == {}
    thread = later(app, lambda: discovery.resource_changed("notes://today"))
    after = client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
    thread.join()
    assert frames(after.get_data(as_text=True)) == []


@pytest.mark.parametrize(("call", "status", "code", "words"), [
    (modern("subscriptions/listen", {}), 400, -32602, "params.notifications"),
    (modern("subscriptions/listen", {"notifications": {"resourceSubscriptions": "notes://today"}}), 400, -32602,
     "list of URIs"),
    ({**modern("subscriptions/listen", {"notifications": {}}),
      "headers": {**modern("subscriptions/listen", {})["headers"], "Accept": "application/json"}}, 400, -32600,
     "text/event-stream"),
    (modern("resources/subscribe", {"uri": "notes://today"}), 404, -32601, "Method not found"),
    (legacy("subscriptions/listen", {"notifications": {}}), 200, -32601, "Method not found"),
    (legacy("resources/subscribe", {"uri": "notes://today"}), 400, -32600, "Mcp-Session-Id"),
    (legacy("resources/subscribe", {"uri": "notes://nowhere"}, **{"Mcp-Session-Id": "s" * 32}), 200, -32002,
     "Resource not found"),
    (legacy("resources/subscribe", {"uri": "notes://secret"}, **{"Mcp-Session-Id": "s" * 32}), 200, -32002,
     "Resource not found"),
    (legacy("resources/unsubscribe", {}, **{"Mcp-Session-Id": "s" * 32}), 200, -32602, "params.uri"),
])
def test_requests_a_subscription_cannot_serve_get_a_clear_error(app, call, status, code, words) -> None:
    response = app.test_client().post("/mcp", **call)
    assert response.status_code == status
    assert response.json["error"]["code"] == code and words in response.json["error"]["message"]


def test_a_get_without_a_session_is_not_a_stream(app) -> None:
    response = app.test_client().get("/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405 and "Mcp-Session-Id" in response.json["error"]["message"]
    assert "GET" in response.headers["Allow"]


def test_without_the_setting_nothing_changes(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                   TOOLDISCOVERY_MCP_RESOURCES=True)
    client = app.test_client()
    init = client.post("/mcp", **legacy("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                       "clientInfo": {"name": "t", "version": "1"}}))
    # the session id names what the client declared (tests/test_mcp_declared_capabilities.py), nothing more
    assert init.headers["Mcp-Session-Id"].endswith(".c")
    assert init.json["result"]["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}
    assert client.post("/mcp", **modern("subscriptions/listen", {"notifications": {}})).json["error"]["code"] == -32601
    assert client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": "s" * 32}).status_code == 405


def test_list_changed_names_only_lists(app, discovery) -> None:
    with app.app_context(), pytest.raises(ValueError, match="'tool'"):
        discovery.list_changed("tool")


def test_with_tool_search_list_changed_is_still_announced_and_sent(discovery, make_app) -> None:
    """``tools/list`` shows only the search tools, yet a client is told the tools changed (what
    ``search_tools`` finds did): the capability in both eras, the notification on a listen stream."""
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                   TOOLDISCOVERY_TOOL_SEARCH=True, TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True,
                   TOOLDISCOVERY_MCP_SUBSCRIPTION_SECONDS=1.5, TOOLDISCOVERY_STREAM_KEEPALIVE=0.2)
    client = app.test_client()
    init = client.post("/mcp", **legacy("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                       "clientInfo": {"name": "t", "version": "1"}}))
    assert init.json["result"]["capabilities"]["tools"] == {"listChanged": True}
    found = client.post("/mcp", **modern("server/discover", {}))
    assert found.json["result"]["capabilities"]["tools"] == {"listChanged": True}
    listed = client.post("/mcp", **legacy("tools/list", {}, **{"Mcp-Session-Id": init.headers["Mcp-Session-Id"]}))
    assert [t["name"] for t in listed.json["result"]["tools"]] == ["search_tools", "call_tool"]
    thread = later(app, lambda: discovery.add_tool(lambda: "new", name="late_tool", description="Registered late."))
    response = client.post("/mcp", **modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    thread.join()
    got = frames(response.get_data(as_text=True))
    assert [f.get("method") for f in got[1:2]] == ["notifications/tools/list_changed"]
    search = {"name": "search_tools", "arguments": {"query": "registered late"}}
    late = client.post("/mcp", **modern("tools/call", search, **{"Mcp-Name": "search_tools"})).json
    assert [t["name"] for t in late["result"]["structuredContent"]["tools"]] == ["late_tool"]
