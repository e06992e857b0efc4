"""Whether a call needs a person's approval is decided once per call, by the one approvals service,
whichever way the call is asked and answered: an MCP ``tools/call`` in either era (plain JSON or
accepting a stream, asked by an ``InputRequiredResult``, approved, asking its caller in rounds
after its approval) and an Opal call of a long-running tool with an ``async_callback``. The rule a
user configures (``requires_approval``, ``TOOLDISCOVERY_APPROVE_DESTRUCTIVE``) is applied by
``calls.approvals.needs_approval``; a spy on it counts how often one call applies it."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery
from flask_tooldiscovery.calls import approvals

from .conftest import live_server

STATELESS = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
STREAMING = "application/json, text/event-stream"


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the tools whose approval rule was applied, one entry each time (wherever the
    package's modules call the rule from)."""
    seen: list[str] = []
    rule = approvals.needs_approval
    build()  # every module a call goes through is loaded

    def counted(tool: Any, *, destructive: bool) -> bool:
        seen.append(tool.name)
        return rule(tool, destructive=destructive)

    for name, module in list(sys.modules.items()):
        if name.startswith("flask_tooldiscovery") and getattr(module, "needs_approval", None) is rule:
            monkeypatch.setattr(module, "needs_approval", counted)
    yield seen


def build() -> tuple[Flask, list[str]]:
    runs: list[str] = []
    d = ToolDiscovery()

    @d.tool(requires_approval=True)
    def wipe(what: str) -> dict[str, Any]:
        """Wipe something."""
        runs.append(what)
        return {"wiped": what}

    @d.tool(requires_approval=True)
    def wipe_asking(what: str, ctx: ToolContext = None) -> str:
        """Wipe something, once the person says how."""
        answer = ctx.elicit("How?", {"type": "object", "properties": {"how": {"type": "string"}}})
        runs.append(f"{what}:{answer.content}")
        return "done"

    @d.tool(requires_approval=True, long_running=True)
    def wipe_later(what: str) -> str:
        """Wipe something, slowly."""
        runs.append(what)
        return "done"

    @d.tool
    def peek(what: str) -> str:
        """Look at something."""
        return what

    app = Flask("approvals_once")
    app.config.update(TESTING=True, SECRET_KEY="once-" + "k" * 40, TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_DIALECTS=["mcp", "opal"])
    d.init_app(app)
    return app, runs


def mcp(client: Any, params: dict[str, Any], *, stateless: bool = True, accept: str = "application/json",
        headers: dict[str, str] | None = None) -> Any:
    sent = {"Accept": accept, **(headers or {})}
    if stateless:
        sent.update({"MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/call", "Mcp-Name": params["name"]})
        params = {"_meta": META, **params}
    response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params},
                           headers=sent)
    assert response.mimetype == "application/json", response.get_data(as_text=True)
    return response.get_json()


@pytest.mark.parametrize("accept", ["application/json", STREAMING])
def test_a_stateless_era_call_decides_its_approval_once_per_request(decisions: list[str], accept: str) -> None:
    app, runs = build()
    client = app.test_client()
    asked = mcp(client, {"name": "wipe", "arguments": {"what": "disk"}}, accept=accept)["result"]
    assert asked["resultType"] == "input_required" and decisions == ["wipe"]
    approved = mcp(client, {"name": "wipe", "arguments": {"what": "disk"}, "requestState": asked["requestState"],
                            "inputResponses": {"approval": {"action": "accept", "content": {"approve": True}}}},
                   accept=accept)["result"]
    assert approved["structuredContent"] == {"wiped": "disk"} and runs == ["disk"]
    assert decisions == ["wipe", "wipe"]  # one decision for each of the two requests
    mcp(client, {"name": "peek", "arguments": {"what": "disk"}}, accept=accept)
    assert decisions == ["wipe", "wipe", "peek"]


def test_an_approved_call_that_asks_its_caller_decides_once_per_round(decisions: list[str]) -> None:
    """Approved, the tool runs and asks its caller: the next round carries a fresh approval of the
    same call, sealed again by the decision the request made."""
    app, runs = build()
    client = app.test_client()
    call = {"name": "wipe_asking", "arguments": {"what": "disk"}}
    asked = mcp(client, call)["result"]
    assert list(asked["inputRequests"]) == ["approval"] and decisions == ["wipe_asking"]
    decisions.clear()
    approval = {"approval": {"action": "accept", "content": {"approve": True}}}
    round_two = mcp(client, {**call, "requestState": asked["requestState"], "inputResponses": approval})["result"]
    assert round_two["resultType"] == "input_required" and "approval" not in round_two["inputRequests"]
    assert decisions == ["wipe_asking"] and runs == []
    decisions.clear()
    key = next(iter(round_two["inputRequests"]))
    done = mcp(client, {**call, "requestState": round_two["requestState"],
                        "inputResponses": {key: {"action": "accept", "content": {"how": "gently"}}}})["result"]
    assert done["isError"] is False and runs == ["disk:{'how': 'gently'}"]
    assert decisions == ["wipe_asking"]


@pytest.mark.parametrize("accept", ["application/json", STREAMING])
def test_a_handshake_era_call_decides_its_approval_once(decisions: list[str], accept: str) -> None:
    """Not asked on a stream (this client's session says it declared no elicitation), the call
    answers the not-approved result with its sealed state; sent back in ``X-Tool-Approval``, it runs."""
    app, runs = build()
    client = app.test_client()
    session = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    headers = {"Mcp-Session-Id": session.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    refused = mcp(client, {"name": "wipe", "arguments": {"what": "disk"}}, stateless=False, accept=accept,
                  headers=headers)["result"]
    assert refused["isError"] is True and decisions == ["wipe"]
    state = refused["_meta"]["flask-tooldiscovery/approval"]["approval_state"]
    approved = mcp(client, {"name": "wipe", "arguments": {"what": "disk"}}, stateless=False, accept=accept,
                   headers={**headers, "X-Tool-Approval": state})["result"]
    assert approved["isError"] is False and runs == ["disk"] and decisions == ["wipe", "wipe"]


def test_an_opal_async_call_decides_its_approval_once(decisions: list[str]) -> None:
    """A long-running tool that needs approval is not accepted to run later: its approval is asked
    on the call itself, by the same decision."""
    app, runs = build()
    response = app.test_client().post("/opal/tools/wipe_later", json={
        "parameters": {"what": "disk"}, "async_callback": {"url": "https://hooks.example.com/done"}})
    assert response.status_code == 428 and runs == []
    assert decisions == ["wipe_later"]


def test_the_official_client_approving_a_call_makes_one_decision_a_request(decisions: list[str]) -> None:
    """The official client answers the approval with its elicitation callback: each ``tools/call``
    request it sends for the one call (the request, then the same call with the answer) makes one
    decision."""
    from mcp import Client
    from mcp_types import ElicitResult

    app, runs = build()
    calls: list[str] = []
    inner = app.wsgi_app

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        """Count the ``tools/call`` requests the server receives."""
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        message = json.loads(body) if body else None
        if isinstance(message, dict) and message.get("method") == "tools/call":
            calls.append(str(message["params"]["name"]))
        return inner(environ, start_response)

    app.wsgi_app = counting  # type: ignore[method-assign]

    async def elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": True})

    async def run(base: str) -> Any:
        async with Client(f"{base}/mcp", elicitation_callback=elicit) as client:
            return await client.call_tool("wipe", {"what": "disk"})

    with live_server(app) as base:
        result = asyncio.run(run(base))
    assert not result.is_error and runs == ["disk"]
    assert calls == ["wipe", "wipe"] and decisions == calls
