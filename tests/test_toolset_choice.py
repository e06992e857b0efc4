"""Choosing toolsets per request on an MCP mount, as GitHub's MCP server lets a client: the
``X-MCP-Toolsets`` header (the union of the named toolsets) and the read-only form (the
``X-MCP-Readonly`` header, and every MCP mount again at ``<mount>/readonly``). Both only narrow
what the caller would see anyway (the mount's toolset, its scopes), on ``tools/list`` and on
``tools/call`` alike, with tool search too; an unknown toolset is a 400 naming the toolsets."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import SettingsError, ToolDiscovery
from flask_tooldiscovery.tools.model import Identity

from .conftest import live_server

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
READ = {"readOnlyHint": True}


def tools() -> ToolDiscovery:
    discovery = ToolDiscovery()

    @discovery.tool(tags=["issues"], annotations=READ)
    def issues_list(repo: str) -> list[str]:
        """List the issues of a repository."""
        return [f"{repo}#1"]

    @discovery.tool(tags=["issues"], annotations={"readOnlyHint": False})
    def issues_create(repo: str, title: str) -> str:
        """Open an issue."""
        return f"opened {title}"

    @discovery.tool(tags=["repos"], annotations=READ)
    def repos_get(repo: str) -> dict[str, str]:
        """Get a repository."""
        return {"repo": repo}

    @discovery.tool(tags=["repos"])
    def repos_delete(repo: str) -> str:
        """Delete a repository."""
        return f"deleted {repo}"

    @discovery.tool(tags=["actions"], annotations=READ)
    def actions_runs(repo: str) -> list[str]:
        """List the workflow runs of a repository."""
        return []

    @discovery.tool(tags=["repos"], annotations=READ, scopes=["admin"])
    def repos_audit(repo: str) -> list[str]:
        """Read a repository's audit log (admins only)."""
        return []

    return discovery


def build(discovery: ToolDiscovery | None = None, **config: Any) -> Flask:
    app = Flask("choice")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_ALLOW_EXECUTE": True, "TOOLDISCOVERY_DIALECTS": ["mcp"],
                       "TOOLDISCOVERY_TOOLSETS": {"issues": {"tags": ["issues"]}, "repos": {"tags": ["repos"]},
                                                  "actions": {"tags": ["actions"]}},
                       **config})
    (discovery or tools()).init_app(app)
    return app


def rpc(client: Any, path: str, method: str, params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None) -> Any:
    return client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                       headers={**HEADERS, **(headers or {})})


def names(client: Any, path: str = "/mcp", headers: dict[str, str] | None = None) -> list[str]:
    answer = rpc(client, path, "tools/list", headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return [t["name"] for t in answer.get_json()["result"]["tools"]]


def call(client: Any, path: str, name: str, headers: dict[str, str] | None = None) -> Any:
    arguments = {"repo": "acme/app", **({"title": "t"} if name == "issues_create" else {})}
    return rpc(client, path, "tools/call", {"name": name, "arguments": arguments}, headers).get_json()


ALL = ["issues_list", "issues_create", "repos_get", "repos_delete", "actions_runs"]


def test_the_toolsets_header_narrows_the_list_to_the_union_of_the_named_toolsets() -> None:
    client = build().test_client()
    assert names(client) == ALL
    assert names(client, headers={"X-MCP-Toolsets": "repos"}) == ["repos_get", "repos_delete"]
    assert names(client, headers={"X-MCP-Toolsets": " actions ,issues,"}) == [
        "issues_list", "issues_create", "actions_runs"]
    assert names(client, headers={"X-MCP-Toolsets": " , "}) == ALL  # none named: the mount's own list
    assert names(client, headers={"X-MCP-Toolsets": "all"}) == ALL  # GitHub's words for every tool
    assert names(client, headers={"X-MCP-Toolsets": "default,repos"}) == ALL
    assert names(client, "/mcp/x/repos", {"X-MCP-Toolsets": "all"}) == ["repos_get", "repos_delete"]


def test_a_tool_the_header_hides_is_not_callable_and_is_refused_as_an_unknown_tool() -> None:
    client = build().test_client()
    refused = call(client, "/mcp", "repos_delete", {"X-MCP-Toolsets": "issues"})
    unknown = call(client, "/mcp", "no_such_tool")
    assert refused["error"] == {"code": unknown["error"]["code"], "message": "Unknown tool: repos_delete"}
    assert call(client, "/mcp", "issues_list", {"X-MCP-Toolsets": "issues"})["result"]["structuredContent"] == {
        "result": ["acme/app#1"]}
    assert call(client, "/mcp", "repos_delete")["result"]["structuredContent"] == {"result": "deleted acme/app"}


@pytest.mark.parametrize("method", ["tools/list", "initialize", "tools/call", "ping"])
def test_an_unknown_toolset_is_a_400_naming_the_toolsets_never_a_500(method: str) -> None:
    client = build().test_client()
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}} \
        if method == "initialize" else {"name": "issues_list", "arguments": {"repo": "a"}}
    answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": "x-1", "method": method, "params": params},
                         headers={**HEADERS, "X-MCP-Toolsets": "issues,nope,<script>"})
    assert answer.status_code == 400
    body = answer.get_json()
    assert body["id"] == "x-1" and body["error"]["code"] == -32600
    assert body["error"]["message"] == ("Unknown toolset(s) in X-MCP-Toolsets: '<script>', 'nope'. "
                                        "The toolsets are: actions, issues, repos.")
    assert body["error"]["data"] == {"toolsets": ["actions", "issues", "repos"]}


