"""Tool search in MCP (``TOOLDISCOVERY_TOOL_SEARCH``): ``tools/list`` shows ``search_tools`` and
``call_tool`` (and the tools marked ``always_listed``) instead of every tool; ``search_tools`` finds
among what the caller may see, best first, each tool as ``tools/list`` would show it; ``call_tool``
runs the tool it names exactly as a direct call would. Shown with raw JSON-RPC in both eras and
with the official MCP client over HTTP in both eras."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import SettingsError, ToolContext, ToolDiscovery, ToolError
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
    assert json.loads(result["content"][0]["text"]) == {"tools": found}  # the text: the same tools as JSON


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


@pytest.mark.parametrize("era", ERAS)
def test_past_a_size_counts_only_the_tools_a_model_is_listed(era: str) -> None:
    """The size counts the tools a model would be listed: a tool only an interface calls
    (``visibility=["app"]``) does not take a caller past it, whether its client declared MCP Apps
    (and is listed it) or not."""
    client = with_app_only_tool(TOOLDISCOVERY_TOOL_SEARCH=4).test_client()
    every = ["pulls_create", "pulls_list", "runs_cancel", "whoami"]  # 4 for the model, and the app's own
    assert listed(client, era) == every
    assert listed_to_apps_host(client, era) == [*every, "dashboard_refresh"]
    admin = {"X-User": "root", "X-Scopes": "admin"}  # 5 for the model: search
    assert listed(client, era, admin) == ["search_tools", "call_tool", "whoami"]


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


def apps_host(client: Any, era: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers (handshake era: the session id of an ``initialize`` declaring MCP Apps) and the
    stateless-era capabilities of a client that declared MCP Apps, for :func:`tools_call`."""
    from .test_tool_uis import UI_EXTENSION

    declared = {"extensions": UI_EXTENSION}
    if era == "stateless":
        return dict(ALICE), declared
    init = rpc(client, "initialize", {"protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "1"},
                                      "capabilities": declared}, headers=ALICE)
    return {**ALICE, "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": init.headers["Mcp-Session-Id"]}, declared


def listed_to_apps_host(client: Any, era: str) -> list[str]:
    """:func:`listed`, to a client that declared MCP Apps (:func:`apps_host`)."""
    headers, declared = apps_host(client, era)
    if era == "stateless":
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": declared}
        response = client.post("/mcp", headers={**headers, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
                               json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    else:
        response = rpc(client, "tools/list", headers=headers)
    return [tool["name"] for tool in response.get_json()["result"]["tools"]]


@pytest.mark.parametrize("era", ERAS)
def test_an_app_only_tool_marked_always_listed_is_listed_only_to_an_mcp_apps_host(era: str) -> None:
    """``always_listed`` does not list a tool only an interface calls to a client that declared no
    MCP Apps: it could not call it, and its model would be shown it."""
    app = build()
    app.extensions["tooldiscovery"].add_tool(lambda: "shown", name="panel_show", description="Show the panel.",
                                             visibility=["app"], always_listed=True)
    client = app.test_client()
    assert listed(client, era) == ["search_tools", "call_tool", "whoami"]
    assert listed_to_apps_host(client, era) == ["search_tools", "call_tool", "whoami", "panel_show"]


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_only_an_interface_calls_is_never_found_or_run_through_search(era: str) -> None:
    """search_tools answers what the model reads: a ``visibility=["app"]`` tool is not in it, and
    call_tool refuses it as an unknown tool; the app's UI still calls it directly, through a host
    that declared MCP Apps (a client that did not has no app: to it the tool is unknown)."""
    client = with_app_only_tool().test_client()
    found = call(client, "search_tools", {"query": "refresh the pull request dashboard", "limit": 50}, era)
    names = [t["name"] for t in found["result"]["structuredContent"]["tools"]]
    assert "dashboard_refresh" not in names and "pulls_list" in names
    refused = call(client, "call_tool", {"name": "dashboard_refresh", "arguments": {}}, era)
    assert refused["error"]["code"] == -32602 and refused["error"]["message"] == "Unknown tool: dashboard_refresh"
    headers, declared = apps_host(client, era)
    _, via = tools_call(client, era, "dashboard_refresh", {}, via=True, headers=headers, capabilities=declared)
    assert via["error"]["message"] == "Unknown tool: dashboard_refresh"  # the host's model neither
    _, direct = tools_call(client, era, "dashboard_refresh", {}, via=False, headers=headers, capabilities=declared)
    assert direct["result"]["content"][0]["text"] == "refreshed"
    refused = call(client, "dashboard_refresh", {}, era)  # a client that declared no MCP Apps
    assert refused["error"]["code"] == -32602 and refused["error"]["message"] == "Unknown tool: dashboard_refresh"


# -- call_tool carries every param: approvals, questions, tasks, streaming (as a direct call) --------

MODERN = "2026-07-28"
APPROVED = {"approval": {"action": "accept", "content": {"approve": True}}}


def tools_call(client: Any, era: str, name: str, arguments: Any, *, via: bool, headers: dict[str, str] | None = None,
               capabilities: dict[str, Any] | None = None, **params: Any) -> tuple[int, dict[str, Any]]:
    """A ``tools/call`` of ``name`` in ``era``, directly or through ``call_tool`` (``via``), with
    ``params`` (requestState, inputResponses, task, _meta) beside its name and arguments, as a
    client sends them: (HTTP status, JSON-RPC body)."""
    if via:
        name, arguments = "call_tool", {"name": name, "arguments": arguments}
    sent = dict(headers or {})
    if era == "stateless":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": capabilities or {"elicitation": {"form": {}}},
                           **params.get("_meta", {})}
        sent.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})
    response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, **params}}, headers=sent)
    return response.status_code, response.get_json()


