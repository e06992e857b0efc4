"""Tool search in MCP (``TOOLDISCOVERY_TOOL_SEARCH``): ``tools/list`` shows ``search_tools`` and
``call_tool`` (and the tools marked ``always_listed``) instead of every tool; ``search_tools`` finds
among what the caller may see, best first, each tool as ``tools/list`` would show it; ``call_tool``
runs the tool it names exactly as a direct call would. Shown with raw JSON-RPC in both eras and
with the official MCP client over HTTP in both eras."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import SettingsError, ToolDiscovery, ToolError
from flask_tooldiscovery.tools.model import Identity

from .conftest import live_server
from .test_mcp import modern, rpc


def build(**config: Any) -> Flask:
    d = ToolDiscovery()

    @d.tool(title="Create a pull request")
    def pulls_create(title: str) -> str:
        """Open a pull request from a branch."""
        return f"opened {title}"

    @d.tool(title="List pull requests", annotations={"readOnlyHint": True})
    def pulls_list() -> list[str]:
        """List the open pull requests."""
        return ["#1"]

    @d.tool(title="Cancel a workflow run")
    def runs_cancel(run_id: int) -> str:
        """Stop a running workflow run."""
        if run_id < 0:
            raise ToolError("No such run.")
        return f"cancelled {run_id}"

    @d.tool(title="Who am I", always_listed=True)
    def whoami() -> str:
        """The caller."""
        return "me"

    d.add_tool(lambda: "secret", name="secrets_delete", title="Delete a secret",
               description="Delete a repository secret.", scopes=["admin"])

    @d.identity
    def from_headers(request) -> Identity | None:
        if "X-User" not in request.headers:
            return None
        return Identity(subject=request.headers["X-User"], scopes=tuple(request.headers.get("X-Scopes", "").split()))

    app = Flask("search")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp"], "TOOLDISCOVERY_TOOL_SEARCH": True, **config})
    d.init_app(app)
    return app


ALICE = {"X-User": "alice"}


def call(client: Any, name: str, arguments: Any, era: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    headers = headers or ALICE
    params = {"name": name, "arguments": arguments}
    response = modern(client, "tools/call", params, headers) if era == "stateless" else \
        rpc(client, "tools/call", params, headers=headers)
    body: dict[str, Any] = response.get_json()
    assert response.status_code == (200 if "result" in body else 400 if era == "stateless" else 200), body
    return body


def listed(client: Any, era: str, headers: dict[str, str] | None = None) -> list[str]:
    headers = headers or ALICE
    response = modern(client, "tools/list", None, headers) if era == "stateless" else \
        rpc(client, "tools/list", headers=headers)
    return [tool["name"] for tool in response.get_json()["result"]["tools"]]


ERAS = ["handshake", "stateless"]


@pytest.mark.parametrize("era", ERAS)
def test_tools_list_shows_the_search_tools_and_the_always_listed(era: str) -> None:
    assert listed(build().test_client(), era) == ["search_tools", "call_tool", "whoami"]


@pytest.mark.parametrize("era", ERAS)
def test_search_tools_answers_the_best_first_as_tools_list_would_show_them(era: str) -> None:
    client = build(TOOLDISCOVERY_TOOL_SEARCH=False).test_client()
    full = {t["name"]: t for t in (modern(client, "tools/list", None, ALICE) if era == "stateless" else
                                   rpc(client, "tools/list", headers=ALICE)).get_json()["result"]["tools"]}
    client = build().test_client()
    result = call(client, "search_tools", {"query": "stop the CI build", "limit": 2}, era)["result"]
    found = result["structuredContent"]["tools"]
    assert result["isError"] is False and len(found) <= 2
    assert found[0]["name"] == "runs_cancel" and found[0] == full["runs_cancel"]  # inputSchema and all
    assert '"runs_cancel"' in result["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
def test_call_tool_runs_the_tool_as_a_direct_call_would(era: str) -> None:
    client = build().test_client()
    via = call(client, "call_tool", {"name": "runs_cancel", "arguments": {"run_id": 7}}, era)["result"]
    direct = call(client, "runs_cancel", {"run_id": 7}, era)["result"]
    assert via == direct and via["structuredContent"] == {"result": "cancelled 7"}
    failed = call(client, "call_tool", {"name": "runs_cancel", "arguments": {"run_id": -1}}, era)["result"]
    assert failed["isError"] is True and failed["content"][0]["text"] == "No such run."
    invalid = call(client, "call_tool", {"name": "runs_cancel", "arguments": {"run_id": "x"}}, era)["result"]
    assert invalid["isError"] is True and "run_id" in invalid["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
def test_nobody_finds_or_calls_through_search_a_tool_they_cannot_see(era: str) -> None:
    client = build().test_client()
    query = {"query": "delete the secret", "limit": 5}
    found = call(client, "search_tools", query, era)["result"]["structuredContent"]["tools"]
    assert "secrets_delete" not in [t["name"] for t in found]
    unknown = call(client, "call_tool", {"name": "secrets_delete", "arguments": {}}, era)
    assert unknown == call(client, "secrets_delete", {}, era)  # what a direct call of it answers
    admin = {"X-User": "root", "X-Scopes": "admin"}
    found = call(client, "search_tools", query, era, admin)["result"]["structuredContent"]["tools"]
    assert found[0]["name"] == "secrets_delete"
    assert call(client, "call_tool", {"name": "secrets_delete"}, era, admin)["result"]["content"][0]["text"] == "secret"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("tool", "arguments", "words"), [
    ("search_tools", {"query": ""}, "non-empty"),
    ("search_tools", {"query": "x" * 501}, "longer than 500"),
    ("search_tools", {"query": "pull\x00\x01request"}, "without control characters"),
    ("search_tools", {"query": "pull \ud800request"}, "without control characters"),  # not text: half a pair
    ("search_tools", {"query": 12}, "non-empty string"),
    ("search_tools", {"query": "pull", "limit": 0}, "from 1 to 50"),
    ("search_tools", {"query": "pull", "limit": -1}, "from 1 to 50"),
    ("search_tools", {"query": "pull", "limit": 10_000}, "from 1 to 50"),
    ("search_tools", {}, "non-empty"),
    ("call_tool", {"arguments": {}}, "arguments.name"),
    ("call_tool", {"name": 3}, "arguments.name"),
    ("call_tool", {"name": "call_tool", "arguments": {"name": "runs_cancel", "arguments": {}}}, "not call_tool"),
])
def test_what_cannot_be_searched_or_called_is_a_tool_error_the_model_can_read(tool: str, arguments: Any,
                                                                              words: str, era: str) -> None:
    result = call(build().test_client(), tool, arguments, era)["result"]
    assert result["isError"] is True and words in result["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
def test_an_unknown_tool_or_arguments_not_an_object_are_refused_as_a_direct_call_is(era: str) -> None:
    """A JSON-RPC error (200 in the handshake era, 400 in the stateless one: ``call`` checks)."""
    client = build().test_client()
    for name, arguments in (("no_such_tool", {}), ("runs_cancel", [1]), ("runs_cancel", "x")):
        via = call(client, "call_tool", {"name": name, "arguments": arguments}, era)
        assert via == call(client, name, arguments, era), (name, arguments)
        assert via["error"]["code"] == -32602
    assert call(client, "call_tool", {"name": "no_such_tool", "arguments": {}}, era)["error"]["message"] == \
        "Unknown tool: no_such_tool"
    assert "object" in call(client, "call_tool", {"name": "runs_cancel", "arguments": [1]}, era)["error"]["message"]
    assert call(client, "search_tools", [1], era)["error"]["code"] == -32602


@pytest.mark.parametrize("era", ERAS)
def test_the_explorer_search_answers_the_same_tools_in_the_same_order(era: str) -> None:
    client = build(TOOLDISCOVERY_DIALECTS=["mcp", "explorer"]).test_client()
    for query in ("pull request", "stop the CI build", "open a PR", "list", "who"):
        served = client.get("/explorer/tools", query_string={"q": query, "limit": "50"}, headers=ALICE)
        found = call(client, "search_tools", {"query": query, "limit": 50}, era)["result"]["structuredContent"]
        assert [t["name"] for t in found["tools"]] == [t["name"] for t in served.get_json()], query


def test_past_a_size_only_a_caller_who_sees_more_tools_gets_the_search_tools() -> None:
    client = build(TOOLDISCOVERY_TOOL_SEARCH=4).test_client()
    assert listed(client, "handshake") == ["pulls_create", "pulls_list", "runs_cancel", "whoami"]  # 4: all
    admin = {"X-User": "root", "X-Scopes": "admin"}
    assert listed(client, "handshake", admin) == ["search_tools", "call_tool", "whoami"]  # 5: search
    # where search is off, search_tools is an unknown tool like any other
    assert call(client, "search_tools", {"query": "pull"}, "handshake")["error"]["code"] == -32602


@pytest.mark.parametrize("value", ["yes", -1, 1.5])
def test_a_wrong_setting_fails_at_init_app(value: object) -> None:
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_TOOL_SEARCH"):
        build(TOOLDISCOVERY_TOOL_SEARCH=value)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_searches_then_calls(mode: str) -> None:
    """The official MCP client over HTTP (handshake era: legacy; stateless era: auto) lists the two
    search tools, searches, and calls the tool it found through call_tool."""
    from mcp import Client

    async def run(url: str) -> tuple[list[str], Any, Any]:
        import httpx2 as httpx  # the SDK's own HTTP client
        from mcp.client.streamable_http import streamable_http_client

        async with httpx.AsyncClient(headers=ALICE) as http, \
                Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            found = await client.call_tool("search_tools", {"query": "open a PR", "limit": 3})
            name = found.structured_content["tools"][0]["name"]
            ran = await client.call_tool("call_tool", {"name": name, "arguments": {"title": "fix"}})
            return names, found, ran

    with live_server(build()) as base:
        names, found, ran = asyncio.run(run(f"{base}/mcp"))
    assert names == ["search_tools", "call_tool", "whoami"]
    assert found.structured_content["tools"][0]["name"] == "pulls_create" and not found.is_error
    assert ran.structured_content == {"result": "opened fix"} and not ran.is_error


def with_app_only_tool(**config: Any) -> Flask:
    """:func:`build`'s app and a tool only a UI calls (``visibility=["app"]``)."""
    app = build(**config)
    discovery = app.extensions["tooldiscovery"]
    discovery.add_tool(lambda: "refreshed", name="dashboard_refresh", title="Refresh the pull request dashboard",
                       description="Refresh the pull request dashboard.", visibility=["app"])
    return app


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_only_an_interface_calls_is_never_found_or_run_through_search(era: str) -> None:
    """search_tools answers what the model reads: a ``visibility=["app"]`` tool is not in it, and
    call_tool refuses it as an unknown tool; the app's UI still calls it directly."""
    client = with_app_only_tool().test_client()
    found = call(client, "search_tools", {"query": "refresh the pull request dashboard", "limit": 50}, era)
    names = [t["name"] for t in found["result"]["structuredContent"]["tools"]]
    assert "dashboard_refresh" not in names and "pulls_list" in names
    refused = call(client, "call_tool", {"name": "dashboard_refresh", "arguments": {}}, era)
    assert refused["error"]["code"] == -32602 and refused["error"]["message"] == "Unknown tool: dashboard_refresh"
    assert call(client, "dashboard_refresh", {}, era)["result"]["content"][0]["text"] == "refreshed"
