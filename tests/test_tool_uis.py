"""Tool UIs (``@discovery.tool(ui=...)``, ``visibility=["app"]``): what is refused at registration and
``init_app``, the MCP Apps extension as the official Python SDK sees it against a live server (the
tool's ``_meta.ui``, the ``ui://`` resource as ``text/html;profile=mcp-app`` with its csp and
permissions, the app-only tool callable), the same HTML for every caller, autoescaping, a failing
template at read time, and app-only tools left out of the lists no host filters."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import UI, RegistrationError, ToolDiscovery, UIError
from flask_tooldiscovery.catalog.ui import MIME_TYPE, bridge_script

from .apps.ui_app import TEMPLATES, create_app, leaky_app
from .conftest import live_server

ALL = ["explorer", "opal", "oxp", "tdp", "mcp", "utcp"]


def rpc(client: Any, method: str, params: dict[str, Any] | None = None, **headers: str) -> Any:
    return client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                       headers=headers)


# -- registration and init_app ---------------------------------------------------------------------

@pytest.mark.parametrize(("options", "words"), [
    ({"ui": 3}, "ui must be a template name"),
    ({"ui": ""}, "template must be a template name"),
    ({"visibility": "app"}, "visibility must be a non-empty list"),
    ({"visibility": ["app", "agent"]}, "visibility must be a non-empty list"),
    ({"visibility": []}, "visibility must be a non-empty list"),
])
def test_bad_options_are_refused_at_registration(options: dict[str, Any], words: str) -> None:
    with pytest.raises(RegistrationError, match=words):
        ToolDiscovery().tool(**options)(lambda: None)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"uri": "https://x/y"}, "uri must start with 'ui://'"),
    ({"csp": {"script_domains": ["https://a.example"]}}, "csp keys are"),
    ({"csp": {"connect_domains": ["api.example.com/path"]}}, "csp origins are"),
    ({"permissions": ["camera", "usb"]}, "permissions are"),
    ({"permissions": "camera"}, "permissions are"),
    ({"preferred_size": (400, 0)}, "preferred_size"),
])
def test_a_ui_that_cannot_work_is_refused(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        UI("orders.html", **kwargs)


def test_a_missing_template_fails_init_app_naming_it() -> None:
    discovery = ToolDiscovery()

    @discovery.tool(ui="no_such_card.html")
    def show() -> str:
        return "x"

    app = Flask("nocard", template_folder=str(TEMPLATES))
    with pytest.raises(UIError, match=r"template 'no_such_card\.html' not found"):
        discovery.init_app(app)


def test_a_template_that_does_not_compile_fails_init_app() -> None:
    discovery = ToolDiscovery()
    discovery.tool(name="broken", ui="broken.html")(lambda: "x")
    with pytest.raises(UIError, match=r"broken\.html' does not compile"):
        discovery.init_app(Flask("broken", template_folder=str(TEMPLATES)))


def test_one_uri_for_two_different_uis_fails_init_app() -> None:
    discovery = ToolDiscovery()
    discovery.tool(name="a", ui=UI("order_card.html", uri="ui://shop/card"))(lambda: "x")
    discovery.tool(name="b", ui=UI("leaky.html", uri="ui://shop/card"))(lambda: "x")
    with pytest.raises(UIError, match="ui://shop/card already names another UI"):
        discovery.init_app(Flask("twice", template_folder=str(TEMPLATES)))


# -- MCP: the official client against a live server ------------------------------------------------

#: What a host that renders MCP Apps declares (at initialize, or in each stateless-era request).
UI_EXTENSION = {"io.modelcontextprotocol/ui": {"mimeTypes": [MIME_TYPE]}}


def ui_client(url: str, mode: str, *, declare: bool = True) -> Any:
    """The official client, declaring the MCP Apps extension or not."""
    from mcp import Client
    from mcp.client.extension import advertise

    extensions = [advertise(name, settings) for name, settings in UI_EXTENSION.items()] if declare else None
    return Client(url, mode=mode, extensions=extensions)  # type: ignore[arg-type]


async def _session(url: str, mode: str) -> dict[str, Any]:
    async with ui_client(url, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = (await client.list_resources()).resources
        read = await client.read_resource(tools["get_order"].meta["ui"]["resourceUri"])
        refreshed = await client.call_tool("refresh_order", {"order_id": "A-17"})
        return {"tools": tools, "listed": listed, "read": read, "refreshed": refreshed,
                "capabilities": client.server_capabilities}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_reads_the_tools_interface(mode: str) -> None:
    with live_server(create_app(TOOLDISCOVERY_DIALECTS=["mcp"])) as base:
        out = asyncio.run(_session(f"{base}/mcp", mode))
    tools = out["tools"]
    assert tools["get_order"].meta["ui"] == {"resourceUri": "ui://shop/order-card"}
    assert tools["get_order"].meta["ui/resourceUri"] == "ui://shop/order-card"  # the deprecated flat key too
    assert tools["refresh_order"].meta["ui"] == {"resourceUri": "ui://shop/order-card", "visibility": ["app"]}
    assert not (tools["ping"].meta or {}).get("ui")
    listed = [r for r in out["listed"] if str(r.uri).startswith("ui://")]
    assert [(str(r.uri), r.mime_type) for r in listed] == [("ui://shop/order-card", MIME_TYPE)]
    (content,) = out["read"].contents
    assert content.mime_type == MIME_TYPE and str(content.uri) == "ui://shop/order-card"
    assert content.meta["ui"] == {"csp": {"connectDomains": ["https://api.example.com"]},
                                  "permissions": {"clipboardWrite": {}}, "prefersBorder": True}
    html = content.text
    assert html.startswith("<!doctype html>") and "window.McpApps=" in html
    assert "<h1>Your &lt;order&gt;</h1>" in html  # the UI's context, autoescaped
    assert "<title>get_order</title>" in html
    assert out["refreshed"].structured_content == {"id": "A-17", "status": "shipped"}  # app-only, callable
    extensions = out["capabilities"].model_dump(by_alias=True).get("extensions") or {}
    assert "io.modelcontextprotocol/ui" in extensions


async def _without_the_extension(url: str, mode: str) -> dict[str, Any]:
    async with ui_client(url, mode, declare=False) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = (await client.list_resources()).resources
        called = await client.call_tool("get_order", {"order_id": "A-17"})
        refusals = []
        for name in ("refresh_order", "no_such_tool"):
            try:
                refusals.append(await client.call_tool(name, {"order_id": "A-17"}))
            except Exception as exc:  # the SDK raises the JSON-RPC error
                refusals.append(str(exc).replace(name, "NAME"))
        return {"tools": tools, "listed": listed, "called": called, "refusals": refusals}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_that_did_not_declare_the_extension_is_sent_no_interface(mode: str) -> None:
    """The extension's metadata goes only where it was declared: a client without it gets the
    tools with no ``_meta.ui`` (nor the deprecated flat key) and no ``ui://`` resource listed; the
    tools still run. A tool only the interface calls is neither listed to it nor run for it: it has
    no app to call it and no host that would keep it from the model, and its call is refused as an
    unknown tool's is."""
    with live_server(create_app(TOOLDISCOVERY_DIALECTS=["mcp"])) as base:
        out = asyncio.run(_without_the_extension(f"{base}/mcp", mode))
    tools = out["tools"]
    assert set(tools) == {"get_order", "ping"}
    for tool in tools.values():
        assert not {"ui", "ui/resourceUri"} & set(tool.meta or {}), (tool.name, tool.meta)
    assert not [r for r in out["listed"] if str(r.uri).startswith("ui://")]
    assert not out["called"].is_error
    app_only, unknown = out["refusals"]
    assert app_only == unknown and "Unknown tool: NAME" in app_only, out["refusals"]