def task_app() -> Flask:
    """An app (no caller needed) with a tool that may run as a task and one that must."""
    discovery = ToolDiscovery()
    discovery.add_tool(lambda: "x", name="pulls_list", description="List pull requests.")
    discovery.add_tool(lambda n: n * 2, name="crunch", description="Crunch a number for a while.",
                       long_running=True)
    discovery.add_tool(lambda n: n * 3, name="crunch_required", description="Crunch it, as a task only.",
                       task_support="required")
    app = Flask("tasks")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOL_SEARCH=True)
    discovery.init_app(app)
    return app


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("via", [False, True])
def test_an_approval_is_asked_and_carried_through_call_tool_as_directly(era: str, via: bool) -> None:
    """Stateless era: an ``input_required`` round whose ``requestState`` and accepting answer run the
    call once; handshake era: the approval in ``_meta``, sent back in ``X-Tool-Approval``."""
    from .test_approvals import build as approvals_app

    app, runs = approvals_app(TOOLDISCOVERY_TOOL_SEARCH=True)
    client = app.test_client()
    _, first = tools_call(client, era, "wipe", {"what": "disk"}, via=via)
    if era == "stateless":
        asked = first["result"]
        assert asked["resultType"] == "input_required" and list(asked["inputRequests"]) == ["approval"]
        _, second = tools_call(client, era, "wipe", {"what": "disk"}, via=via, requestState=asked["requestState"],
                               inputResponses=APPROVED)
    else:
        assert first["result"]["isError"] is True
        state = first["result"]["_meta"]["flask-tooldiscovery/approval"]["approval_state"]
        _, second = tools_call(client, era, "wipe", {"what": "disk"}, via=via, headers={"X-Tool-Approval": state})
    assert second["result"]["structuredContent"] == {"wiped": "disk", "runs": 1} and runs == ["disk"]


@pytest.mark.parametrize("via", [False, True])
def test_a_tool_that_asks_is_answered_round_by_round_through_call_tool(via: bool) -> None:
    """The stateless era's rounds (tests/test_mcp_asking.py): name, then colour, then the model's
    motto, each answer sent with the round's ``requestState``, then the result."""
    from .apps.asking_app import create_app
    from .test_mcp_asking import EVERYTHING, SAMPLED, accept

    client = create_app(TOOLDISCOVERY_TOOL_SEARCH=True).test_client()
    answers = [{"name": accept(name="Ada")}, {"color": accept(color="red")}, {"motto": SAMPLED}]
    _, body = tools_call(client, "stateless", "plan_trip", {"days": 2}, via=via, capabilities=EVERYTHING)
    asked = []
    for answer in answers:
        result = body["result"]
        assert result["resultType"] == "input_required", body
        asked.append(list(result["inputRequests"]))
        _, body = tools_call(client, "stateless", "plan_trip", {"days": 2}, via=via, capabilities=EVERYTHING,
                             requestState=result["requestState"], inputResponses=answer)
    assert asked == [["name"], ["color"], ["motto"]]
    assert body["result"]["content"][0]["text"] == "Ada: 2 days, a red suitcase, 'Go far'"


