"""``flask tools connect CLIENT`` prints the configuration each client takes for the app's MCP
endpoint: every JSON output parses and has the client's documented shape, ``server.json`` is valid
against the MCP registry's schema (a stored copy), a credential is never printed, and the official
MCP client reaches the endpoint with what the generic configuration says."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from flask import Flask
from jsonschema import Draft7Validator

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.cli.connect import CLIENTS, SERVER_JSON_SCHEMA

from .conftest import live_server

TOKEN = "s3cret-connect-token"
REGISTRY_SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "mcp-registry-server.schema.json").read_text())


def _app(**config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(annotations={"title": "Add", "readOnlyHint": True})
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    app = Flask("connectapp")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp"], "TOOLDISCOVERY_TITLE": "Acme tools",
                       "TOOLDISCOVERY_ALLOW_EXECUTE": True, **config})
    discovery.init_app(app)
    return app


def _connect(app: Flask, *args: str) -> Result:
    return app.test_cli_runner().invoke(args=["tools", "connect", *args])


def _json(app: Flask, *args: str) -> Any:
    result = _connect(app, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_client_gets_its_documented_shape_for_the_default_address() -> None:
    app, url = _app(), "http://127.0.0.1:5000/mcp"
    assert _json(app, "cursor") == {"mcpServers": {"acme-tools": {"url": url}}}
    assert _json(app, "vscode") == {"servers": {"acme-tools": {"type": "http", "url": url}}}
    assert _json(app, "windsurf") == {"mcpServers": {"acme-tools": {"serverUrl": url}}}
    assert _json(app, "mcp.json") == {"mcpServers": {"acme-tools": {"type": "http", "url": url}}}
    assert _json(app, "claude-desktop") == {"mcpServers": {"acme-tools": {
        "command": "npx", "args": ["-y", "mcp-remote", url, "--transport", "http-only"]}}}
    code = _connect(app, "claude-code")
    assert code.exit_code == 0 and shlex.split(code.stdout) == [
        "claude", "mcp", "add", "--transport", "http", "acme-tools", url]


def test_claude_desktop_names_both_ways_and_what_each_needs() -> None:
    local = _connect(_app(), "claude-desktop")
    assert "needs Node.js" in local.stderr and "needs a public https URL" in local.stderr
    public = _connect(_app(), "claude-desktop", "--url", "https://tools.example.com/mcp")
    assert "Add custom connector, URL https://tools.example.com/mcp" in public.stderr
    assert "must be public" in public.stderr and "OAuth or not at all" in public.stderr
    remote_http = _json(_app(), "claude-desktop", "--url", "http://tools.internal:8000/mcp")
    assert "--allow-http" in remote_http["mcpServers"]["acme-tools"]["args"]


def test_server_json_is_valid_against_the_registry_schema() -> None:
    Draft7Validator.check_schema(REGISTRY_SCHEMA)
    assert REGISTRY_SCHEMA["$id"] == SERVER_JSON_SCHEMA
    document = _json(_app(TOOLDISCOVERY_SERVER_DESCRIPTION="Order tools. " * 20), "server.json",
                     "--url", "https://tools.example.com/mcp")
    Draft7Validator(REGISTRY_SCHEMA, format_checker=Draft7Validator.FORMAT_CHECKER).validate(document)
    assert document["$schema"] == SERVER_JSON_SCHEMA
    assert document["name"] == "com.example.tools/acme-tools"
    assert document["remotes"] == [{"type": "streamable-http", "url": "https://tools.example.com/mcp"}]
    assert len(document["description"]) <= 100 and document["title"] == "Acme tools"
    named = _json(_app(TOOLDISCOVERY_SERVER_CARD_NAME="io.github.acme/orders"), "server.json")
    assert named["name"] == "io.github.acme/orders"


def test_the_schema_copy_refuses_what_the_registry_refuses() -> None:
    """The stored schema is not a rubber stamp: a wrong transport type or a bad name fails it."""
    validator = Draft7Validator(REGISTRY_SCHEMA)
    document = _json(_app(), "server.json", "--url", "https://tools.example.com/mcp")
    assert not list(validator.iter_errors(document))
    assert list(validator.iter_errors({**document, "remotes": [{"type": "websocket", "url": "wss://x"}]}))
    assert list(validator.iter_errors({**document, "name": "no-slash"}))


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_static_token_is_asked_for_by_name_never_printed(client: str) -> None:
    result = _connect(_app(TOOLDISCOVERY_MCP_BEARER_TOKEN=TOKEN), client, "--url", "https://tools.example.com/mcp")
    assert result.exit_code == 0, result.output
    assert TOKEN not in result.output
    if client != "server.json":
        assert "TOOLDISCOVERY_MCP_BEARER_TOKEN" in result.output


def test_each_client_sends_the_token_its_own_way() -> None:
    app, url = _app(TOOLDISCOVERY_BEARER_TOKEN=TOKEN), "https://tools.example.com/mcp"
    word = "TOOLDISCOVERY_BEARER_TOKEN"
    code = shlex.split(_connect(app, "claude-code", "--url", url).stdout, posix=True)
    assert code[-2:] == ["--header", f"Authorization: Bearer ${word}"]  # the shell expands it
    assert _json(app, "cursor", "--url", url)["mcpServers"]["acme-tools"]["headers"] == {
        "Authorization": f"Bearer ${{env:{word}}}"}
    assert _json(app, "windsurf", "--url", url)["mcpServers"]["acme-tools"]["headers"] == {
        "Authorization": f"Bearer ${{env:{word}}}"}
    vscode = _json(app, "vscode", "--url", url)
    [asked] = vscode["inputs"]
    assert asked["password"] is True and vscode["servers"]["acme-tools"]["headers"] == {
        "Authorization": f"Bearer ${{input:{asked['id']}}}"}
    desktop = _json(app, "claude-desktop", "--url", url)["mcpServers"]["acme-tools"]
    assert desktop["args"][-2:] == ["--header", "Authorization:${AUTH_HEADER}"]
    assert desktop["env"] == {"AUTH_HEADER": f"Bearer <{word}>"}
    server = _json(app, "server.json", "--url", url)
    Draft7Validator(REGISTRY_SCHEMA).validate(server)
    [header] = server["remotes"][0]["headers"]
    assert header["name"] == "Authorization" and header["isSecret"] is True and header["value"] == "Bearer {token}"


def test_with_oauth_no_header_and_the_public_address_is_the_resource() -> None:
    app = _app(TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["https://auth.example.com"],
               TOOLDISCOVERY_MCP_RESOURCE="https://tools.example.com/mcp")
    assert _json(app, "cursor") == {"mcpServers": {"acme-tools": {"url": "https://tools.example.com/mcp"}}}
    code = _connect(app, "claude-code")
    assert "--header" not in code.stdout and "OAuth" in code.stderr


def test_the_apps_own_authorization_server_is_oauth_too() -> None:
    from .oauth_helpers import oauth_app

    app = oauth_app(TOOLDISCOVERY_MCP_RESOURCE="https://tools.example.com/mcp")
    [entry] = _json(app, "cursor")["mcpServers"].values()
    assert entry == {"url": "https://tools.example.com/mcp"}
    assert "OAuth" in _connect(app, "cursor").stderr
    checked = app.test_cli_runner().invoke(args=["tools", "check", "--target", "claude-directory"])
    assert "(server)" not in checked.output


def test_the_address_comes_from_flask_server_name_and_the_name_from_the_setting() -> None:
    app = _app(SERVER_NAME="tools.example.com", PREFERRED_URL_SCHEME="https", TOOLDISCOVERY_MCP_URL_PREFIX="/ai",
               TOOLDISCOVERY_SERVER_NAME="Orders API")
    assert _json(app, "cursor") == {"mcpServers": {"orders-api": {"url": "https://tools.example.com/ai"}}}


def test_an_unknown_client_is_a_clear_error_naming_the_known_ones() -> None:
    result = _connect(_app(), "emacs")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'emacs' is not one of" in result.output and all(name in result.output for name in CLIENTS)


def test_a_bad_url_or_no_mcp_endpoint_is_a_clear_error() -> None:
    for url in ("ftp://tools.example.com/mcp", "tools.example.com/mcp", "https:///mcp"):
        result = _connect(_app(), "cursor", "--url", url)
        assert result.exit_code == 2 and "--url" in result.output and "Traceback" not in result.output, url
    result = _connect(_app(TOOLDISCOVERY_DIALECTS=["opal"]), "cursor")
    assert result.exit_code == 1 and "mount the mcp dialect" in result.output


def _expand(value: str) -> str:
    return re.sub(r"\$\{([A-Z_]+)\}", lambda m: os.environ.get(m.group(1), ""), value)


def test_the_official_client_reaches_the_app_with_the_generic_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mcp.json entry, its ${VAR} expanded as clients do, lets the official MCP client list
    and call the tools of a running app that needs a token."""
    from mcp import Client

    app = _app(TOOLDISCOVERY_MCP_BEARER_TOKEN=TOKEN)
    monkeypatch.setenv("TOOLDISCOVERY_MCP_BEARER_TOKEN", TOKEN)

    async def run(entry: dict[str, Any]) -> tuple[list[str], Any]:
        import httpx2 as httpx  # the SDK's own HTTP client
        from mcp.client.streamable_http import streamable_http_client

        headers = {name: _expand(value) for name, value in entry.get("headers", {}).items()}
        async with httpx.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(entry["url"], http_client=http), mode="legacy") as client:
                names = [t.name for t in (await client.list_tools()).tools]
                return names, (await client.call_tool("add", {"a": 2, "b": 3})).structured_content

    with live_server(app) as base:
        [entry] = _json(app, "mcp.json", "--url", f"{base}/mcp")["mcpServers"].values()
        assert entry["type"] == "http"
        names, added = asyncio.run(run(entry))
    assert names == ["add"] and added == {"result": 5}
