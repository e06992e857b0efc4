"""Dialect mcp: the official client in both eras against a live server, and raw JSON-RPC."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from flask_tooldiscovery import ToolDiscovery, ToolError

from .conftest import live_server

TOKEN = "mcp-token"


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool(annotations={"readOnlyHint": True, "title": "Adder"})
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @d.tool
    async def forecast(city: str) -> dict:
        """Forecast for a city."""
        await asyncio.sleep(0)
        if city == "Atlantis":
            raise ToolError("Unknown city: Atlantis", additional_prompt_content="Try a real city.")
        return {"city": city, "temp": 12.5}

    @d.tool
    def names() -> list[str]:
        """A list result."""
        return ["a", "b"]

    @d.tool
    def untyped():
        """No output schema."""
        return "plain text"

    return d


@pytest.fixture
def app(discovery, make_app):
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_SERVER_NAME="acme-mcp",
                    TOOLDISCOVERY_SERVER_DESCRIPTION="Acme tools.")


async def exercise(url: str, mode: str, **kwargs: Any) -> dict[str, Any]:
    async with Client(url, mode=mode, **kwargs) as client:
        listed = await client.list_tools()
        added = await client.call_tool("add", {"a": 2, "b": 3})
        weather = await client.call_tool("forecast", {"city": "Oslo"})
        failed = await client.call_tool("forecast", {"city": "Atlantis"})
        invalid = await client.call_tool("add", {"a": "x"})
        listed_names = await client.call_tool("names", {})
        return {"tools": listed.tools, "added": added, "weather": weather, "failed": failed,
                "invalid": invalid, "names": listed_names}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_official_client(app, mode) -> None:
    with live_server(app) as base:
        out = asyncio.run(exercise(f"{base}/mcp", mode))
    tools = {t.name: t for t in out["tools"]}
    assert list(tools) == ["add", "forecast", "names", "untyped"]
    assert tools["add"].title == "Adder" and tools["add"].annotations.read_only_hint is True
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["add"].output_schema == {"type": "object", "properties": {"result": {"type": "number"}},
                                          "required": ["result"]}
    assert tools["untyped"].output_schema is None
    added = out["added"]
    assert added.is_error is False and added.structured_content == {"result": 5.0}
    assert added.content[0].text == "5.0"
    weather = out["weather"]
    assert weather.structured_content == {"city": "Oslo", "temp": 12.5}
    failed = out["failed"]
    assert failed.is_error is True and "Unknown city: Atlantis" in failed.content[0].text
    assert "Try a real city." in failed.content[0].text
    invalid = out["invalid"]
    assert invalid.is_error is True and "b: Missing required parameter" in invalid.content[0].text
    assert out["names"].structured_content == {"result": ["a", "b"]}
    if mode == "auto":  # the modern era stamps serverInfo into every result's _meta
        assert added.meta["io.modelcontextprotocol/serverInfo"]["name"] == "acme-mcp"
    else:
        assert not added.meta


def test_official_client_with_bearer(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_BEARER_TOKEN=TOKEN)

    async def run(headers):
        import httpx2 as httpx  # the SDK's own HTTP client
        from mcp.client.streamable_http import streamable_http_client

        async with httpx.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as c:
                return [t.name for t in (await c.list_tools()).tools]

    with live_server(app) as base:
        try:
            names = asyncio.run(run({"Authorization": f"Bearer {TOKEN}"}))
        except ImportError:
            pytest.skip("this mcp release has no http_client hook")
        assert "add" in names


def rpc(client, method, params=None, id_=1, headers=None, **extra):
    msg = {"jsonrpc": "2.0", "method": method, **extra}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return client.post("/mcp", json=msg, headers=headers or {})


def test_initialize_negotiation(app) -> None:
    c = app.test_client()
    for asked, got in (("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"),
                       ("2025-11-25", "2025-11-25"), ("1999-01-01", "2025-11-25")):
        r = rpc(c, "initialize", {"protocolVersion": asked, "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})
        res = r.get_json()["result"]
        assert res["protocolVersion"] == got
        assert res["serverInfo"]["name"] == "acme-mcp"
        tasks = {"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}} \
            if got == "2025-11-25" else {}
        assert res["capabilities"] == {"tools": {"listChanged": False}, "logging": {}, **tasks}
        assert res["instructions"] == "Acme tools."
        # a session id that keeps nothing on the server: it names what the client declared (none here)
        assert r.headers["Mcp-Session-Id"].endswith(".c")
    assert rpc(c, "ping").get_json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def modern(c, method: str, params: dict | None = None, headers: dict | None = None):
    """A 2026-07-28 request with the routing headers the official SDK sends."""
    params = {"_meta": META, **(params or {})}
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        sent["Mcp-Name"] = params["name"]
    sent.update(headers or {})
    return c.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
                  headers={k: v for k, v in sent.items() if v is not None})


def test_discover_and_modern_envelope(app) -> None:
    c = app.test_client()
    res = modern(c, "server/discover").get_json()["result"]
    assert "2026-07-28" in res["supportedVersions"] and "2025-11-25" in res["supportedVersions"]
    assert res["resultType"] == "complete" and res["capabilities"]["tools"] == {"listChanged": False}
    listed = modern(c, "tools/list").get_json()["result"]
    assert listed["resultType"] == "complete" and listed["ttlMs"] == 0
    assert listed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "acme-mcp"
    called = modern(c, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}).get_json()["result"]
    assert called["structuredContent"] == {"result": 3}


def test_modern_routing_headers_must_agree_with_the_body(app) -> None:
    c = app.test_client()
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    for headers in ({"Mcp-Method": None}, {"Mcp-Method": "tools/list"}, {"Mcp-Name": "names"},
                    {"Mcp-Name": None}, {"MCP-Protocol-Version": "2025-11-25"}):
        r = modern(c, "tools/call", call, headers)
        assert r.status_code == 400 and r.get_json()["error"]["code"] == -32020, headers
        assert r.get_json()["id"] == 7
    encoded = "=?base64?YWRk?="  # "add", as the SDK writes names that are not plain ASCII tokens
    assert modern(c, "tools/call", call, {"Mcp-Name": encoded}).status_code == 200
    twice = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   headers=[("Mcp-Method", "ping"), ("Mcp-Method", "ping")])
    assert twice.status_code == 400 and twice.get_json()["error"]["code"] == -32020


def test_modern_envelope_without_client_capabilities_is_invalid_params(app) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    r = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                                             "params": {"_meta": meta}},
                               headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert r.status_code == 400
    assert r.get_json()["error"]["code"] == -32602 and "clientCapabilities" in r.get_json()["error"]["message"]


def test_methods_2026_07_28_removed_answer_404_method_not_found(app) -> None:
    """``initialize``, ``ping`` and the session-held methods are gone from 2026-07-28: answered as the
    official suite and its reference server answer an unknown method, not as a version error."""
    c = app.test_client()
    for method, params in (("initialize", {"protocolVersion": MODERN, "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}}),
                           ("ping", {}), ("logging/setLevel", {"level": "info"}),
                           ("resources/subscribe", {"uri": "test://x"})):
        r = modern(c, method, params)
        assert r.status_code == 404, method
        assert r.get_json()["id"] == 7 and r.get_json()["error"]["code"] == -32601, method
    assert rpc(c, "ping").get_json()["result"] == {}  # the handshake era keeps them


def test_unsupported_versions_answer_32022_with_the_request_id(app) -> None:
    c = app.test_client()
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 42, "method": "ping"},
               headers={"MCP-Protocol-Version": "2099-01-01"})
    err = r.get_json()
    assert r.status_code == 400 and err["id"] == 42 and err["error"]["code"] == -32022
    assert "2026-07-28" in err["error"]["data"]["supported"] and "2025-06-18" in err["error"]["data"]["supported"]
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2030-01-01"}
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}},
               headers={"MCP-Protocol-Version": "2030-01-01", "Mcp-Method": "tools/list"})
    assert r.get_json()["error"]["code"] == -32022 and r.get_json()["id"] == 5


def test_a_202_has_no_body_and_no_html_type(app) -> None:
    r = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert r.status_code == 202 and r.get_data() == b"" and "Content-Type" not in r.headers


def test_preflight_allows_the_modern_headers(make_app, discovery) -> None:
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_ALLOWED_ORIGINS=["http://localhost:6274"]
                 ).test_client()
    asked = "content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region, authorization"
    pre = c.options("/mcp", headers={"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST",
                                     "Access-Control-Request-Headers": asked})
    allowed = {h.strip().lower() for h in pre.headers["Access-Control-Allow-Headers"].split(",")}
    assert set(asked.replace(" ", "").split(",")) <= allowed
    assert pre.headers["Allow"] == "POST, OPTIONS"


def test_pagination(make_app) -> None:
    d = ToolDiscovery()
    for i in range(7):
        d.add_tool(lambda: None, name=f"t{i}", description="x")
    c = make_app(d, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_PAGE_SIZE=3).test_client()
    seen, cursor = [], None
    while True:
        res = rpc(c, "tools/list", {"cursor": cursor} if cursor else {}).get_json()["result"]
        seen += [t["name"] for t in res["tools"]]
        cursor = res.get("nextCursor")
        if not cursor:
            break
    assert seen == [f"t{i}" for i in range(7)]
    err = rpc(c, "tools/list", {"cursor": "garbage!"}).get_json()["error"]
    assert err["code"] == -32602


@pytest.mark.parametrize("body, status, code", [
    ('{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700),
    ('{"id": 1, "method": "ping"}', 400, -32600),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', 400, -32600),
    ('{"jsonrpc": "2.0", "id": 1, "method": 5}', 400, -32600),
    ('[]', 400, -32600),
    ('"hello"', 400, -32600),
    ('{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}', 200, -32601),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}', 200, -32602),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}', 200, -32602),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": [1]}}', 200, -32602),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}', 200, -32602),
])
def test_jsonrpc_errors(app, body, status, code) -> None:
    r = app.test_client().post("/mcp", data=body, content_type="application/json")
    assert r.status_code == status
    doc = r.get_json()
    assert doc["jsonrpc"] == "2.0" and doc["error"]["code"] == code
    if code == -32602 and "nope" in body:
        assert doc["error"]["message"] == "Unknown tool: nope"


def test_notifications_responses_and_batches(app) -> None:
    c = app.test_client()
    r = rpc(c, "notifications/initialized", id_=None)
    assert r.status_code == 202 and r.data == b""
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "result": {}})
    assert r.status_code == 202 and r.data == b""
    r = c.post("/mcp", json=[{"jsonrpc": "2.0", "method": "notifications/initialized"},
                             {"jsonrpc": "2.0", "id": "a", "method": "ping"},
                             {"jsonrpc": "2.0", "id": "b", "method": "nope"}])
    answers = {a["id"]: a for a in r.get_json()}
    assert answers["a"]["result"] == {} and answers["b"]["error"]["code"] == -32601


def test_get_and_delete_are_405(app) -> None:
    c = app.test_client()
    for method in ("get", "delete"):
        r = getattr(c, method)("/mcp")
        assert r.status_code == 405 and "POST" in r.headers["Allow"]


def test_origin_checks(app, discovery, make_app) -> None:
    c = app.test_client()
    assert rpc(c, "ping", headers={"Origin": "https://evil.example"}).status_code == 403
    # Another local port is another website (a dev server, a page opened from disk): not allowed.
    assert rpc(c, "ping", headers={"Origin": "http://localhost:6274"}).status_code == 403
    assert rpc(c, "ping", headers={"Origin": "http://evil.example@localhost"}).status_code == 403
    assert rpc(c, "ping", headers={"Origin": "null"}).status_code == 403
    assert rpc(c, "ping", headers={"Origin": "http://localhost"}).status_code == 200  # the page's own origin
    assert rpc(c, "ping").status_code == 200  # no Origin: not a browser
    allowed = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"],
                       TOOLDISCOVERY_ALLOWED_ORIGINS=["https://app.example", "http://localhost:6274"]).test_client()
    assert rpc(allowed, "ping", headers={"Origin": "https://app.example"}).status_code == 200
    assert rpc(allowed, "ping", headers={"Origin": "http://localhost:6274"}).status_code == 200
    assert rpc(allowed, "ping", headers={"Origin": "http://localhost:6275"}).status_code == 403


def test_dns_rebinding_is_refused(app, discovery, make_app) -> None:
    """A rebinding page has the attacker's name in both Host and Origin: the host is not served."""
    c = app.test_client()
    headers = {"Host": "rebind.evil.example", "Origin": "http://rebind.evil.example"}
    r = rpc(c, "tools/list", headers=headers)
    assert r.status_code == 421 and "tools" not in r.get_data(as_text=True)
    assert rpc(c, "tools/list", headers={"Host": "127.0.0.1:5000"}).status_code == 200
    trusted = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TRUSTED_HOSTS=["tools.example.com"]).test_client()
    assert rpc(trusted, "ping", headers={"Host": "tools.example.com"}).status_code == 200
    assert rpc(trusted, "ping", headers={"Host": "localhost"}).status_code in (400, 421)