def test_each_era_says_it_its_own_way() -> None:
    """Handshake era: the extension declared at ``initialize`` (the session id carries it), with the
    mime type this server sends; stateless era: declared in each request's envelope."""
    c = create_app(TOOLDISCOVERY_DIALECTS=["mcp"]).test_client()

    def session(capabilities: dict[str, Any]) -> str:
        r = rpc(c, "initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                  "clientInfo": {"name": "t", "version": "1"}})
        return r.headers["Mcp-Session-Id"]

    def ui_of_listed(**headers: str) -> Any:
        tools = rpc(c, "tools/list", **headers).get_json()["result"]["tools"]
        return next(t for t in tools if t["name"] == "get_order").get("_meta")

    version = {"MCP-Protocol-Version": "2025-11-25"}
    assert ui_of_listed(**version, **{"Mcp-Session-Id": session({"extensions": UI_EXTENSION})})["ui"] == {
        "resourceUri": "ui://shop/order-card"}
    for declared in ({}, {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}}):
        assert ui_of_listed(**version, **{"Mcp-Session-Id": session(declared)}) is None, declared
    assert ui_of_listed(**version) is None  # no session id: nothing declared

    def stateless(capabilities: dict[str, Any]) -> Any:
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities}
        r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
                   headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
        assert r.status_code == 200, r.text
        found = next(t for t in r.get_json()["result"]["tools"] if t["name"] == "get_order")
        return found.get("_meta")

    assert stateless({"extensions": UI_EXTENSION})["ui"] == {"resourceUri": "ui://shop/order-card"}
    assert stateless({}) is None
    assert stateless({"extensions": UI_EXTENSION})["ui"] == {"resourceUri": "ui://shop/order-card"}  # not mixed up