def test_an_unknown_toolset_is_refused_on_the_notification_stream_too() -> None:
    client = build(TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True).test_client()
    answer = client.get("/mcp", headers={"Accept": "text/event-stream", "X-MCP-Toolsets": "nope"})
    assert answer.status_code == 400 and answer.get_json()["error"]["data"] == {
        "toolsets": ["actions", "issues", "repos"]}


def test_on_a_toolset_mount_the_header_only_narrows_it_further_never_widens_it() -> None:
    client = build().test_client()
    assert names(client, "/mcp/x/issues") == ["issues_list", "issues_create"]
    assert names(client, "/mcp/x/issues", {"X-MCP-Toolsets": "issues,repos"}) == ["issues_list", "issues_create"]
    assert names(client, "/mcp/x/issues", {"X-MCP-Toolsets": "repos"}) == []
    assert call(client, "/mcp/x/issues", "repos_get", {"X-MCP-Toolsets": "repos"})["error"]["code"] == -32602


def test_the_header_never_shows_a_tool_the_callers_scopes_hide() -> None:
    discovery = tools()

    @discovery.identity
    def who(request: Any) -> Identity | None:
        return Identity(subject="admin", scopes=("admin",)) if request.headers.get("X-Admin") else \
            Identity(subject="reader")

    client = build(discovery).test_client()
    assert "repos_audit" not in names(client, headers={"X-MCP-Toolsets": "repos"})
    assert call(client, "/mcp", "repos_audit", {"X-MCP-Toolsets": "repos"})["error"]["code"] == -32602
    admin = {"X-MCP-Toolsets": "repos", "X-Admin": "1"}
    assert names(client, headers=admin) == ["repos_get", "repos_delete", "repos_audit"]
    assert "result" in call(client, "/mcp", "repos_audit", admin)


READ_ONLY = ["issues_list", "repos_get", "actions_runs"]


@pytest.mark.parametrize(("path", "headers"), [
    ("/mcp/readonly", {}), ("/mcp", {"X-MCP-Readonly": "true"}), ("/mcp", {"X-MCP-Readonly": " Yes "}),
    ("/mcp/readonly", {"X-MCP-Readonly": "false"}),  # a header never widens a read-only mount
])
def test_the_read_only_form_lists_and_calls_only_the_tools_that_read(path: str, headers: dict[str, str]) -> None:
    client = build().test_client()
    assert names(client, path, headers) == READ_ONLY
    refused = call(client, path, "repos_delete", headers)
    assert refused["error"] == {"code": -32602, "message": "Unknown tool: repos_delete"}
    assert call(client, path, "repos_get", headers)["result"]["structuredContent"] == {"repo": "acme/app"}


@pytest.mark.parametrize("value", ["", "false", "F", " no ", "n", "0", "OFF"])
def test_a_readonly_header_that_says_no_narrows_nothing(value: str) -> None:
    assert names(build().test_client(), headers={"X-MCP-Readonly": value}) == ALL


def test_read_only_and_toolsets_combine_on_every_mount() -> None:
    client = build().test_client()
    assert names(client, "/mcp/x/issues/readonly") == ["issues_list"]
    assert names(client, "/mcp", {"X-MCP-Toolsets": "issues", "X-MCP-Readonly": "1"}) == ["issues_list"]
    assert names(client, "/mcp/readonly", {"X-MCP-Toolsets": "repos,actions"}) == ["repos_get", "actions_runs"]
    assert call(client, "/mcp/x/issues/readonly", "issues_create")["error"]["code"] == -32602


