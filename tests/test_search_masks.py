"""One search index per base tool set: every caller's view of it (a ``visible=`` hook, scopes, a
toolset, a read-only mount) is searched in the registry's one index with the tools it hides masked
out, so a hidden tool is never found even when it is the best match, and however many callers'
views there are, the index is built once (again only when a tool changes)."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.search.index import SearchIndex
from flask_tooldiscovery.search.indexes import SearchIndexes
from flask_tooldiscovery.tools.model import Identity
from flask_tooldiscovery.tools.providers import tool_from_object

from .test_mcp import modern, rpc

ERAS = ["handshake", "stateless"]
#: Tools ``user{k}`` may not see: filler tool ``k`` (each user a visible set of their own).
USERS = 50


def build(dialects: list[str] | None = None) -> tuple[Flask, ToolDiscovery]:
    d = ToolDiscovery()
    # the best match for "create a pull request", hidden from bob by a visible= hook
    d.add_tool(lambda: 1, name="pulls_create", title="Create a pull request",
               description="Open a pull request from a branch.",
               visible=lambda ident: ident is None or ident.subject != "bob")
    d.add_tool(lambda: 1, name="pulls_list", title="List pull requests", description="List the pull requests.",
               annotations={"readOnlyHint": True})
    d.add_tool(lambda: 1, name="runs_cancel", title="Cancel a workflow run", description="Stop a workflow run.")
    for k in range(USERS):
        d.add_tool(lambda: 1, name=f"labels_{k}", title=f"Create label {k}", description=f"Create the label {k}.",
                   visible=lambda ident, k=k: ident is None or ident.subject != f"user{k}")

    @d.identity
    def from_headers(request: Any) -> Identity | None:
        user = request.headers.get("X-User")
        return None if user is None else Identity(subject=user)

    app = Flask("masks")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=dialects or ["mcp", "explorer"],
                      TOOLDISCOVERY_TOOL_SEARCH=True)
    d.init_app(app)
    return app, d


def indexes(app: Flask) -> SearchIndexes:
    found: SearchIndexes = ToolDiscovery.pipelines(app)["mcp"].core.search_indexes
    return found


def search_tools(client: Any, query: str, era: str, user: str, limit: int = 50) -> list[str]:
    params = {"name": "search_tools", "arguments": {"query": query, "limit": limit}}
    headers = {"X-User": user}
    response = modern(client, "tools/call", params, headers) if era == "stateless" else \
        rpc(client, "tools/call", params, headers=headers)
    return [t["name"] for t in response.get_json()["result"]["structuredContent"]["tools"]]


@pytest.mark.parametrize("era", ERAS)
def test_a_hidden_tool_is_never_found_even_as_the_best_match(era: str) -> None:
    app, _ = build()
    client = app.test_client()
    assert search_tools(client, "create a pull request", era, "alice")[0] == "pulls_create"
    # the best tool bob may see comes first (a limit of 1: the hidden one took no place)
    assert search_tools(client, "create a pull request", era, "bob", limit=1) == ["pulls_list"]
    assert "pulls_create" not in search_tools(client, "create a pull request", era, "bob")
    assert search_tools(client, "create a pull request", era, "alice")[0] == "pulls_create"  # alice's mask is hers


def test_the_explorer_search_and_the_cli_leave_the_hidden_tool_out() -> None:
    app, _ = build()
    client = app.test_client()
    query = {"q": "create a pull request", "limit": "1"}
    assert client.get("/explorer/tools", query_string=query, headers={"X-User": "alice"}).get_json()[0]["name"] \
        == "pulls_create"
    answer = client.get("/explorer/tools", query_string=query, headers={"X-User": "bob"})
    served = [t["name"] for t in answer.get_json()]
    assert served == ["pulls_list"]
    runner = app.test_cli_runner()
    printed = runner.invoke(args=["tools", "--as", "bob", "search", "create a pull request", "--limit", "1"])
    assert printed.exit_code == 0, printed.output
    assert [line.split("@")[0] for line in printed.output.splitlines()] == served
    alice = runner.invoke(args=["tools", "--as", "alice", "search", "create a pull request"])
    assert alice.output.splitlines()[0].startswith("pulls_create@")


def test_fifty_visible_sets_build_the_index_once_and_each_finds_only_its_own() -> None:
    app, _ = build(["mcp"])
    client = app.test_client()
    searched = indexes(app)
    for round_ in range(2):
        for k in range(USERS):
            found = search_tools(client, f"create label {k}", "handshake", f"user{k}", limit=1)
            assert found and found != [f"labels_{k}"], (round_, k)
            other = (k + 1) % USERS
            assert search_tools(client, f"create label {other}", "handshake", f"user{k}")[0] == f"labels_{other}"
    assert searched.builds == 1


def test_a_tool_change_builds_the_index_again_and_every_view_sees_it() -> None:
    app, d = build(["mcp"])
    client = app.test_client()
    searched = indexes(app)
    assert "deploy_start" not in search_tools(client, "start a deployment", "handshake", "user3")
    assert searched.builds == 1
    d.add_tool(lambda: 1, name="deploy_start", title="Start a deployment", description="Start a deployment.",
               visible=lambda ident: ident is None or ident.subject != "user4")
    assert search_tools(client, "start a deployment", "handshake", "user3")[0] == "deploy_start"
    assert search_tools(client, "start a deployment", "handshake", "user4", limit=1) != ["deploy_start"]
    assert searched.builds == 2
    for k in range(10):
        search_tools(client, "start a deployment", "handshake", f"user{k}")
    assert searched.builds == 2


def test_a_view_holding_an_older_version_is_ranked_by_that_version_only() -> None:
    """A caller who may see only version 1 of a tool must not find it by what version 2 (hidden
    from them) says: that view is indexed on its own."""
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="reports_make", version="1.0.0", title="Make a report", description="A plain report.")
    d.add_tool(lambda: 2, name="reports_make", version="2.0.0", title="Make a report",
               description="A report with zebra charts.", scopes=["beta"])
    d.add_tool(lambda: 1, name="charts_draw", title="Draw charts", description="Draw zebra charts.")

    @d.identity
    def from_headers(request: Any) -> Identity | None:
        return Identity(subject="x", scopes=tuple(request.headers.get("X-Scopes", "").split()))

    app = Flask("versions")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"])
    d.init_app(app)
    client = app.test_client()

    def found(query: str, scopes: str) -> list[str]:
        answer = client.get("/explorer/tools", query_string={"q": query}, headers={"X-Scopes": scopes})
        return [t["name"] for t in answer.get_json()]

    assert "reports_make" in found("zebra", "beta")
    assert found("zebra", "") == ["charts_draw"]
    assert found("plain report", "")[0] == "reports_make"


def test_the_candidates_ranked_again_are_only_visible_ones() -> None:
    """The best hundred are ranked again (by meaning too): hidden tools take none of those places,
    so a visible tool that 150 hidden ones outrank is still found."""
    tools = [tool_from_object({"name": f"pulls_create_{k}", "title": "Create a pull request",
                               "description": "Open a pull request."}) for k in range(150)]
    tools.append(tool_from_object({"name": "pulls_merge", "title": "Merge", "description": "About a pull request."}))
    index = SearchIndex.build(tools)
    assert "pulls_merge" not in [hit.name for hit in index.search("create a pull request", 50)]
    mask = index.mask(tools[-1:] + tools[:2])
    assert mask is not None
    assert [hit.name for hit in index.search("create a pull request", 50, mask)] == \
        ["pulls_create_0", "pulls_create_1", "pulls_merge"]
    shown = index.mask(tools[-1:])
    assert shown is not None and [hit.name for hit in index.search("create a pull request", 5, shown)] == \
        ["pulls_merge"]
    assert index.search("create a pull request", 5, index.mask([])) == []


@pytest.mark.parametrize("era", ERAS)
def test_ranking_by_meaning_ranks_only_visible_tools_and_keeps_the_best_visible_first(era: str) -> None:
    """With the semantic extra the index's candidates are ranked again by meaning: the mask applies
    before, so the first stays the best tool by the words among those the caller may see."""
    pytest.importorskip("onnxruntime")
    from flask_tooldiscovery.search import semantic

    _, d = build()
    semantic_app = Flask("masks_semantic")
    semantic_app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True,
                               TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC=True)
    d.init_app(semantic_app)
    client, lexical = semantic_app.test_client(), build(["mcp"])[0].test_client()
    query = "open a pull request for my branch"
    search_tools(client, query, era, "alice")  # builds the index; its tools are embedded in the background
    assert semantic.meaning().wait(600) and semantic.meaning().failed is None
    for user in ("bob", "alice", "user1"):
        found = search_tools(client, query, era, user)
        plain = search_tools(lexical, query, era, user)
        assert found[0] == plain[0], user
        assert sorted(found) == sorted(plain), user
    assert "pulls_create" not in search_tools(client, query, era, "bob")
    assert search_tools(client, query, era, "bob", limit=1) == ["pulls_list"]


def test_a_provider_answering_other_tools_builds_the_index_again_once() -> None:
    """A provider's answer is the base set: while it answers the same, every caller's view is
    searched in one index; a different answer (a tool's description changed) is one new build."""
    answer: list[dict[str, Any]] = [
        {"name": "pulls_create", "title": "Create a pull request", "description": "Open a pull request."},
        {"name": "pulls_list", "title": "List pull requests", "description": "List the pull requests."},
        {"name": "pulls_merge", "title": "Merge a pull request", "description": "Merge it.", "scopes": ["admin"]},
    ]
    d = ToolDiscovery()
    d.add_provider(lambda: answer)

    @d.identity
    def from_headers(request: Any) -> Identity | None:
        user = request.headers.get("X-User", "anon")
        return Identity(subject=user, scopes=("admin",) if user == "root" else ())

    app = Flask("provided")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True)
    d.init_app(app)
    client, searched = app.test_client(), indexes(app)
    for user in ("alice", "bob", "root"):
        assert search_tools(client, "open a pull request", "handshake", user)[0] == "pulls_create"
        assert ("pulls_merge" in search_tools(client, "merge a pull request", "handshake", user)) == (user == "root")
    assert searched.builds == 1
    answer[1] = {**answer[1], "description": "List the pull requests, or open one."}
    for user in ("alice", "bob", "root"):
        assert "pulls_list" in search_tools(client, "open a pull request", "handshake", user)
        assert ("pulls_merge" in search_tools(client, "merge a pull request", "handshake", user)) == (user == "root")
    assert searched.builds == 2