def task_result(client: Any, era: str, created: dict[str, Any]) -> dict[str, Any]:
    """The result of the task ``created`` answered, once it ended (polled with tasks/get)."""
    from .test_mcp_tasks import ended, legacy, until

    if era == "stateless":
        done = until(client, created["taskId"], ended)
        assert done["status"] == "completed", done
        return dict(done["result"])
    task_id = created["task"]["taskId"]
    assert until(client, task_id, ended, era="2025-11-25")["status"] == "completed"
    return dict(legacy(client, "tasks/result", {"taskId": task_id})["result"])


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("via", [False, True])
def test_a_call_becomes_a_task_through_call_tool_as_directly(era: str, via: bool) -> None:
    """Handshake era: ``params.task`` asks for it (and a tool whose task support is ``required`` is
    reached only so); stateless era: the tasks extension declared. The task's result is the tool's."""
    client = task_app().test_client()
    extension = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
    for name, expected in (("crunch", "14"), ("crunch_required", "21")):
        asked = {} if era == "stateless" else {"task": {"ttl": 60_000}}
        status, body = tools_call(client, era, name, {"n": 7}, via=via, capabilities=extension, **asked)
        created = body["result"]
        assert status == 200 and ("taskId" in created if era == "stateless" else "taskId" in created["task"]), body
        assert task_result(client, era, created)["content"][0]["text"] == expected
    if era == "handshake":  # a required one, not asked as a task: refused alike
        _, refused = tools_call(client, era, "crunch_required", {"n": 7}, via=via)
        assert refused["error"]["code"] == -32601 and "params.task" in refused["error"]["message"]


def test_tools_list_says_call_tool_may_be_a_task_in_the_handshake_era() -> None:
    """A conforming 2025-11-25 client asks for a task only where ``execution.taskSupport`` allows."""
    client = task_app().test_client()
    shown = {t["name"]: t for t in rpc(client, "tools/list", headers=ALICE).get_json()["result"]["tools"]}
    assert shown["call_tool"]["execution"] == {"taskSupport": "optional"} and "execution" not in shown["search_tools"]
    stateless = {t["name"]: t for t in modern(client, "tools/list", None, ALICE).get_json()["result"]["tools"]}
    assert "execution" not in stateless["call_tool"]


@pytest.mark.slow
def test_the_official_client_answers_questions_through_call_tool_with_its_elicitation_callback() -> None:
    """The official MCP client in the stateless era, whose ``call_tool`` answers ``input_required``
    rounds with its elicitation callback: the approval, then the tool's own question."""
    from mcp import Client
    from mcp_types import ElicitResult

    from .apps.asking_app import create_app

    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params.message)
        fields = params.requested_schema["properties"]
        return ElicitResult(action="accept", content={"approve": True} if "approve" in fields else {"iban": "DE1"})

    async def run(url: str) -> Any:
        async with Client(url, mode=MODERN, elicitation_callback=elicit) as client:
            return await client.call_tool("call_tool", {"name": "transfer", "arguments": {"amount": 5}})

    with live_server(create_app(TOOLDISCOVERY_TOOL_SEARCH=True)) as base:
        ran = asyncio.run(run(f"{base}/mcp"))
    assert not ran.is_error and ran.content[0].text == "Moved 5 to DE1 (run 1)."
    assert len(asked) == 2 and "transfer" in asked[0] and asked[1] == "Which account?"


@pytest.mark.parametrize("era", ERAS)
def test_limits_count_calls_through_call_tool_and_direct_calls_alike(era: str) -> None:
    """A tool limited to two calls a minute: a direct call and one through call_tool spend the
    same budget, and the third (either way) is the rate limit's result with its retry time."""
    app = build()
    app.extensions["tooldiscovery"].add_tool(lambda: "ok", name="limited", description="Limited.",
                                             rate_limit_per_minute=2)
    client = app.test_client()
    results = [tools_call(client, era, "limited", {}, via=via, headers=ALICE)[1]["result"]
               for via in (False, True, False, True)]
    assert [r["isError"] for r in results] == [False, False, True, True]
    assert all(r["_meta"]["retryAfterMs"] > 0 for r in results[2:])


