"""Toolsets: a named part of the tools (those with one of its tags) served again under each dialect
it names at ``<prefix>/x/<name>``, through a pipeline of its own. Each dialect's own client
(its driver) lists only the toolset's tools there and calls them; a tool of another toolset is that
dialect's unknown tool. The full mounts, the manifest's other entries, identity and approvals stay
as they are; bad configuration fails at ``init_app``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import SettingsError, ToolDiscovery
from flask_tooldiscovery.tools.model import Identity

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = Path(os.environ.get("TOOLDISCOVERY_GITHUB_TOOLS")
                 or ROOT.parent / "shared" / "data" / "github-rest-tools.json")
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
#: The dialects a toolset may be mounted under that have a client driver.
DRIVEN = ["mcp", "explorer", "opal", "oxp", "tdp", "utcp"]


def tools() -> ToolDiscovery:
    discovery = ToolDiscovery()

    @discovery.tool(tags=["issues"])
    def issues_list(repo: str) -> list[str]:
        """List the issues of a repository."""
        return [f"{repo}#1"]

    @discovery.tool(tags=["issues", "pulls"])
    def issues_comment(number: int, body: str) -> str:
        """Comment on an issue or a pull request."""
        return f"commented on #{number}"

    @discovery.tool(tags=["repos"])
    def repos_get(repo: str) -> dict[str, str]:
        """Get a repository."""
        return {"repo": repo}

    @discovery.tool(tags=["repos"], requires_approval=True)
    def repos_delete(repo: str) -> str:
        """Delete a repository."""
        return f"deleted {repo}"

    return discovery


def build(discovery: ToolDiscovery | None = None, **config: Any) -> Flask:
    app = Flask("toolsets")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                       "TOOLDISCOVERY_TOOLSETS": {"issues": {"tags": ["issues"], "dialects": DRIVEN},
                                                  "repos": {"tags": ["repos"], "description": "Repositories."}},
                       **config})
    (discovery or tools()).init_app(app)
    return app


def mcp(client: Any, path: str, method: str, params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None) -> Any:
    response = client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                           headers={**HEADERS, **(headers or {})})
    return response.get_json()


def mcp_tools(client: Any, path: str) -> list[dict[str, Any]]:
    """Every tool of an MCP ``tools/list``, page after page."""
    out, cursor = [], None
    while True:
        result = mcp(client, path, "tools/list", {"cursor": cursor} if cursor else None)["result"]
        out += result["tools"]
        cursor = result.get("nextCursor")
        if not cursor:
            return out


def listed(app: Flask, dialect: str, prefix: str) -> list[str]:
    driver = ToolDiscovery.pipelines(app)[dialect].dialect.driver
    assert driver is not None
    wire = driver.list_tools(prefix)
    response = app.test_client().open(wire.path, method=wire.method, json=wire.json, headers=HEADERS)
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(driver.tool_names(response.get_json()))


def called(app: Flask, dialect: str, prefix: str, name: str, arguments: Any) -> Any:
    pipe = ToolDiscovery.pipelines(app)[dialect]
    driver = pipe.dialect.driver
    assert driver is not None
    wire = driver.call_tool(prefix, name, arguments, pipe.settings)
    response = app.test_client().open(wire.path, method=wire.method, json=wire.json, headers=HEADERS)
    return driver.read(response.status_code, response.get_json(silent=True))


@pytest.mark.parametrize("dialect", DRIVEN)
def test_each_dialect_lists_and_calls_only_the_toolsets_tools_at_its_url(dialect: str) -> None:
    app = build()
    full = ToolDiscovery.pipelines(app)[dialect].prefix
    at = ToolDiscovery.toolset_pipelines(app)["issues"][dialect].prefix
    assert at == f"{full}/x/issues"
    assert listed(app, dialect, at) == ["issues_comment", "issues_list"]
    assert listed(app, dialect, full) == ["issues_comment", "issues_list", "repos_delete", "repos_get"]
    ran = called(app, dialect, at, "issues_list", {"repo": "acme/app"})
    assert ran.kind == "ok" and ran.value == ["acme/app#1"]
    refused = called(app, dialect, at, "repos_get", {"repo": "acme/app"})
    assert refused.kind == "unknown", refused
    assert called(app, dialect, full, "repos_get", {"repo": "acme/app"}).kind == "ok"


def test_a_toolset_names_mcp_by_default_and_nothing_else() -> None:
    app = build()
    assert list(ToolDiscovery.toolset_pipelines(app)["repos"]) == ["mcp"]
    client = app.test_client()
    assert client.get("/explorer/x/repos/tools").status_code == 404
    names = [t["name"] for t in mcp(client, "/mcp/x/repos", "tools/list")["result"]["tools"]]
    assert names == ["repos_get", "repos_delete"]


def test_the_explorer_page_of_a_toolset_is_served_and_reads_its_own_api() -> None:
    client = build().test_client()
    page = client.get("/explorer/x/issues/")
    assert page.status_code == 200 and b"explorer.js" in page.data
    assert client.get("/explorer/x/issues/tools/repos_get").status_code == 404
    assert client.get("/explorer/x/issues/tools/issues_list").get_json()["name"] == "issues_list"


def test_a_call_outside_the_toolset_is_mcps_unknown_tool_never_a_500() -> None:
    client = build().test_client()
    answer = mcp(client, "/mcp/x/issues", "tools/call", {"name": "repos_delete", "arguments": {"repo": "a"}})
    assert answer["error"]["code"] == -32602 and "repos_delete" in answer["error"]["message"]
    full = mcp(client, "/mcp", "tools/call", {"name": "nope", "arguments": {}})
    assert answer["error"]["code"] == full["error"]["code"]


def test_approvals_apply_unchanged_through_a_toolset() -> None:
    client = build().test_client()
    answer = mcp(client, "/mcp/x/repos", "tools/call", {"name": "repos_delete", "arguments": {"repo": "a"}})
    full = mcp(client, "/mcp", "tools/call", {"name": "repos_delete", "arguments": {"repo": "a"}})
    assert "deleted" not in json.dumps(answer) and answer.keys() == full.keys()
    assert answer.get("error", {}).get("code") == full.get("error", {}).get("code")


def test_identity_applies_unchanged_through_a_toolset() -> None:
    discovery = tools()

    @discovery.identity
    def who(request: Any) -> Identity | None:
        return Identity(subject="alice") if request.headers.get("X-User") == "alice" else None

    client = build(discovery, TOOLDISCOVERY_DIALECTS=["mcp"],
                   TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"]}}).test_client()
    refused = client.post("/mcp/x/issues", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                 "params": {"name": "issues_list", "arguments": {"repo": "a"}}},
                          headers=HEADERS)
    assert refused.status_code == 401
    ran = mcp(client, "/mcp/x/issues", "tools/call", {"name": "issues_list", "arguments": {"repo": "a"}},
              headers={"X-User": "alice"})
    assert ran["result"]["structuredContent"] == {"result": ["a#1"]}


def test_each_mount_has_its_own_document_and_etag() -> None:
    client = build().test_client()
    full, part = client.get("/explorer/tools"), client.get("/explorer/x/issues/tools")
    assert full.headers["ETag"] != part.headers["ETag"]
    assert client.get("/explorer/x/issues/tools", headers={"If-None-Match": part.headers["ETag"]}).status_code == 304
    assert client.get("/explorer/tools", headers={"If-None-Match": part.headers["ETag"]}).status_code == 200
    assert [t["name"] for t in client.get("/explorer/tools").get_json()] == [t["name"] for t in full.get_json()]


def test_search_finds_only_the_toolsets_tools() -> None:
    client = build().test_client()
    found = client.get("/explorer/x/issues/tools?q=delete a repository&limit=5").get_json()
    assert "repos_delete" not in [t["name"] for t in found]
    assert client.get("/explorer/tools?q=delete a repository&limit=1").get_json()[0]["name"] == "repos_delete"


def test_mcp_tool_search_through_a_toolset_searches_and_calls_only_its_tools() -> None:
    client = build(TOOLDISCOVERY_TOOL_SEARCH=True).test_client()
    names = [t["name"] for t in mcp(client, "/mcp/x/issues", "tools/list")["result"]["tools"]]
    assert names == ["search_tools", "call_tool"]
    found = mcp(client, "/mcp/x/issues", "tools/call", {"name": "search_tools",
                                                        "arguments": {"query": "get a repository", "limit": 10}})
    assert {t["name"] for t in found["result"]["structuredContent"]["tools"]} <= {"issues_list", "issues_comment"}
    outside = mcp(client, "/mcp/x/issues", "tools/call", {"name": "call_tool", "arguments": {
        "name": "repos_get", "arguments": {"repo": "a"}}})
    unknown = mcp(client, "/mcp", "tools/call", {"name": "call_tool", "arguments": {"name": "nope", "arguments": {}}})
    assert outside["error"]["code"] == unknown["error"]["code"] and "repos_get" in outside["error"]["message"]


def test_the_manifest_names_each_toolsets_urls() -> None:
    app = build()
    manifest = app.test_client().get("/.well-known/tool-discovery").get_json()
    issues = manifest["toolsets"]["issues"]
    assert issues["tags"] == ["issues"] and issues["tools"] == 2
    assert sorted(issues["dialects"]) == sorted(DRIVEN)
    assert issues["dialects"]["mcp"]["url"] == "http://localhost/mcp/x/issues"
    assert issues["dialects"]["explorer"]["url"] == "http://localhost/explorer/x/issues/tools"
    assert issues["search"] == {"explorer": "http://localhost/explorer/x/issues/tools{?q,limit}", "mcp": None}
    found = app.test_client().get("/explorer/x/issues/tools?q=delete+a+repository&limit=5").get_json()
    assert "repos_delete" not in [t["name"] for t in found]  # the template's search: the toolset's tools only
    repos = manifest["toolsets"]["repos"]
    assert repos["description"] == "Repositories." and list(repos["dialects"]) == ["mcp"]
    assert repos["search"] == {"explorer": None, "mcp": None}  # no explorer mount, no MCP tool search
    searching = build(TOOLDISCOVERY_TOOL_SEARCH=True).test_client().get("/.well-known/tool-discovery").get_json()
    assert searching["toolsets"]["repos"]["search"]["mcp"] == {
        "url": "http://localhost/mcp/x/repos", "tools": ["search_tools", "call_tool"], "whenMoreThan": 0}
    assert manifest["dialects"]["mcp"]["url"] == "http://localhost/mcp"
    assert "toolsets" not in build(TOOLDISCOVERY_TOOLSETS={}).test_client().get(
        "/.well-known/tool-discovery").get_json()


def test_utcp_and_openapi_documents_of_a_toolset_describe_its_own_routes() -> None:
    app = build(TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"], "dialects": ["utcp", "openapi"]}})
    client = app.test_client()
    manual = client.get("/utcp/x/issues").get_json()
    assert [t["tool_call_template"]["url"] for t in manual["tools"]] == [
        "http://localhost/utcp/x/issues/tools/issues_list", "http://localhost/utcp/x/issues/tools/issues_comment"]
    document = client.get("/tools/x/issues/openapi.json").get_json()
    assert sorted(document["paths"]) == ["/utcp/x/issues/tools/issues_comment", "/utcp/x/issues/tools/issues_list"]
    assert len(client.get("/tools/openapi.json").get_json()["paths"]) == 4


def test_mount_toolset_declares_one_in_code() -> None:
    discovery = tools()
    discovery.mount_toolset("pulls", tags=["pulls"], dialects=["mcp", "explorer"], title="Pull requests")
    app = build(discovery, TOOLDISCOVERY_TOOLSETS={})
    client = app.test_client()
    assert [t["name"] for t in client.get("/explorer/x/pulls/tools").get_json()] == ["issues_comment"]
    assert app.test_client().get("/.well-known/tool-discovery").get_json()["toolsets"]["pulls"]["title"] == \
        "Pull requests"


def test_a_toolset_answer_is_learned_by_the_fast_path_and_follows_the_registry() -> None:
    discovery = tools()
    app = build(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"]}})
    fast = app.extensions["tooldiscovery.fast"]
    inner, reached = fast.wsgi_app, []

    def counted(environ: Any, start_response: Any) -> Any:
        reached.append(environ["PATH_INFO"])
        return inner(environ, start_response)

    fast.wsgi_app = counted
    client = app.test_client()
    for _ in range(3):
        names = [t["name"] for t in mcp(client, "/mcp/x/issues", "tools/list")["result"]["tools"]]
        assert names == ["issues_list", "issues_comment"]
    assert len(reached) < 3  # the last answer came from the learned bytes
    discovery.add_tool(lambda: "ok", name="issues_close", tags=["issues"], description="Close an issue.")
    names = [t["name"] for t in mcp(client, "/mcp/x/issues", "tools/list")["result"]["tools"]]
    assert names == ["issues_list", "issues_comment", "issues_close"]


@pytest.mark.parametrize(("toolsets", "message"), [
    ({"issues": {"tags": []}}, "needs 'tags'"),
    ({"issues": {}}, "needs 'tags'"),
    ({"issues": {"tags": ["issues"], "dialects": ["nope"]}}, "unknown dialect 'nope'"),
    ({"issues": {"tags": ["issues"], "dialects": ["tdp"]}}, "dialect 'tdp' is not mounted"),
    ({"issues": {"tags": ["issues"], "dialects": ["manifest"]}}, "not mounted per toolset"),
    ({"is sues": {"tags": ["issues"]}}, "letters, digits"),
    ({"../admin": {"tags": ["issues"]}}, "letters, digits"),
    ({"": {"tags": ["issues"]}}, "letters, digits"),
    ({"issues": {"tags": ["issues"], "verbs": ["read"]}}, "unknown option"),
    ({"issues": ["issues"]}, "must be a dict"),
    (["issues"], "must be a dict of toolsets"),
    ({"issues": {"tags": ["issues"], "dialects": ["openapi"]}}, "names openapi but not 'utcp'"),
])
def test_bad_configuration_fails_at_init_app_with_a_clear_message(toolsets: Any, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        build(TOOLDISCOVERY_DIALECTS=["mcp", "explorer", "utcp", "openapi", "manifest"],
              TOOLDISCOVERY_TOOLSETS=toolsets)


def test_a_toolset_whose_url_the_app_already_routes_fails_at_init_app() -> None:
    app = Flask("clash")
    app.add_url_rule("/mcp/x/issues", "mine", lambda: "mine")
    app.config.update(TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"]}})
    with pytest.raises(SettingsError, match=r"toolset 'issues' .* /mcp/x/issues \(mine\)"):
        tools().init_app(app)


def test_the_same_toolset_in_settings_and_in_code_fails_at_init_app() -> None:
    discovery = tools()
    discovery.mount_toolset("issues", tags=["issues"])
    with pytest.raises(SettingsError, match="declared both"):
        build(discovery)
    with pytest.raises(SettingsError, match="needs 'tags'"):
        discovery.mount_toolset("pulls", tags=[])


def github_catalogue() -> list[dict[str, Any]]:
    if not CATALOGUE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{CATALOGUE} is missing (shared/data beside the checkout)")
        pytest.skip(f"{CATALOGUE} is not here (set TOOLDISCOVERY_GITHUB_TOOLS)")
    tools = json.loads(CATALOGUE.read_text())["tools"]
    for tool in tools:  # GitHub's own category of the operation: its operationId's first part
        category = tool["x-http"]["operationId"].split("/")[0]
        tool["category"], tool["tags"] = category, [category]
    return tools


def test_githubs_1223_tools_a_toolset_lists_only_its_category() -> None:
    catalogue = github_catalogue()
    discovery = ToolDiscovery(tools=catalogue, call_handler=lambda name, arguments: {"called": name})
    app = build(discovery, TOOLDISCOVERY_DIALECTS=["mcp", "explorer"], TOOLDISCOVERY_TOOLSETS={
        "issues": {"tags": ["issues"], "dialects": ["mcp", "explorer"]}, "actions": {"tags": ["actions"]},
        "code-security": {"tags": ["code-security", "code-scanning", "secret-scanning"]}})
    client = app.test_client()
    expected = {t["name"] for t in catalogue if t["category"] == "issues"}
    names = [t["name"] for t in mcp_tools(client, "/mcp/x/issues")]
    assert len(catalogue) == 1223 and set(names) == expected and len(names) == 58
    assert {t["name"] for t in client.get("/explorer/x/issues/tools").get_json()} == expected
    actions = mcp_tools(client, "/mcp/x/actions")
    assert len(actions) == 187 and all(t["name"].startswith("actions") for t in actions)
    assert len(mcp_tools(client, "/mcp")) == 1223
    assert len(mcp_tools(client, "/mcp/x/code-security")) == 20 + 21 + 17
    ran = mcp(client, "/mcp/x/issues", "tools/call", {"name": sorted(expected)[0], "arguments": {}})
    outside = mcp(client, "/mcp/x/issues", "tools/call", {"name": actions[0]["name"], "arguments": {}})
    assert "error" not in ran and outside["error"]["code"] == -32602


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_mcp_client_at_a_toolset_url_sees_and_calls_only_its_tools(mode: str) -> None:
    """The official MCP client over HTTP (handshake era: legacy; stateless era: auto), connected to
    ``/mcp/x/issues``: lists the toolset's tools, calls one, and is refused another toolset's."""
    import asyncio

    from mcp import Client

    from .conftest import live_server

    async def run(url: str) -> tuple[list[str], Any, Any]:
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(url), mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            ran = await client.call_tool("issues_list", {"repo": "acme/app"})
            try:
                refused: Any = await client.call_tool("repos_get", {"repo": "acme/app"})
            except Exception as exc:  # the SDK raises the JSON-RPC error
                refused = exc
            return names, ran, refused

    with live_server(build()) as base:
        names, ran, refused = asyncio.run(run(f"{base}/mcp/x/issues"))
    assert names == ["issues_list", "issues_comment"]
    assert ran.structured_content == {"result": ["acme/app#1"]} and not ran.is_error
    assert type(refused).__name__ == "MCPError" and "Unknown tool: repos_get" in str(refused), repr(refused)


def test_a_listen_stream_at_a_toolset_url_hears_that_the_tools_changed() -> None:
    import threading
    import time

    from flask_tooldiscovery.state import changes

    discovery = tools()
    app = build(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"]}},
                TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True, TOOLDISCOVERY_MCP_SUBSCRIPTION_SECONDS=1.5,
                TOOLDISCOVERY_STREAM_KEEPALIVE=0.2)
    before = changes.LOCAL.listening

    def register_later() -> None:
        deadline = time.monotonic() + 10
        while changes.LOCAL.listening <= before and time.monotonic() < deadline:
            time.sleep(0.01)
        discovery.add_tool(lambda: "ok", name="issues_close", tags=["issues"], description="Close an issue.")

    thread = threading.Thread(target=register_later)
    thread.start()
    modern = "2026-07-28"
    meta = {"io.modelcontextprotocol/protocolVersion": modern, "io.modelcontextprotocol/clientCapabilities": {}}
    response = app.test_client().post("/mcp/x/issues", json={
        "jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": meta}},
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": modern,
                 "Mcp-Method": "subscriptions/listen"})
    thread.join()
    got = [json.loads(line[6:]) for line in response.get_data(as_text=True).splitlines() if line.startswith("data: ")]
    assert [frame.get("method") for frame in got[:2]] == ["notifications/subscriptions/acknowledged",
                                                          "notifications/tools/list_changed"]
    names = [t["name"] for t in mcp(app.test_client(), "/mcp/x/issues", "tools/list")["result"]["tools"]]
    assert names == ["issues_list", "issues_comment", "issues_close"]


def test_a_call_through_a_toolset_runs_as_a_task_read_to_its_end_there() -> None:
    import time

    discovery = ToolDiscovery()

    @discovery.tool(tags=["jobs"], task_support="optional")
    def double(n: int) -> int:
        """Double a number, slowly."""
        time.sleep(0.1)
        return n * 2

    app = build(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOLSETS={"jobs": {"tags": ["jobs"]}})
    client, modern = app.test_client(), "2026-07-28"

    def rpc(method: str, params: dict[str, Any]) -> Any:
        caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": modern,
                                      "io.modelcontextprotocol/clientCapabilities": caps}}
        name = params.get("name", params.get("taskId"))
        return client.post("/mcp/x/jobs", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                           headers={"MCP-Protocol-Version": modern, "Mcp-Method": method, "Mcp-Name": name}).get_json()

    created = rpc("tools/call", {"name": "double", "arguments": {"n": 3}})["result"]
    assert created["resultType"] == "task"
    deadline = time.monotonic() + 20
    while (read := rpc("tasks/get", {"taskId": created["taskId"]})["result"])["status"] == "working":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert read["status"] == "completed" and read["result"]["structuredContent"] == {"result": 6}
