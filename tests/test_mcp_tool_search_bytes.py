"""The bytes of MCP ``search_tools`` answers, joined from texts made once (per tool, era, interface
and encoding) and the text around them (per era and encoding): they are what the app's JSON
provider writes of the whole reply, in both eras, with ``ensure_ascii`` on and off, a non-ASCII
tool and server name, and when the setting or a tool changes between two searches."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from .test_mcp import MODERN


def build() -> Flask:
    d = ToolDiscovery()

    @d.tool(title="Ouvrir une pull request «été»")
    def pulls_ouvrir(titre: str) -> str:
        """Ouvre une pull request depuis une branche (日本語)."""
        return titre

    @d.tool(title="List pull requests", annotations={"readOnlyHint": True})
    def pulls_list() -> list[str]:
        """List the open pull requests."""
        return ["#1"]

    app = Flask("bytes")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True,
                      TOOLDISCOVERY_SERVER_NAME="serveur-été")
    d.init_app(app)
    return app


def search(client: Any, era: str, query: str = "pull request", id_: Any = 1) -> bytes:
    params: dict[str, Any] = {"name": "search_tools", "arguments": {"query": query, "limit": 5}}
    headers = {"MCP-Protocol-Version": "2025-06-18"}
    if era == "stateless":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {}}
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "search_tools"}
    response = client.post("/mcp", headers=headers, data=json.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}), content_type="application/json")
    assert response.status_code == 200
    return response.get_data()


def dumped(body: bytes, ensure_ascii: bool) -> bytes:
    """The reply as Flask's default provider writes it whole."""
    return json.dumps(json.loads(body), ensure_ascii=ensure_ascii).encode("utf-8")


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_search_answer_is_what_the_provider_writes_of_the_whole_reply(era: str) -> None:
    app = build()
    client = app.test_client()
    for ensure_ascii in (True, False, True):  # changed between searches: each answer follows the setting
        app.json.ensure_ascii = ensure_ascii  # type: ignore[attr-defined]
        for id_ in (1, "é-1", 2**40):
            body = search(client, era, id_=id_)
            assert body == dumped(body, ensure_ascii)
            assert (b"\\u00e9t\\u00e9" in body) is ensure_ascii and ("été".encode() in body) is not ensure_ascii
            reply = json.loads(body)["result"]
            found = [tool["name"] for tool in reply["structuredContent"]["tools"]]
            assert found[:2] == ["pulls_ouvrir", "pulls_list"] or set(found) == {"pulls_ouvrir", "pulls_list"}
            assert json.loads(reply["content"][0]["text"]) == reply["structuredContent"]
            assert ("resultType" in reply) is (era == "stateless")


def test_a_changed_tool_is_answered_changed() -> None:
    app = build()
    client = app.test_client()
    before = search(client, "handshake")
    with app.app_context():
        tool = app.extensions["tooldiscovery"].tools().get("pulls_list")
    assert tool is not None
    tool.description = "List the open pull requests, «changed»."
    after = search(client, "handshake")
    assert after != before and after == dumped(after, True)
    assert b"\\u00abchanged\\u00bb" in after
