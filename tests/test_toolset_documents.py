"""The documents that tell a client where to connect know toolsets: the discovery manifest names
each toolset's read-only URL and the MCP headers that choose toolsets; the MCP Server Card lists each
toolset's MCP mount as a remote and the optional headers (still valid against the draft's schema,
and unchanged for an app without toolsets); ``flask tools connect --toolset NAME --readonly`` prints
a configuration with which the official MCP client reaches just those tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from flask import Flask
from jsonschema import Draft7Validator

from flask_tooldiscovery import ToolDiscovery

from .conftest import live_server
from .test_connect import REGISTRY_SCHEMA
from .test_server_card import valid_card

READ = {"readOnlyHint": True}


def build(**config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(tags=["issues"], annotations=READ)
    def issues_list(repo: str) -> list[str]:
        """List the issues of a repository."""
        return [f"{repo}#1"]

    @discovery.tool(tags=["issues"])
    def issues_create(repo: str, title: str) -> str:
        """Open an issue."""
        return f"opened {title}"

    @discovery.tool(tags=["repos"], annotations=READ)
    def repos_get(repo: str) -> dict[str, str]:
        """Get a repository."""
        return {"repo": repo}

    @discovery.tool(tags=["actions"], annotations=READ)
    def actions_runs(repo: str) -> list[str]:
        """List the workflow runs of a repository."""
        return []

    app = Flask("documents")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_ALLOW_EXECUTE": True, "TOOLDISCOVERY_SERVER_NAME": "Acme tools",
                       "TOOLDISCOVERY_DIALECTS": ["mcp", "explorer", "manifest", "server_card"],
                       "TOOLDISCOVERY_TOOLSETS": {
                           "issues": {"tags": ["issues"], "dialects": ["mcp", "explorer"]},
                           "repos": {"tags": ["repos"]}, "ci": {"tags": ["actions"], "dialects": ["explorer"]}},
                       **config})
    discovery.init_app(app)
    return app


def test_the_manifest_names_the_read_only_urls_and_the_headers() -> None:
    manifest = build().test_client().get("/.well-known/tool-discovery").get_json()
    assert manifest["mcp"]["readonly"] == {"header": "X-MCP-Readonly", "url": "http://localhost/mcp/readonly"}
    assert manifest["mcp"]["toolsets"] == {"header": "X-MCP-Toolsets", "names": ["ci", "issues", "repos"]}
    toolsets = manifest["toolsets"]
    assert toolsets["issues"]["readonly"] == {"mcp": "http://localhost/mcp/x/issues/readonly"}  # not the explorer's
    assert toolsets["repos"]["readonly"] == {"mcp": "http://localhost/mcp/x/repos/readonly"}
    assert toolsets["ci"]["readonly"] == {}
    assert toolsets["issues"]["dialects"]["mcp"]["url"] == "http://localhost/mcp/x/issues"  # as before


def test_without_read_only_mounts_or_toolsets_the_manifest_says_so() -> None:
    manifest = build(TOOLDISCOVERY_READONLY_MOUNTS=False, TOOLDISCOVERY_TOOLSETS={}).test_client().get(
        "/.well-known/tool-discovery").get_json()
    assert manifest["mcp"]["readonly"] == {"header": "X-MCP-Readonly", "url": None}
    assert "toolsets" not in manifest["mcp"] and "toolsets" not in manifest


def test_every_url_the_manifest_names_serves_what_it_says() -> None:
    app = build()
    client = app.test_client()
    manifest = client.get("/.well-known/tool-discovery").get_json()
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

    def listed(url: str, **more: str) -> list[str]:
        answer = client.post(url.removeprefix("http://localhost"), json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={**headers, **more})
        return [t["name"] for t in answer.get_json()["result"]["tools"]]

    assert listed(manifest["mcp"]["readonly"]["url"]) == ["issues_list", "repos_get", "actions_runs"]
    assert listed(manifest["toolsets"]["issues"]["readonly"]["mcp"]) == ["issues_list"]
    assert listed(manifest["mcp"]["url"], **{manifest["mcp"]["toolsets"]["header"]: "ci"}) == ["actions_runs"]


def test_the_server_card_lists_each_toolsets_mcp_mount_and_the_optional_headers() -> None:
    card = valid_card(build().test_client().get("/mcp/server-card").get_json())
    assert [r["url"] for r in card["remotes"]] == ["http://localhost/mcp", "http://localhost/mcp/x/issues",
                                                   "http://localhost/mcp/x/repos"]
    full, issues = card["remotes"][0], card["remotes"][1]
    assert [h["name"] for h in full["headers"]] == ["X-MCP-Toolsets", "X-MCP-Readonly"]
    assert not any(h["isRequired"] for h in full["headers"])
    assert "ci, issues, repos" in full["headers"][0]["description"]
    assert full["headers"][1]["format"] == "boolean"
    assert [h["name"] for h in issues["headers"]] == ["X-MCP-Readonly"]
    assert issues["supportedProtocolVersions"] == full["supportedProtocolVersions"]


def test_a_toolsets_remote_names_the_credential_as_the_full_one_does() -> None:
    app = build(TOOLDISCOVERY_MCP_BEARER_TOKEN="s3cret-token-value", TOOLDISCOVERY_OPEN_DIALECTS=["explorer"])
    card = valid_card(app.test_client().get("/mcp/server-card").get_json())
    for remote in card["remotes"]:
        assert remote["headers"][0]["name"] == "Authorization" and remote["headers"][0]["isRequired"] is True
    assert "s3cret" not in json.dumps(card)


def test_without_toolsets_the_card_is_as_it_was() -> None:
    card = valid_card(build(TOOLDISCOVERY_TOOLSETS={}).test_client().get("/mcp/server-card").get_json())
    assert [r["url"] for r in card["remotes"]] == ["http://localhost/mcp"] and "headers" not in card["remotes"][0]


def connect(app: Flask, *args: str) -> Any:
    result = app.test_cli_runner().invoke(args=["tools", "connect", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_connect_points_a_client_at_a_toolset_several_toolsets_or_the_read_only_form() -> None:
    app, url = build(), "https://tools.example.com/mcp"
    one = connect(app, "cursor", "--url", url, "--toolset", "issues")
    assert one == {"mcpServers": {"acme-tools-issues": {"url": f"{url}/x/issues"}}}
    several = connect(app, "vscode", "--url", url, "--toolset", "issues", "--toolset", "repos", "--readonly")
    assert several == {"servers": {"acme-tools-issues-repos-readonly": {
        "type": "http", "url": f"{url}/readonly", "headers": {"X-MCP-Toolsets": "issues,repos"}}}}
    not_mcp = connect(app, "mcp.json", "--url", url, "--toolset", "ci")  # mounted under the explorer only
    assert not_mcp["mcpServers"]["acme-tools-ci"] == {"type": "http", "url": url, "headers": {"X-MCP-Toolsets": "ci"}}
    off = connect(build(TOOLDISCOVERY_READONLY_MOUNTS=False), "windsurf", "--url", url, "--readonly")
    assert off["mcpServers"]["acme-tools-readonly"] == {"serverUrl": url, "headers": {"X-MCP-Readonly": "true"}}
    code = app.test_cli_runner().invoke(args=["tools", "connect", "claude-code", "--url", url, "--toolset", "issues",
                                              "--toolset", "repos"])
    assert code.stdout.split()[-3:] == ["--header", "'X-MCP-Toolsets:", "issues,repos'"]


def test_connect_with_a_toolset_keeps_the_credential_and_the_registry_schema() -> None:
    app = build(TOOLDISCOVERY_MCP_BEARER_TOKEN="s3cret-token-value", TOOLDISCOVERY_OPEN_DIALECTS=["explorer"])
    cursor = connect(app, "cursor", "--toolset", "issues", "--toolset", "repos")["mcpServers"][
        "acme-tools-issues-repos"]
    assert cursor["headers"] == {"X-MCP-Toolsets": "issues,repos",
                                 "Authorization": "Bearer ${env:TOOLDISCOVERY_MCP_BEARER_TOKEN}"}
    server = connect(app, "server.json", "--url", "https://tools.example.com/mcp", "--toolset", "issues",
                     "--toolset", "repos")
    Draft7Validator(REGISTRY_SCHEMA).validate(server)
    assert [h["name"] for h in server["remotes"][0]["headers"]] == ["X-MCP-Toolsets", "Authorization"]


def test_connect_refuses_an_unknown_toolset_naming_the_toolsets() -> None:
    result = build().test_cli_runner().invoke(args=["tools", "connect", "cursor", "--toolset", "nope"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "unknown toolset(s) 'nope'; the toolsets are: ci, issues, repos" in result.output


@pytest.mark.slow
def test_the_official_client_with_the_printed_configuration_sees_just_those_tools() -> None:
    """``flask tools connect mcp.json --toolset ... --readonly``'s entry, URL and headers as printed,
    lets the official MCP client list and call exactly the read-only tools of those toolsets."""
    import httpx2 as httpx  # the SDK's own HTTP client
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    app = build()

    async def run(entry: dict[str, Any]) -> tuple[list[str], Any, Any]:
        async with httpx.AsyncClient(headers=entry.get("headers", {})) as http:
            async with Client(streamable_http_client(entry["url"], http_client=http), mode="legacy") as client:
                names = [t.name for t in (await client.list_tools()).tools]
                ran = await client.call_tool("repos_get", {"repo": "acme/app"})
                try:
                    refused: Any = await client.call_tool("issues_create", {"repo": "a", "title": "t"})
                except Exception as exc:
                    refused = exc
                return names, ran.structured_content, refused

    with live_server(app) as base:
        outcomes = []
        for toolsets in (["issues", "repos"], ["repos"]):
            flags = [word for name in toolsets for word in ("--toolset", name)]
            [entry] = connect(app, "mcp.json", "--url", f"{base}/mcp", *flags, "--readonly")["mcpServers"].values()
            outcomes.append(asyncio.run(run(entry)))
    assert outcomes[0][0] == ["issues_list", "repos_get"] and outcomes[1][0] == ["repos_get"]
    for _, ran, refused in outcomes:
        assert ran == {"repo": "acme/app"} and "Unknown tool: issues_create" in str(refused)


def test_a_toolsets_count_is_what_a_model_is_listed_whichever_dialect_mounts_it_first() -> None:
    """The manifest counts a toolset's tools as it counts the app's (``tools``): those a model may
    see. A tool only an interface calls (``visibility=["app"]``) is listed only to an MCP Apps
    client, so it is not counted, whether the toolset's first mount is MCP's or the explorer's
    (both list it to their own UIs) or another dialect's."""
    for dialects in (["mcp", "explorer"], ["explorer"], ["oxp", "mcp"]):
        discovery = ToolDiscovery()

        @discovery.tool(tags=["issues"], annotations=READ)
        def issues_list(repo: str) -> list[str]:
            """List the issues of a repository."""
            return []

        @discovery.tool(tags=["repos"], annotations=READ)
        def repos_get(repo: str) -> dict[str, str]:
            """Get a repository."""
            return {"repo": repo}

        discovery.add_tool(lambda: [], name="issues_board_refresh", description="Refresh the board.",
                           tags=["issues"], visibility=["app"])
        app = Flask("counts")
        app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp", "explorer", "oxp", "manifest"],
                           "TOOLDISCOVERY_TOOLSETS": {"issues": {"tags": ["issues"], "dialects": dialects}}})
        discovery.init_app(app)
        manifest = app.test_client().get("/.well-known/tool-discovery").get_json()
        assert manifest["tools"] == 2, dialects
        assert manifest["toolsets"]["issues"]["tools"] == 1, dialects
