"""The discovery manifest says where the tools can be searched: the explorer's tool list as a URI
template taking ``q`` and ``limit`` (expanded, it answers the search), and, with
``TOOLDISCOVERY_TOOL_SEARCH`` on, that MCP's ``tools/list`` offers ``search_tools`` and ``call_tool``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.dialects.manifest import DIALECT as MANIFEST


def build(dialects: list[str], **config: Any) -> Flask:
    d = ToolDiscovery(dialects=[MANIFEST])
    d.add_tool(lambda: 1, name="pulls_create", title="Create a pull request", description="Open a pull request.")
    d.add_tool(lambda: 1, name="runs_cancel", title="Cancel a workflow run", description="Cancel a workflow run.")
    d.add_tool(lambda: 1, name="issues_list", title="List issues", description="List the issues of a repository.")
    app = Flask("manifest_search")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[*dialects, "manifest"], **config)
    d.init_app(app)
    return app


def search_of(app: Flask) -> Any:
    response = app.test_client().get("/.well-known/tool-discovery")
    assert response.status_code == 200
    return response.get_json()["search"]


def test_the_explorer_search_template_expands_to_the_search() -> None:
    app = build(["explorer", "mcp"])
    search = search_of(app)
    template = search["explorer"]
    assert template == "http://localhost/explorer/tools{?q,limit}"
    url = template.replace("{?q,limit}", "?" + urlencode({"q": "stop the CI build", "limit": 2}))
    found = app.test_client().get(urlsplit(url).path + "?" + urlsplit(url).query)
    assert found.status_code == 200
    assert found.get_json()[0]["name"] == "runs_cancel"
    assert search["mcp"] is None  # TOOL_SEARCH unset: tools/list shows every tool


def test_with_tool_search_on_it_names_the_mcp_search_tools_that_tools_list_offers() -> None:
    app = build(["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True)
    search = search_of(app)
    assert search["explorer"] is None
    assert search["mcp"] == {"url": "http://localhost/mcp", "tools": ["search_tools", "call_tool"], "whenMoreThan": 0}
    listed = app.test_client().post(search["mcp"]["url"].removeprefix("http://localhost"), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"MCP-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"})
    assert [t["name"] for t in listed.get_json()["result"]["tools"]] == search["mcp"]["tools"]


def test_a_size_says_past_how_many_tools_search_turns_on() -> None:
    assert search_of(build(["mcp"], TOOLDISCOVERY_TOOL_SEARCH="100"))["mcp"]["whenMoreThan"] == 100
    assert search_of(build(["opal"])) == {"explorer": None, "mcp": None}