def test_a_tool_registered_after_init_app_with_a_missing_template_is_refused() -> None:
    discovery = ToolDiscovery()
    discovery.tool(name="card", ui="order_card.html")(lambda: "x")
    app = Flask("later", template_folder=str(TEMPLATES))
    discovery.init_app(app)
    with pytest.raises(UIError, match=r"template 'no_such_card\.html' not found"):
        discovery.tool(name="late", ui="no_such_card.html")(lambda: "x")
    assert "late" not in [t.name for t in discovery.registry.registered]  # refused, not half-registered
    discovery.tool(name="late_ok", ui=UI("order_card.html", uri="ui://shop/late"))(lambda: "x")
    assert "late_ok" in [t.name for t in discovery.registry.registered]


def test_the_extension_is_declared_in_both_eras_only_with_an_interface(make_app) -> None:
    c = create_app(TOOLDISCOVERY_DIALECTS=["mcp"]).test_client()
    init = rpc(c, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}).get_json()["result"]
    assert init["capabilities"]["extensions"] == {"io.modelcontextprotocol/ui": {}}
    assert "resources" in init["capabilities"]
    plain = ToolDiscovery()
    plain.tool(name="x")(lambda: "x")
    bare = rpc(make_app(plain, TOOLDISCOVERY_DIALECTS=["mcp"]).test_client(), "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    assert "extensions" not in bare.get_json()["result"]["capabilities"]
    assert "resources" not in bare.get_json()["result"]["capabilities"]


def test_the_html_is_the_same_for_every_caller() -> None:
    app = create_app(TOOLDISCOVERY_DIALECTS=["mcp"])
    c = app.test_client()
    reads = [rpc(c, "resources/read", {"uri": "ui://shop/order-card"}, **headers).get_json()["result"]
             for headers in ({}, {"Authorization": "Bearer someone", "Cookie": "session=abc"})]
    assert reads[0] == reads[1]


def test_a_template_reading_the_request_fails_at_read_time_logged_without_the_trace(caplog) -> None:
    app = leaky_app("mcp")  # it compiles: the failure is the caller's data it asks for
    with caplog.at_level(logging.ERROR, logger="flask_tooldiscovery"):
        r = rpc(app.test_client(), "resources/read", {"uri": "ui://leaky.html"}, Authorization="Bearer secret-x")
    body = r.get_json()
    assert body["error"] == {"code": -32603, "message": "Internal error."}
    assert "secret-x" not in r.get_data(as_text=True) and "Traceback" not in r.get_data(as_text=True)
    (logged,) = [rec for rec in caplog.records if rec.exc_info]
    assert logged.getMessage().startswith("mcp: resources/read failed")
    assert isinstance(logged.exc_info[1], UIError) and "leaky.html" in str(logged.exc_info[1])
    assert "outside of request context" in str(logged.exc_info[1].__cause__)  # no caller's request to read


def test_an_unknown_ui_resource_is_not_found() -> None:
    c = create_app(TOOLDISCOVERY_DIALECTS=["mcp"]).test_client()
    r = rpc(c, "resources/read", {"uri": "ui://shop/nothing"})
    assert r.get_json()["error"]["code"] == -32002
    r = rpc(c, "resources/read", {"uri": 7})
    assert r.get_json()["error"]["code"] == -32602


def test_app_resources_are_still_served_beside_the_interfaces() -> None:
    app = Flask("both", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_RESOURCES=True)
    discovery = ToolDiscovery()
    discovery.tool(name="show", ui="order_card.html")(lambda: {"id": "1", "item": "x", "total": 1})

    @discovery.resource("config://app", mime_type="text/plain")
    def config() -> str:
        return "settings"

    discovery.init_app(app)
    c = app.test_client()
    declared = rpc(c, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {"extensions": UI_EXTENSION},
                                     "clientInfo": {"name": "t", "version": "1"}}).headers["Mcp-Session-Id"]
    listed = [r["uri"] for r in rpc(c, "resources/list", **{"Mcp-Session-Id": declared,
                                                            "MCP-Protocol-Version": "2025-11-25"}
                                    ).get_json()["result"]["resources"]]
    assert listed == ["config://app", "ui://order_card.html"]
    assert [r["uri"] for r in rpc(c, "resources/list").get_json()["result"]["resources"]] == ["config://app"]
    assert rpc(c, "resources/read", {"uri": "config://app"}).get_json()["result"]["contents"][0]["text"] == "settings"