def events(response: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE answer."""
    assert response.mimetype == "text/event-stream", response.get_data(as_text=True)
    return [json.loads(line[len("data: "):]) for line in response.get_data(as_text=True).splitlines()
            if line.startswith("data: ")]


@pytest.mark.parametrize("era", ERAS)
def test_progress_is_streamed_through_call_tool_as_directly(era: str) -> None:
    """A call with a progress token: its progress notifications arrive on the call's SSE stream,
    then its result, the same through call_tool as directly."""
    app = build()

    @app.extensions["tooldiscovery"].tool
    async def progress(ctx: ToolContext) -> str:
        """Reports its progress."""
        await ctx.report_progress(1, 2)
        return "done"

    client = app.test_client()
    streams = []
    for via in (False, True):
        name, arguments = ("call_tool", {"name": "progress", "arguments": {}}) if via else ("progress", {})
        meta: dict[str, Any] = {"progressToken": "t1"}
        headers = {**ALICE, "Accept": "application/json, text/event-stream"}
        if era == "stateless":
            meta.update({"io.modelcontextprotocol/protocolVersion": MODERN,
                         "io.modelcontextprotocol/clientCapabilities": {}})
            headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})
        streams.append(events(client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta}})))
    direct, via_call_tool = streams
    assert direct == via_call_tool
    assert direct[0]["method"] == "notifications/progress" and direct[0]["params"]["progressToken"] == "t1"
    assert direct[-1]["result"]["content"][0]["text"] == "done"


@pytest.mark.parametrize("era", ERAS)
def test_search_and_call_tool_follow_a_provider_whose_answer_changes(era: str) -> None:
    """A provider's answer gains a tool, loses one and changes one (a new dict, then in place)
    after the first search: search_tools, the explorer's ``?q=`` and call_tool follow each change."""
    answer: list[dict[str, Any]] = [
        {"name": "alpha_make", "description": "Make an alpha widget.", "inputSchema": {"type": "object"}}]
    discovery = ToolDiscovery(tools=lambda: answer)
    app = Flask("changing")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp", "explorer"], TOOLDISCOVERY_TOOL_SEARCH=True)
    discovery.init_app(app)
    client = app.test_client()

    def found(query: str) -> list[str]:
        searched = call(client, "search_tools", {"query": query}, era)["result"]["structuredContent"]["tools"]
        names = [t["name"] for t in searched]
        assert names == [t["name"] for t in client.get("/explorer/tools", query_string={"q": query}).get_json()]
        return names

    def runs(name: str) -> bool:
        return "result" in call(client, "call_tool", {"name": name, "arguments": {}}, era)

    assert found("alpha widget") == ["alpha_make"] and found("beta gizmo") == [] and not runs("beta_make")
    answer.append({"name": "beta_make", "description": "Make a beta gizmo.", "inputSchema": {"type": "object"}})
    assert found("beta gizmo") == ["beta_make"] and runs("beta_make")
    answer[:] = [{"name": "alpha_make", "description": "Make an alpha zebra.", "inputSchema": {"type": "object"}}]
    assert found("beta gizmo") == [] and not runs("beta_make")
    assert found("zebra") == ["alpha_make"] and found("widget") == []
    answer[0]["description"] = "Make an alpha yak."  # the same dict, changed in place
    assert found("yak") == ["alpha_make"] and found("zebra") == [] and runs("alpha_make")


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("own", ["search_tools", "call_tool"])
def test_an_apps_own_tool_named_like_a_search_tool_is_run_through_call_tool(era: str, own: str) -> None:
    """Not listed (the search tool of that name is), and a direct call of the name is the search
    tool's; call_tool with the name runs the app's own."""
    app = build()
    app.extensions["tooldiscovery"].add_tool(lambda query="": f"the app's own {query}", name=own,
                                             description="The app's own tool.")
    client = app.test_client()
    assert listed(client, era) == ["search_tools", "call_tool", "whoami"]
    ran = call(client, "call_tool", {"name": own, "arguments": {"query": "pull"}}, era)["result"]
    assert ran["isError"] is False and ran["content"][0]["text"] == "the app's own pull"
    searched = call(client, "search_tools", {"query": "pull request"}, era)["result"]
    assert searched["structuredContent"]["tools"][0]["name"].startswith("pulls_")
    if own == "call_tool":  # a direct call of call_tool is still the search's
        via = call(client, "call_tool", {"name": "runs_cancel", "arguments": {"run_id": 7}}, era)["result"]
        assert via["content"][0]["text"] == "cancelled 7"


@pytest.mark.parametrize("era", ERAS)
def test_an_integral_number_is_a_limit_and_true_or_a_string_is_not(era: str) -> None:
    client = build().test_client()
    five = call(client, "search_tools", {"query": "pull", "limit": 5.0}, era)["result"]
    assert five["isError"] is False
    assert five == call(client, "search_tools", {"query": "pull", "limit": 5}, era)["result"]
    one = call(client, "search_tools", {"query": "pull", "limit": 1.0}, era)["result"]
    assert len(one["structuredContent"]["tools"]) == 1
    for limit in (True, "5", 2.5):
        refused = call(client, "search_tools", {"query": "pull", "limit": limit}, era)["result"]
        assert refused["isError"] is True and "from 1 to 50" in refused["content"][0]["text"], limit


@pytest.mark.parametrize("search", [True, False])
def test_a_client_cannot_make_the_name_header_disagree_with_the_tool_run(search: bool) -> None:
    """The stateless era's ``Mcp-Name`` names ``call_tool`` for a call through it; a client that
    sends the key that remembers it in a direct call is not believed: a gateway that routes or
    authorizes by the header sees the tool that runs."""
    client = build(TOOLDISCOVERY_TOOL_SEARCH=search).test_client()
    params = {"name": "runs_cancel", "arguments": {"run_id": 1}, "_tooldiscovery_called_as": "pulls_list"}
    refused = modern(client, "tools/call", params, {**ALICE, "Mcp-Name": "pulls_list"})
    assert refused.status_code == 400 and refused.get_json()["error"]["code"] == -32020


def test_the_name_a_call_came_through_rides_on_the_request_not_in_its_params() -> None:
    """A ``call_tool`` request is read as the tool's own call with exactly the params the client sent
    for it (nothing added to what a client controls), and the request the endpoint built says it
    came through ``call_tool`` (``McpRequest.called_as``: the stateless era's ``Mcp-Name`` check and
    the search tools read it); a request a client sends says no such thing, whatever its params hold."""
    from flask_tooldiscovery.dialects.mcp import tool_search
    from flask_tooldiscovery.dialects.mcp.request import McpRequest

    app = build()
    pipe = app.extensions["tooldiscovery.pipelines"]["mcp"]
    meta = {"progressToken": 4}
    with app.test_request_context("/mcp", method="POST", headers=ALICE):
        sent = McpRequest.of("tools/call", {"name": "call_tool", "task": {"ttl": 10}, "_meta": meta,
                                            "arguments": {"name": "runs_cancel", "arguments": {"run_id": 2}}})
        read = tool_search.rewrite(pipe, sent)
        assert read.params == {"task": {"ttl": 10}, "_meta": meta, "name": "runs_cancel", "arguments": {"run_id": 2}}
        assert read.called_as == "call_tool" and read.meta == meta and read.revision == sent.revision
        assert sent.called_as is None and sent.params["name"] == "call_tool"  # what was sent stays as it was
        spoofed = McpRequest.of("tools/call", {"name": "runs_cancel", "arguments": {"run_id": 2},
                                               "_tooldiscovery_called_as": "call_tool", "called_as": "call_tool"})
        assert tool_search.rewrite(pipe, spoofed) is spoofed and spoofed.called_as is None


@pytest.mark.parametrize("era", ERAS)
def test_a_host_of_mcp_apps_still_gets_the_tools_only_its_apps_call(era: str) -> None:
    """With search on, a client that declared MCP Apps is listed the ``visibility=["app"]`` tools
    too (its host hides them from the model, and lets an app call only what it was listed); a
    client that did not is not (it has no app to call them)."""
    from .test_tool_uis import UI_EXTENSION

    client = with_app_only_tool().test_client()

    def names(declared: bool) -> list[str]:
        if era == "stateless":
            capabilities = {"extensions": UI_EXTENSION} if declared else {}
            meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": capabilities}
            response = client.post("/mcp", headers={**ALICE, "MCP-Protocol-Version": MODERN,
                                                    "Mcp-Method": "tools/list"},
                                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
        else:
            init = rpc(client, "initialize", {
                "protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "1"},
                "capabilities": {"extensions": UI_EXTENSION} if declared else {}}, headers=ALICE)
            response = rpc(client, "tools/list", headers={**ALICE, "MCP-Protocol-Version": "2025-11-25",
                                                          "Mcp-Session-Id": init.headers["Mcp-Session-Id"]})
        return [tool["name"] for tool in response.get_json()["result"]["tools"]]

    assert names(True) == ["search_tools", "call_tool", "whoami", "dashboard_refresh"]
    assert names(False) == ["search_tools", "call_tool", "whoami"]
    assert names(True) == ["search_tools", "call_tool", "whoami", "dashboard_refresh"]  # each its own answer