def test_bearer_token(discovery, make_app) -> None:
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_BEARER_TOKEN=TOKEN).test_client()
    r = rpc(c, "ping")
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    r = rpc(c, "ping", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert TOKEN not in r.get_data(as_text=True)
    assert rpc(c, "ping", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_unsupported_protocol_header(app) -> None:
    r = rpc(app.test_client(), "ping", headers={"MCP-Protocol-Version": "1.0"})
    assert r.status_code == 400
    assert rpc(app.test_client(), "ping", headers={"MCP-Protocol-Version": "2025-06-18"}).status_code == 200

def test_cors_for_allowed_browser_origins_only(discovery, make_app) -> None:
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"],
                 TOOLDISCOVERY_ALLOWED_ORIGINS="http://localhost:6274").test_client()
    pre = c.options("/mcp", headers={"Origin": "http://localhost:6274",
                                     "Access-Control-Request-Method": "POST",
                                     "Access-Control-Request-Headers": "content-type, mcp-protocol-version"})
    assert pre.status_code == 200
    assert pre.headers["Access-Control-Allow-Origin"] == "http://localhost:6274"
    assert "MCP-Protocol-Version" in pre.headers["Access-Control-Allow-Headers"]
    r = rpc(c, "ping", headers={"Origin": "http://localhost:6274"})
    assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:6274"
    evil = c.options("/mcp", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in evil.headers


def test_a_calls_structured_content_follows_the_tools_output_schema_as_it_changes(make_app) -> None:
    """A tool whose output schema changes (assigned anew, or a provider's tool answered with another
    one) is called with its new schema: a non-object schema's value is wrapped as ``result``, an
    object's is not, whatever was answered before."""
    served: list[dict[str, Any]] = [{"type": "integer"}]

    def provider() -> list[dict[str, Any]]:  # a new tool object when its schema changes
        return [{"name": "provided", "description": "From a provider.", "outputSchema": served[0],
                 "inputSchema": {"type": "object", "properties": {}}}]

    discovery = ToolDiscovery(tools=provider, call_handler=lambda name, arguments: {"n": 3} if
                              served[0]["type"] == "object" else 3)

    @discovery.tool(output_schema={"type": "integer"})
    def score() -> Any:
        """The score."""
        return {"n": 3} if discovery.tools().get("score").output_schema["type"] == "object" else 3

    app = make_app(discovery, TOOLDISCOVERY_ALLOW_EXECUTE=True)
    client = app.test_client()

    def structured(name: str) -> Any:
        answer = rpc(client, "tools/call", {"name": name, "arguments": {}}).get_json()["result"]
        assert not answer.get("isError"), answer
        return answer["structuredContent"]

    assert structured("score") == {"result": 3} and structured("provided") == {"result": 3}
    with app.app_context():
        discovery.tools().get("score").output_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    served[0] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert structured("score") == {"n": 3} and structured("provided") == {"n": 3}
