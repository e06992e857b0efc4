"""A provider called on every request: its dicts are read once per content, yet every change a
provider makes, in place or not, shows in the very next document (issue #14: "the cache is keyed
so a provider's new tool list shows up at once")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import Tool, ToolDiscovery

PATHS = {"opal": "/opal/discovery", "oxp": "/oxp/tools", "tdp": "/api/v1/tools", "explorer": "/explorer/tools"}


def make(d: ToolDiscovery) -> Flask:
    app = Flask("providers")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": [*PATHS, "mcp"],
                       "TOOLDISCOVERY_ALLOW_EXECUTE": True})
    d.init_app(app)
    return app


def mcp_tools(client: Any) -> list[dict[str, Any]]:
    body = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Accept": "application/json, text/event-stream",
                                "MCP-Protocol-Version": "2025-06-18"}).get_json()
    tools: list[dict[str, Any]] = body["result"]["tools"]
    return tools


def search_tool() -> dict[str, Any]:
    return {"name": "search", "description": "Search the catalogue.",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "Words."},
                                                             "limit": {"type": "integer", "default": 5}},
                            "required": ["query"]}}


@pytest.mark.parametrize("dialect", [*PATHS, "mcp"])
def test_a_dict_changed_in_place_shows_at_once(dialect: str) -> None:
    tool = search_tool()
    d = ToolDiscovery(tools=lambda: [tool])
    client = make(d).test_client()

    def text() -> str:
        return json.dumps(mcp_tools(client)) if dialect == "mcp" else client.get(PATHS[dialect]).get_data(as_text=True)

    first = text()
    assert "Search the catalogue." in first and text() == first
    tool["description"] = "Search the archive."
    assert "Search the archive." in text() and "Search the catalogue." not in text()
    tool["inputSchema"]["properties"]["query"]["description"] = "Terms to look for."
    if dialect != "explorer":  # its list shows no parameters
        assert "Terms to look for." in text()
    tool["description"] = "Search the catalogue."
    tool["inputSchema"]["properties"]["query"]["description"] = "Words."
    assert text() == first


def test_property_order_change_shows_at_once() -> None:
    """Dialects show a schema's properties in the order given: a provider that reorders them gets
    the new order (the document cache keys on it)."""
    tool = search_tool()
    d = ToolDiscovery(tools=lambda: [tool])
    client = make(d).test_client()
    assert list(mcp_tools(client)[0]["inputSchema"]["properties"]) == ["query", "limit"]
    opal = client.get("/opal/discovery").get_json()
    assert [p["name"] for p in opal["functions"][0]["parameters"]] == ["query", "limit"]
    props = tool["inputSchema"]["properties"]
    tool["inputSchema"]["properties"] = {"limit": props["limit"], "query": props["query"]}
    assert list(mcp_tools(client)[0]["inputSchema"]["properties"]) == ["limit", "query"]
    opal = client.get("/opal/discovery").get_json()
    assert [p["name"] for p in opal["functions"][0]["parameters"]] == ["limit", "query"]


def test_provided_dicts_calls_and_validation() -> None:
    tool = search_tool()
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(name: str, arguments: dict[str, Any]) -> Any:
        seen.append((name, arguments))
        return {"hits": [arguments.get("query")]}

    d = ToolDiscovery(tools=lambda: [dict(tool)], call_handler=handler)
    client = make(d).test_client()
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

    def call(arguments: dict[str, Any]) -> dict[str, Any]:
        body = client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": arguments}})
        result: dict[str, Any] = body.get_json()["result"]
        return result

    assert call({"query": "owls"})["structuredContent"] == {"hits": ["owls"]}
    assert call({"limit": 3})["isError"] is True  # query is required: the handler is not called
    assert seen == [("search", {"query": "owls"})]
    tool["inputSchema"] = {"type": "object", "properties": {"limit": {"type": "integer"}}}  # the next list
    assert call({"limit": 3})["structuredContent"] == {"hits": [None]}
    assert seen[-1] == ("search", {"limit": 3})


def test_models_and_objects_are_read_every_time() -> None:
    class Remote:
        def __init__(self) -> None:
            self.name = "remote"
            self.description = "First."

    remote = Remote()
    d = ToolDiscovery(tools=lambda: [remote, {"name": "mixed", "description": "Has an object.", "meta": remote}])
    client = make(d).test_client()
    assert "First." in client.get("/oxp/tools").get_data(as_text=True)
    remote.description = "Second."
    assert "Second." in client.get("/oxp/tools").get_data(as_text=True)


def test_tool_objects_from_a_provider_are_served_as_given() -> None:
    built = Tool(name="prebuilt", description="Built once.", input_schema={"type": "object"})
    d = ToolDiscovery(tools=lambda: [built])
    client = make(d).test_client()
    assert "Built once." in client.get("/opal/discovery").get_data(as_text=True)
    assert d.tools().get("prebuilt") is built


@pytest.mark.parametrize("given", ["a callable answering a new list", "the list itself"])
def test_the_same_tool_objects_answered_again_are_not_read_and_a_new_one_is(given: str) -> None:
    """A provider answering ``Tool`` objects it built once (as one over a big catalogue does) is not
    read again while it answers the very same objects: the same tool set comes back; a tool added,
    replaced or dropped shows on the next request. So too for a list handed over as the provider:
    it is what it answers on every request (not copied when it did not change), and a change made
    in place in that very list shows (what was read is kept apart from it)."""
    built = [Tool(name=f"tool_{n}", description=f"Tool {n}.", input_schema={"type": "object"}) for n in range(50)]
    answer = list(built)
    d = ToolDiscovery()
    if given == "the list itself":
        d.add_provider(answer)
    else:
        d.add_provider(lambda: list(answer))  # a new list each time, the same objects in it
    client = make(d).test_client()
    assert len(mcp_tools(client)) == 50
    reads, before = d.registry.reads, d.registry.resolve()
    for _ in range(3):
        assert len(mcp_tools(client)) == 50
    assert d.registry.resolve() is before and d.registry.reads == reads
    answer[7] = Tool(name="tool_7", description="Tool seven, rewritten.", input_schema={"type": "object"})
    assert [t["description"] for t in mcp_tools(client) if t["name"] == "tool_7"] == ["Tool seven, rewritten."]
    answer.pop()
    assert "tool_49" not in {t["name"] for t in mcp_tools(client)}
    answer.append(Tool(name="added", description="Added.", input_schema={"type": "object"}))
    assert "added" in {t["name"] for t in mcp_tools(client)}
    after = d.registry.resolve()
    assert d.registry.resolve() is after


def test_an_unchanged_answer_is_not_read_again_and_a_change_in_place_is() -> None:
    """The same dicts answered again are neither read nor serialised (counted by the registry), the
    tool set is the very same object (its documents and search index with it), and each kind of
    change in place, nested or not, is read on the next request: a value, a key order, a type."""
    tools = [search_tool(), {**search_tool(), "name": "other", "description": "Another tool."}]
    d = ToolDiscovery(tools=lambda: tools)
    client = make(d).test_client()
    first = mcp_tools(client)
    reads = d.registry.reads
    assert reads == 2
    before = d.registry.resolve()
    assert mcp_tools(client) == first and d.registry.resolve() is before and d.registry.reads == reads

    limit = tools[0]["inputSchema"]["properties"]["limit"]
    limit["default"] = 6  # a nested value
    assert mcp_tools(client)[0]["inputSchema"]["properties"]["limit"]["default"] == 6
    assert d.registry.reads == reads + 1  # that tool only
    limit["default"] = True  # equal to 1 in Python, not in JSON
    limit["default"] = 1
    assert mcp_tools(client)[0]["inputSchema"]["properties"]["limit"]["default"] == 1
    limit["default"] = True
    assert mcp_tools(client)[0]["inputSchema"]["properties"]["limit"]["default"] is True
    properties = tools[0]["inputSchema"]["properties"]
    properties["query"] = properties.pop("query")  # the same dict, its keys in another order
    assert list(mcp_tools(client)[0]["inputSchema"]["properties"]) == ["limit", "query"]
    reads = d.registry.reads
    assert d.registry.resolve() is d.registry.resolve() and d.registry.reads == reads
    tools.append({**search_tool(), "name": "third"})  # a new tool in the same list
    assert [t["name"] for t in mcp_tools(client)] == ["search", "other", "third"]
    assert d.registry.reads == reads + 1


def test_a_provided_tools_version_is_taken_at_its_word() -> None:
    """A provider answering ``ProvidedTools(tools, version=...)`` is not read again while the
    version stays; a new version is read on the request that brings it."""
    from flask_tooldiscovery.tools.providers import ProvidedTools

    looked: list[str] = []

    class Remote:
        def __init__(self, description: str) -> None:
            self._description = description
            self.name = "remote"

        @property
        def description(self) -> str:
            looked.append(self._description)
            return self._description

    state = {"version": 1, "tool": Remote("First.")}
    d = ToolDiscovery(tools=lambda: ProvidedTools([state["tool"]], version=state["version"]))
    client = make(d).test_client()
    assert "First." in client.get("/oxp/tools").get_data(as_text=True)
    assert looked == ["First."]
    for _ in range(3):
        assert "First." in client.get("/oxp/tools").get_data(as_text=True)
    assert looked == ["First."]  # objects are otherwise read on every request
    state["tool"] = Remote("Second.")
    assert "First." in client.get("/oxp/tools").get_data(as_text=True)  # the same version: not looked at
    state["version"] = 2
    assert "Second." in client.get("/oxp/tools").get_data(as_text=True)
    assert looked == ["First.", "Second."]