# -- the lists no host filters ---------------------------------------------------------------------

def test_app_only_tools_are_left_out_where_no_host_hides_them() -> None:
    """Opal, OXP, TDP, UTCP, the OpenAPI document and MCP to a client that declared no MCP Apps
    list no tool only an interface calls; the explorer (read by a person, whose UI preview calls
    such tools through its call route) lists it."""
    app = create_app(TOOLDISCOVERY_DIALECTS=[*ALL, "openapi"])
    c = app.test_client()
    for path in ("/opal/discovery", "/oxp/tools", "/api/v1/tools", "/utcp"):
        text = c.get(path).get_data(as_text=True)
        assert "get_order" in text and "refresh_order" not in text, path
    assert "refresh_order" in c.get("/explorer/tools").get_data(as_text=True)
    listed = rpc(c, "tools/list").get_json()["result"]["tools"]  # a client that declared no MCP Apps
    assert [t["name"] for t in listed] == ["get_order", "ping"]
    called = c.post("/explorer/tools/refresh_order/call", json={"order_id": "A-17"})
    assert called.get_json()["structuredContent"] == {"id": "A-17", "status": "shipped"}
    document = c.get("/tools/openapi.json").get_data(as_text=True)
    assert "get_order" in document and "refresh_order" not in document


MODERN = "2026-07-28"