def test_the_read_only_mounts_can_be_turned_off_and_refuse_a_route_the_app_has() -> None:
    client = build(TOOLDISCOVERY_READONLY_MOUNTS=False).test_client()
    assert rpc(client, "/mcp/readonly", "tools/list").status_code == 404
    assert names(client, headers={"X-MCP-Readonly": "true"}) == READ_ONLY  # the header still narrows
    app = Flask("clash")
    app.add_url_rule("/mcp/readonly", "mine", lambda: "mine")
    with pytest.raises(SettingsError, match=r"read-only mount .*/mcp/readonly \(mine\).*READONLY_MOUNTS"):
        tools().init_app(app)


def test_tool_search_finds_and_calls_only_what_the_header_leaves() -> None:
    app = build(TOOLDISCOVERY_TOOL_SEARCH=True)
    client, only = app.test_client(), {"X-MCP-Toolsets": "issues"}
    assert names(client, headers=only) == ["search_tools", "call_tool"]

    def search(query: str, headers: dict[str, str] | None = None) -> list[str]:
        found = rpc(client, "/mcp", "tools/call", {"name": "search_tools", "arguments": {
            "query": query, "limit": 10}}, headers).get_json()["result"]["structuredContent"]["tools"]
        return [t["name"] for t in found]

    assert "repos_delete" in search("delete a repository")
    assert set(search("delete a repository", only)) <= {"issues_list", "issues_create"}
    assert set(search("list workflow runs", {"X-MCP-Readonly": "true"})) <= set(READ_ONLY)
    refused = rpc(client, "/mcp", "tools/call", {"name": "call_tool", "arguments": {
        "name": "repos_delete", "arguments": {"repo": "a"}}}, only).get_json()
    assert refused["error"] == {"code": -32602, "message": "Unknown tool: repos_delete"}
    indexes = app.extensions["tooldiscovery.core"].search_indexes if "tooldiscovery.core" in app.extensions \
        else ToolDiscovery.pipelines(app)["mcp"].core.search_indexes
    built = indexes.builds
    for _ in range(3):  # the same choice again: the same narrowed set, its index built once
        search("open an issue", only)
    assert indexes.builds == built


def test_a_learned_full_list_is_never_given_to_a_request_that_narrows() -> None:
    app = build()
    client = app.test_client()
    for _ in range(3):  # learned by the fast path
        assert names(client) == ALL
    assert names(client, headers={"X-MCP-Toolsets": "actions"}) == ["actions_runs"]
    assert names(client, headers={"X-MCP-Readonly": "true"}) == READ_ONLY
    for _ in range(3):  # the read-only mount's own answer is learned at its own URL
        assert names(client, "/mcp/readonly") == READ_ONLY
    assert names(client) == ALL


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_mcp_client_chooses_toolsets_by_header_and_the_read_only_url(mode: str) -> None:
    """The official MCP client over real HTTP (handshake era: legacy; stateless era: auto) sending
    GitHub's headers on every request, and connected to ``/mcp/readonly``."""
    import httpx2 as httpx  # the SDK's own HTTP client
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def session(url: str, headers: dict[str, str]) -> tuple[list[str], Any, Any]:
        async with httpx.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                ran = await client.call_tool("repos_get", {"repo": "acme/app"})
                try:
                    refused: Any = await client.call_tool("issues_create", {"repo": "acme/app", "title": "t"})
                except Exception as exc:  # the SDK raises the JSON-RPC error
                    refused = exc
                return listed, ran, refused

    async def wrong(url: str) -> Exception | None:
        async with httpx.AsyncClient(headers={"X-MCP-Toolsets": "nope"}) as http:
            try:
                async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                    await client.list_tools()
            except Exception as exc:
                return exc
        return None

    with live_server(build()) as base:
        chosen = asyncio.run(session(f"{base}/mcp", {"X-MCP-Toolsets": "repos,actions"}))
        read_only = asyncio.run(session(f"{base}/mcp/readonly", {}))
        refused = asyncio.run(wrong(f"{base}/mcp"))
    assert chosen[0] == ["repos_get", "repos_delete", "actions_runs"]
    assert read_only[0] == READ_ONLY
    for _listed, ran, no in (chosen, read_only):
        assert ran.structured_content == {"repo": "acme/app"} and not ran.is_error
        assert "Unknown tool: issues_create" in str(no), repr(no)
    assert "Unknown toolset(s) in X-MCP-Toolsets: 'nope'. The toolsets are: actions, issues, repos." in repr(refused)


