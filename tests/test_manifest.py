"""The discovery manifest at ``/.well-known/tool-discovery``: one URL listing every mounted
dialect's endpoints and versions, the MCP endpoint with its Server Card, and the OpenAPI document;
every URL it lists answers."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.dialects import BUILTIN
from flask_tooldiscovery.dialects.manifest import DIALECT as MANIFEST

EVERY = list(dict.fromkeys([*BUILTIN, "manifest"]))


def build(**config: Any) -> Flask:
    discovery = ToolDiscovery(dialects=[MANIFEST])

    def undo_add(a: float, b: float) -> float:
        """Undo an addition."""
        return a - b

    @discovery.interaction
    def add_card(a: float) -> float:
        """What the add card's button does."""
        return a

    @discovery.tool(rollback=undo_add)
    def add(a: float, b: float) -> float:
        """Add.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    @discovery.prompt
    def review(code: str) -> str:
        """Review some code."""
        return f"Review:\n{code}"

    app = Flask("manifest")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": EVERY, "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                       "TOOLDISCOVERY_SERVER_NAME": "acme-tools", "TOOLDISCOVERY_SERVER_VERSION": "2.1.0",
                       "TOOLDISCOVERY_SERVER_DESCRIPTION": "Acme's tools.", **config})
    discovery.init_app(app)
    return app


def path_of(url: str) -> str:
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.netloc == "localhost", url
    return parts.path


def test_the_manifest_lists_every_mounted_dialect() -> None:
    client = build().test_client()
    response = client.get("/.well-known/tool-discovery")
    assert response.status_code == 200 and response.mimetype == "application/json"
    manifest = response.get_json()
    assert {k: manifest[k] for k in ("name", "version", "description", "tools")} == {
        "name": "acme-tools", "version": "2.1.0", "description": "Acme's tools.", "tools": 1}
    assert manifest["url"] == "http://localhost/.well-known/tool-discovery"
    assert list(manifest["dialects"]) == [d for d in EVERY if d != "manifest"]
    assert manifest["dialects"]["oxp"]["version"] == "1.0"
    assert manifest["dialects"]["mcp"]["version"] == manifest["mcp"]["protocolVersions"][-1]
    assert manifest["dialects"]["opal"]["url"] == "http://localhost/opal/discovery"
    assert manifest["dialects"]["opal"]["calls"][0] == "http://localhost/opal/tools/{name}"
    assert manifest["openapi"] == "http://localhost/tools/openapi.json"
    mcp = manifest["mcp"]
    assert mcp["url"] == "http://localhost/mcp" and mcp["transport"] == "streamable-http"
    initialize = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert mcp["capabilities"] == initialize.get_json()["result"]["capabilities"]
    assert mcp["capabilities"] == {"tools": {"listChanged": False}, "logging": {},
                                   "prompts": {"listChanged": False}, "completions": {},
                                   "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
    card = mcp["serverCard"]
    assert (card["version"], card["description"], card["remotes"][0]["url"]) == (
        "2.1.0", "Acme's tools.", "http://localhost/mcp")
    assert "authorization" not in mcp


def _a_task(client: FlaskClient) -> str:
    """The id of an explorer task (a live call of ``add``)."""
    streamed = client.post("/explorer/tools/add/call", json={"a": 1, "b": 2}, headers={"Accept": "text/event-stream"})
    text = streamed.get_data(as_text=True)
    task = text.split("event: task\ndata: ", 1)[1].split("\n", 1)[0]
    return str(json.loads(task)["id"])


def _answers(client: FlaskClient, route: dict[str, Any]) -> int:
    url = route["url"]
    if "{task_id}" in url:
        url = url.replace("{task_id}", _a_task(client))
    path = path_of(url.replace("{name}", "undo_add" if "/rollbacks/" in url else "add").replace("{filename}", "x")
                   .replace("{prompt}", "review"))
    if path.endswith("/opal/interactions/execute"):  # Opal's interactions and rollbacks
        return client.post(path, json={"name": "add_card", "parameters": {"a": 1}}).status_code
    if "/opal/tools/rollbacks/" in path:
        return client.post(path, json={"data": {"a": 1, "b": 2}, "operation_id": "op-1"}).status_code
    if "GET" in route["methods"]:
        return client.get(path).status_code
    if path.endswith("/mcp"):
        return client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code
    if "/prompts/" in path:
        return client.post(path, json={"argument": "code", "value": ""} if path.endswith("/complete")
                           else {"code": "x = 1"}).status_code
    body: Any = {"request": {"tool_id": "AcmeTools.add", "input": {"a": 1, "b": 2}}} if "/oxp/" in path else \
        {"tool_name": "add", "arguments": {"a": 1, "b": 2}} if path.endswith("/execute") else \
        {"parameters": {"a": 1, "b": 2}} if "/opal/" in path else {"a": 1, "b": 2}
    return client.post(path, json=body).status_code


def test_every_url_in_the_manifest_answers() -> None:
    client = build().test_client()
    manifest = client.get("/.well-known/tool-discovery").get_json()
    seen = 0
    for name, entry in manifest["dialects"].items():
        assert client.get(path_of(entry["url"])).status_code == 200 or name == "mcp", (name, entry["url"])
        for route in entry["routes"]:
            assert route["kind"] in ("discovery", "call", "health", "page")
            status = _answers(client, route)
            assert status == 200, (name, route, status)
            seen += 1
    assert seen >= 20
    for url in (manifest["openapi"], manifest["mcp"]["serverCardUrl"], manifest["url"]):
        assert client.get(path_of(url)).status_code == 200, url


def test_served_from_the_document_cache_with_an_etag_to_any_origin() -> None:
    client = build().test_client()
    first = client.get("/.well-known/tool-discovery", headers={"Origin": "https://registry.example"})
    assert first.headers["Access-Control-Allow-Origin"] == "*"
    etag = first.headers["ETag"]
    again = client.get("/.well-known/tool-discovery", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert client.post("/.well-known/tool-discovery").status_code == 405


def test_its_path_is_configurable_and_it_lists_what_is_mounted() -> None:
    app = build(TOOLDISCOVERY_MANIFEST_URL_PREFIX="/discovery.json", TOOLDISCOVERY_DIALECTS=["oxp", "manifest"],
                TOOLDISCOVERY_OXP_URL_PREFIX="/v2/oxp")
    client = app.test_client()
    assert client.get("/.well-known/tool-discovery").status_code == 404
    manifest = client.get("/discovery.json").get_json()
    assert manifest["url"] == "http://localhost/discovery.json"
    assert list(manifest["dialects"]) == ["oxp"]
    assert manifest["dialects"]["oxp"]["url"] == "http://localhost/v2/oxp/tools"
    assert manifest["mcp"] is None and manifest["openapi"] is None


def test_mcp_authorization_metadata_is_named_and_answers() -> None:
    pytest.importorskip("jwt")
    app = build(TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["https://auth.example"], TOOLDISCOVERY_MCP_SCOPES=["tools"],
                TOOLDISCOVERY_OPEN_DIALECTS=[d for d in EVERY if d != "mcp"])
    client = app.test_client()
    authorization = client.get("/.well-known/tool-discovery").get_json()["mcp"]["authorization"]
    assert authorization == {"resourceMetadataUrl": "http://localhost/.well-known/oauth-protected-resource/mcp",
                             "authorizationServers": ["https://auth.example"], "scopes": ["tools"]}
    metadata = client.get(path_of(authorization["resourceMetadataUrl"]))
    assert metadata.status_code == 200 and metadata.get_json()["resource"] == "http://localhost/mcp"


def test_flask_tools_export_manifest() -> None:
    result = build().test_cli_runner().invoke(args=["tools", "export", "manifest", "--base-url",
                                                    "https://tools.acme.com"])
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.output)
    assert manifest["url"] == "https://tools.acme.com/.well-known/tool-discovery"
    assert manifest["dialects"]["mcp"]["url"] == "https://tools.acme.com/mcp"


def test_the_server_is_named_by_its_title_else_its_name_and_the_explorer_plainly() -> None:
    """The manifest and MCP's serverInfo call the server by TOOLDISCOVERY_TITLE, else by its name
    (never "Tool Explorer"), and the explorer entry by what it is, with no spec ids."""
    for config, title in (({}, "acme-tools"), ({"TOOLDISCOVERY_TITLE": "Acme shop"}, "Acme shop")):
        client = build(**config).test_client()
        manifest = client.get("/.well-known/tool-discovery").get_json()
        assert manifest["title"] == title
        assert manifest["dialects"]["explorer"]["protocol"] == "Tool explorer: JSON API and page"
        init = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Accept": "application/json, text/event-stream"}).get_json()
        assert init["result"]["serverInfo"]["title"] == title
        page = client.get("/explorer/").get_data(as_text=True)
        assert f"<h1 id=\"td-title\">{config.get('TOOLDISCOVERY_TITLE', 'Tool Explorer')}</h1>" in page