def _declared(c: Any, capabilities: dict[str, Any]) -> dict[str, str]:
    """The headers of a handshake-era client that declared ``capabilities`` at ``initialize``."""
    r = rpc(c, "initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                              "clientInfo": {"name": "t", "version": "1"}})
    return {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": r.headers["Mcp-Session-Id"]}


def _stateless(c: Any, method: str, capabilities: dict[str, Any], params: dict[str, Any] | None = None) -> Any:
    """A stateless-era request whose envelope declares ``capabilities``."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = (params or {})["name"]
    return c.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                 "params": {**(params or {}), "_meta": meta}})


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_app_only_tools_reach_only_a_client_that_declared_mcp_apps(era: str) -> None:
    """MCP Apps has the *host* keep a ``visibility: ["app"]`` tool from the model and let only its
    apps call it; a client that did not declare the extension does neither, so such a tool is not
    listed to it, and its call is answered as an unknown tool's (status and error alike). A client
    that declared it is listed the tool and its app calls it. Each era declares its own way
    (``initialize`` and the session id; each request's envelope)."""
    c = create_app(TOOLDISCOVERY_DIALECTS=["mcp"]).test_client()
    call = {"name": "refresh_order", "arguments": {"order_id": "A-17"}}
    unknown = {"name": "no_such_tool", "arguments": {"order_id": "A-17"}}

    def send(method: str, declared: dict[str, Any], params: dict[str, Any] | None = None) -> Any:
        if era == "stateless":
            return _stateless(c, method, declared, params)
        return rpc(c, method, params, **_declared(c, declared))

    def names(declared: dict[str, Any]) -> list[str]:
        return [t["name"] for t in send("tools/list", declared).get_json()["result"]["tools"]]

    others = ({}, {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}})
    for declared in others:
        assert names(declared) == ["get_order", "ping"], declared
        refused, missing = send("tools/call", declared, call), send("tools/call", declared, unknown)
        assert (refused.status_code, refused.get_json()["error"]) == (missing.status_code, {
            **missing.get_json()["error"], "message": "Unknown tool: refresh_order"}), declared
        assert refused.status_code == (400 if era == "stateless" else 200)
    apps = {"extensions": UI_EXTENSION}
    assert names(apps) == ["get_order", "refresh_order", "ping"]
    ran = send("tools/call", apps, call).get_json()["result"]
    assert ran["structuredContent"] == {"id": "A-17", "status": "shipped"}
    assert names({}) == ["get_order", "ping"]  # each its own answer, whatever was answered before
    if era == "handshake":  # a client that sends no session id declared nothing
        assert [t["name"] for t in rpc(c, "tools/list").get_json()["result"]["tools"]] == ["get_order", "ping"]
        assert rpc(c, "tools/call", call).get_json()["error"]["message"] == "Unknown tool: refresh_order"


# -- the bridge ------------------------------------------------------------------------------------

def test_the_bridge_is_the_shipped_ext_apps_bundle_exposing_its_exports() -> None:
    script = bridge_script()
    assert script.startswith('<script type="module">') and script.endswith("</script>")
    assert ",App:" in script.replace(" ", "")
    assert "export{" not in script[-2000:].replace(" ", "")
    shipped = Path(__file__).resolve().parent.parent / "flask_tooldiscovery/static/tooldiscovery/ext-apps"
    assert "2.0.4" in (shipped / "README").read_text()


def test_the_manifest_offers_what_initialize_offers() -> None:
    from flask_tooldiscovery.dialects.manifest import DIALECT as MANIFEST

    discovery = ToolDiscovery(dialects=[MANIFEST])
    discovery.tool(name="show", ui="order_card.html")(lambda: "x")
    app = Flask("manifested", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp", "manifest"])
    discovery.init_app(app)
    c = app.test_client()
    offered = c.get("/.well-known/tool-discovery").get_json()["mcp"]["capabilities"]
    init = rpc(c, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}).get_json()["result"]
    assert offered == init["capabilities"] and "io.modelcontextprotocol/ui" in offered["extensions"]


def test_the_explorer_preview_route_answers_a_failing_template_with_a_plain_500(caplog) -> None:
    app = leaky_app("explorer")
    with caplog.at_level(logging.ERROR, logger="flask_tooldiscovery"):
        r = app.test_client().get("/explorer/tools/leak/ui", headers={"Authorization": "Bearer secret-y"})
    assert r.status_code == 500 and r.get_json() == {
        "error": "The tool's UI failed to render; the server log has the details."}
    assert any(isinstance(rec.exc_info[1], UIError) for rec in caplog.records if rec.exc_info)
    nothing = app.test_client().get("/explorer/tools/nothing/ui")
    assert nothing.status_code == 404 and nothing.get_json() == {"error": "No tool UI here."}