def test_a_browser_may_send_the_headers() -> None:
    client = build(TOOLDISCOVERY_ALLOWED_ORIGINS=["https://app.example.com"]).test_client()
    preflight = client.options("/mcp", headers={"Origin": "https://app.example.com",
                                                "Access-Control-Request-Method": "POST",
                                                "Access-Control-Request-Headers": "x-mcp-toolsets, x-mcp-readonly"})
    allowed = {h.strip().lower() for h in preflight.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"x-mcp-toolsets", "x-mcp-readonly"} <= allowed


def test_githubs_1223_tools_read_only_and_chosen_by_header() -> None:
    from .test_toolsets import github_catalogue, mcp_tools

    catalogue = github_catalogue()
    discovery = ToolDiscovery(tools=catalogue, call_handler=lambda name, arguments: {"called": name})
    app = build(discovery, TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"]}, "pulls": {"tags": ["pulls"]}})
    client = app.test_client()
    reading = {t["name"] for t in catalogue if (t.get("annotations") or {}).get("readOnlyHint") is True}
    assert {t["name"] for t in mcp_tools(client, "/mcp/readonly")} == reading and len(reading) == 639

    def chosen(headers: dict[str, str]) -> set[str]:
        out, cursor = set(), None
        while True:
            result = rpc(client, "/mcp", "tools/list", {"cursor": cursor} if cursor else None,
                         headers).get_json()["result"]
            out |= {t["name"] for t in result["tools"]}
            if not (cursor := result.get("nextCursor")):
                return out

    both = {t["name"] for t in catalogue if t["category"] in ("issues", "pulls")}
    assert chosen({"X-MCP-Toolsets": "pulls,issues"}) == both and len(both) == 87
    assert chosen({"X-MCP-Toolsets": "issues", "X-MCP-Readonly": "true"}) == {
        t["name"] for t in catalogue if t["category"] == "issues"} & reading


def test_lists_narrowed_by_header_are_learned_per_narrowing_and_never_cross_over() -> None:
    """Over real HTTP: every narrowing (each header value, the read-only URL, both) is learned by
    the fast path on its own, answered again without Flask, never to a client that narrows
    otherwise; a tool added afterwards shows in each list it belongs to at once."""
    from .test_mcp_fast_list import Counted

    discovery = tools()
    app = build(discovery)
    counted = Counted(app)
    kinds = [("/mcp", {}, ALL), ("/mcp", {"X-MCP-Toolsets": "issues"}, ["issues_list", "issues_create"]),
             ("/mcp", {"X-MCP-Toolsets": "repos,actions"}, ["repos_get", "repos_delete", "actions_runs"]),
             ("/mcp", {"X-MCP-Readonly": "true"}, READ_ONLY), ("/mcp/readonly", {}, READ_ONLY),
             ("/mcp/readonly", {"X-MCP-Toolsets": "repos"}, ["repos_get"]),
             ("/mcp/x/issues", {"X-MCP-Readonly": "1"}, ["issues_list"])]
    with live_server(app) as base:
        def listed(path: str, headers: dict[str, str], id_: int) -> tuple[int, list[str]]:
            body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/list"}).encode()
            req = urllib.request.Request(base + path, data=body, method="POST", headers={**HEADERS, **headers})
            with urllib.request.urlopen(req, timeout=10) as resp:
                answer = json.loads(resp.read())
            return answer["id"], [t["name"] for t in answer["result"]["tools"]]

        for id_ in range(2):  # each narrowing answered by the full path, then learned
            for path, headers, expected in kinds:
                assert listed(path, headers, id_) == (id_, expected)
        counted.count = 0
        for id_ in range(2, 5):  # again, interleaved: each client its own list, none through Flask
            for path, headers, expected in kinds:
                assert listed(path, headers, id_) == (id_, expected), (path, headers)
        assert counted.count == 0

        @discovery.tool(tags=["issues"], annotations=READ)
        def issues_search(query: str) -> list[str]:
            """Search the issues."""
            return []

        for id_ in range(5, 8):  # the new tool in every list it belongs to, at once and learned again
            counted.count = 0
            for path, headers, expected in kinds:
                more = [] if "repos" in headers.get("X-MCP-Toolsets", "") else ["issues_search"]
                assert listed(path, headers, id_) == (id_, expected + more), (path, headers)
        assert counted.count == 0
