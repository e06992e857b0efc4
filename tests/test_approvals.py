"""Approvals through every dialect: a tool marked requires_approval does not run on the first call;
the sealed state the answer carries, sent back, runs it once. Tampered, foreign, expired and
wrongly signed state is refused, and nothing runs."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import jwt
import pytest
from flask import Flask
from itsdangerous import TimestampSigner

from flask_tooldiscovery import ToolDiscovery

from .conftest import live_server

KEY = "current-key-" + "k" * 32
OLD_KEY = "previous-key-" + "o" * 32
JWT_SECRET = "approvals-jwt-" + "s" * 40
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
DIALECTS = ["opal", "oxp", "tdp", "utcp", "explorer"]


def build(**config: Any) -> tuple[Flask, list[str]]:
    """An app with every dialect, a tool needing approval (``wipe``, which records each run) and
    one that does not (``peek``)."""
    runs: list[str] = []
    d = ToolDiscovery()

    @d.tool(requires_approval=True)
    def wipe(what: str) -> dict:
        """Wipe something.

        Args:
            what: What to wipe.
        """
        runs.append(what)
        return {"wiped": what, "runs": len(runs)}

    @d.tool
    def peek(what: str) -> str:
        """Look at something.

        Args:
            what: What to look at.
        """
        return what

    app = Flask("approvals")
    app.config.update(TESTING=True, SECRET_KEY=KEY, TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_DIALECTS=[*DIALECTS, "mcp"])
    app.config.update(config)
    d.init_app(app)
    return app, runs


_ids = itertools.count(1)


def call_request(dialect: str, tool: str, args: dict[str, Any]) -> tuple[str, Any]:
    """The path and JSON body of a call of ``tool`` (of the ``Approvals`` toolkit) through ``dialect``."""
    return {
        "opal": (f"/opal/tools/{tool}", {"parameters": args}),
        "oxp": ("/oxp/tools/call", {"request": {"tool_id": f"Approvals.{tool}", "input": args}}),
        "tdp": ("/api/v1/tools/execute", {"tool_name": tool, "arguments": args}),
        "utcp": (f"/utcp/tools/{tool}", args),
        "explorer": (f"/explorer/tools/{tool}/call", args),
        "mcp": ("/mcp", {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
                         "params": {"name": tool, "arguments": args}}),
    }[dialect]


def call(client: Any, dialect: str, tool: str, args: dict[str, Any], state: str | None = None,
         headers: dict[str, str] | None = None) -> Any:
    """One call of ``tool`` through ``dialect``, sending ``state`` back in ``X-Tool-Approval``."""
    sent = {**(headers or {}), **({"X-Tool-Approval": state} if state is not None else {})}
    path, body = call_request(dialect, tool, args)
    return client.post(path, json=body, headers=sent)


def ran(dialect: str, response: Any) -> Any:
    """The value a successful call returned, in each dialect's shape."""
    body = response.get_json()
    assert response.status_code == 200, body
    return {"opal": lambda: body, "oxp": lambda: body["result"]["value"], "tdp": lambda: body["result"],
            "utcp": lambda: body, "explorer": lambda: body["structuredContent"]}[dialect]()


def flip(state: str) -> str:
    """``state`` with one character of its signature changed."""
    i = len(state) - 5
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1:]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_first_call_asks_and_the_state_sent_back_runs_it_once(dialect: str) -> None:
    app, runs = build(TOOLDISCOVERY_OXP_TOOLKIT="Approvals")
    client = app.test_client()
    first = call(client, dialect, "wipe", {"what": "disk"})
    body = first.get_json()
    assert first.status_code == 428 and runs == []
    assert body["code"] == "approval_required"
    assert "wipe" in body["prompt"] and '"disk"' in body["prompt"]
    state = body["approval_state"]
    if dialect == "tdp":  # TDP's execute shape, with the refusal's code
        assert body["success"] is False and body["is_async"] is False
    second = call(client, dialect, "wipe", {"what": "disk"}, state)
    assert ran(dialect, second)["wiped"] == "disk" and runs == ["disk"]
    # A tool needing no approval ignores the header; a needless call stays one call.
    assert call(client, dialect, "peek", {"what": "x"}, "whatever").status_code == 200


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tampered_or_foreign_state_is_refused_and_nothing_runs(dialect: str) -> None:
    app, runs = build(TOOLDISCOVERY_OXP_TOOLKIT="Approvals")
    client = app.test_client()
    state = call(client, dialect, "wipe", {"what": "disk"}).get_json()["approval_state"]
    for bad, args in ((flip(state), {"what": "disk"}), (state, {"what": "everything"}), ("x" * 5000, {"what": "disk"})):
        refused = call(client, dialect, "wipe", args, bad)
        body = refused.get_json()
        assert refused.status_code == 400 and body["code"] == "invalid_approval", body
        assert "Traceback" not in refused.get_data(as_text=True)
    assert runs == []


def token(subject: str) -> dict[str, str]:
    claims = {"sub": subject, "aud": "tools", "exp": int(time.time()) + 600}
    return {"Authorization": "Bearer " + jwt.encode(claims, JWT_SECRET, algorithm="HS256")}


@pytest.mark.parametrize("dialect", ["oxp", "tdp", "explorer"])
def test_a_state_is_good_for_its_caller_only(dialect: str) -> None:
    app, runs = build(TOOLDISCOVERY_OXP_TOOLKIT="Approvals", TOOLDISCOVERY_JWT_SECRET=JWT_SECRET,
                      TOOLDISCOVERY_JWT_AUDIENCE="tools")
    client = app.test_client()
    alice, bob = token("alice"), token("bob")
    state = call(client, dialect, "wipe", {"what": "disk"}, headers=alice).get_json()["approval_state"]
    refused = call(client, dialect, "wipe", {"what": "disk"}, state, headers=bob)
    assert refused.status_code == 400 and refused.get_json()["code"] == "invalid_approval" and runs == []
    assert ran(dialect, call(client, dialect, "wipe", {"what": "disk"}, state, headers=alice))["wiped"] == "disk"
    assert runs == ["disk"]


def test_an_expired_state_is_refused(monkeypatch) -> None:
    app, runs = build(TOOLDISCOVERY_APPROVAL_TTL=60)
    client = app.test_client()
    state = call(client, "opal", "wipe", {"what": "disk"}).get_json()["approval_state"]
    now = int(time.time())
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: now + 61)  # a minute later
    refused = call(client, "opal", "wipe", {"what": "disk"}, state)
    assert refused.status_code == 400 and refused.get_json()["code"] == "invalid_approval" and runs == []
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: now + 59)  # still in time
    assert call(client, "opal", "wipe", {"what": "disk"}, state).status_code == 200 and runs == ["disk"]


def test_key_rotation_old_key_in_fallbacks_still_verifies_an_unknown_key_does_not() -> None:
    before, _ = build(SECRET_KEY=OLD_KEY)
    state = call(before.test_client(), "tdp", "wipe", {"what": "disk"}).get_json()["approval_state"]
    rotated, runs = build(SECRET_KEY=KEY, SECRET_KEY_FALLBACKS=[OLD_KEY])
    assert ran("tdp", call(rotated.test_client(), "tdp", "wipe", {"what": "disk"}, state))["wiped"] == "disk"
    assert runs == ["disk"]
    stranger, runs = build(SECRET_KEY=KEY)
    refused = call(stranger.test_client(), "tdp", "wipe", {"what": "disk"}, state)
    assert refused.status_code == 400 and refused.get_json()["code"] == "invalid_approval" and runs == []
    assert refused.get_json()["success"] is False


def test_another_service_sharing_the_key_cannot_mint_state_for_this_one() -> None:
    other, _ = build(TOOLDISCOVERY_SERVER_NAME="billing")
    state = call(other.test_client(), "tdp", "wipe", {"what": "disk"}).get_json()["approval_state"]
    app, runs = build()
    refused = call(app.test_client(), "tdp", "wipe", {"what": "disk"}, state)
    assert refused.status_code == 400 and refused.get_json()["code"] == "invalid_approval" and runs == []


def test_without_a_secret_key_approvals_are_unavailable_and_nothing_runs() -> None:
    app, runs = build(SECRET_KEY=None)
    refused = call(app.test_client(), "explorer", "wipe", {"what": "disk"})
    assert refused.status_code == 503 and "approval" in refused.get_json()["error"] and runs == []


def test_browsers_may_send_the_approval_header() -> None:
    app, _ = build(TOOLDISCOVERY_ALLOWED_ORIGINS=["https://app.example"])
    r = app.test_client().options("/opal/tools/wipe", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-tool-approval"})
    assert "X-Tool-Approval" in r.headers["Access-Control-Allow-Headers"]


# -- MCP ----------------------------------------------------------------------------------------------


def mcp(client: Any, params: dict[str, Any], modern: bool = True, meta: dict[str, Any] = META) -> Any:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": params["name"]} \
        if modern else {}
    params = {"_meta": meta, **params} if modern else params
    return client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params},
                       headers=headers)


def answer(action: str, approve: Any = True) -> dict[str, Any]:
    return {"approval": {"action": action, **({"content": {"approve": approve}} if action == "accept" else {})}}


def test_mcp_2026_asks_with_an_input_required_result_and_runs_on_accept() -> None:
    app, runs = build()
    client = app.test_client()
    call_params = {"name": "wipe", "arguments": {"what": "disk"}}
    first = mcp(client, call_params).get_json()["result"]
    assert first["resultType"] == "input_required" and runs == []
    request = first["inputRequests"]["approval"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form" and "wipe" in request["params"]["message"]
    assert request["params"]["requestedSchema"]["properties"]["approve"]["type"] == "boolean"
    for action, approve in (("decline", None), ("cancel", None), ("accept", False)):
        state = mcp(client, call_params).get_json()["result"]["requestState"]
        declined = mcp(client, {**call_params, "inputResponses": answer(action, approve), "requestState": state})
        result = declined.get_json()["result"]
        assert result["isError"] is True and "not approved" in result["content"][0]["text"] and runs == []
        # A declined approval is spent: sent again as accepted, it is refused as the SDK refuses a bad state.
        replayed = mcp(client, {**call_params, "inputResponses": answer("accept"), "requestState": state})
        assert replayed.status_code == 400
        assert replayed.get_json()["error"]["message"] == "Invalid or expired requestState"
        assert runs == []
    state = first["requestState"]
    accepted = mcp(client, {**call_params, "inputResponses": answer("accept"), "requestState": state}).get_json()
    assert accepted["result"]["resultType"] == "complete" and accepted["result"]["structuredContent"]["wiped"] == "disk"
    assert runs == ["disk"]
    # Without an answer to the approval request, it is asked again.
    again = mcp(client, {**call_params, "requestState": state}).get_json()["result"]
    assert again["resultType"] == "input_required" and runs == ["disk"]


def test_mcp_2026_a_client_that_cannot_elicit_is_never_asked_the_approval() -> None:
    """A client whose ``_meta`` capabilities lack ``elicitation`` gets -32021 naming it (HTTP 400),
    not an input request it cannot answer; nothing runs."""
    app, runs = build()
    for capabilities in ({}, {"sampling": {}, "roots": {}}):
        r = mcp(app.test_client(), {"name": "wipe", "arguments": {"what": "disk"}},
                meta={**META, "io.modelcontextprotocol/clientCapabilities": capabilities})
        assert r.status_code == 400 and "result" not in r.get_json()
        assert r.get_json()["error"]["code"] == -32021
        assert r.get_json()["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert runs == []


def test_mcp_2026_bad_request_state_is_the_sdks_error() -> None:
    app, runs = build()
    client = app.test_client()
    call_params = {"name": "wipe", "arguments": {"what": "disk"}}
    state = mcp(client, call_params).get_json()["result"]["requestState"]
    for params in ({**call_params, "requestState": flip(state)},
                   {"name": "wipe", "arguments": {"what": "else"}, "requestState": state},
                   {**call_params, "requestState": 42}):
        r = mcp(client, {**params, "inputResponses": answer("accept")})
        error = r.get_json()["error"]
        assert r.status_code == 400 and error["code"] == -32602
        assert error["message"] == "Invalid or expired requestState"
        assert error["data"] == {"reason": "invalid_request_state"}
    assert runs == []


def test_mcp_handshake_era_is_told_the_approval_could_not_be_asked() -> None:
    app, runs = build()
    client = app.test_client()
    params = {"name": "wipe", "arguments": {"what": "disk"}}
    result = mcp(client, params, modern=False).get_json()["result"]
    assert result["isError"] is True and "approval" in result["content"][0]["text"] and runs == []
    carried = result["_meta"]["flask-tooldiscovery/approval"]
    assert "wipe" in carried["prompt"]
    # A client that can send the header runs it; a forged one is an invalid-params error naming the approval.
    forged = client.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params},
                         headers={"X-Tool-Approval": flip(carried["approval_state"])}).get_json()
    assert forged["error"]["code"] == -32602 and forged["error"]["data"] == {"reason": "invalid_approval"}
    approved = client.post("/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params},
                           headers={"X-Tool-Approval": carried["approval_state"]}).get_json()
    assert approved["result"]["structuredContent"]["wiped"] == "disk" and runs == ["disk"]


def test_replay_approves_what_it_was_asked_to_include() -> None:
    runs: list[str] = []
    d = ToolDiscovery()

    @d.tool(requires_approval=True, examples=[{"input": {"what": "disk"}, "expected_output": "disk"}])
    def wipe(what: str) -> str:
        """Wipe something.

        Args:
            what: What to wipe.
        """
        runs.append(what)
        return what

    app = Flask("replayed")
    app.config.update(SECRET_KEY=KEY, TOOLDISCOVERY_ALLOW_EXECUTE=True, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    d.init_app(app)
    skipped = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert "needs approval; not replayed" in skipped.output and runs == []
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay", "--include-destructive"])
    assert result.exit_code == 0, result.output
    assert "agrees across the dialects" in result.output and len(runs) == 6  # once per dialect


def test_the_official_client_answers_the_approval_with_its_elicitation_callback() -> None:
    from mcp import Client
    from mcp_types import ElicitResult

    app, runs = build()
    asked: list[str] = []

    def elicit_with(action: str):
        async def elicit(context, params):
            asked.append(params.message)
            return ElicitResult(action=action, content={"approve": True} if action == "accept" else None)
        return elicit

    async def run(base: str, action: str):
        async with Client(f"{base}/mcp", elicitation_callback=elicit_with(action)) as client:
            return await client.call_tool("wipe", {"what": "disk"})

    with live_server(app) as base:
        declined = asyncio.run(run(base, "decline"))
        assert declined.is_error and runs == []
        accepted = asyncio.run(run(base, "accept"))
    assert not accepted.is_error and accepted.structured_content["wiped"] == "disk" and runs == ["disk"]
    assert len(asked) == 2 and "wipe" in asked[0]


def test_the_example_apps_approval_tools_need_the_round_trip(example_app: Flask) -> None:
    client = example_app.test_client()
    order = {"items": ["SKU-1"], "ship_to": {"street": "Main 1", "city": "Berlin"}}
    asked = client.post("/api/v1/tools/execute", json={"tool_name": "create_order", "arguments": order})
    assert asked.status_code == 428 and "create_order" in asked.get_json()["prompt"]
    placed = client.post("/api/v1/tools/execute", json={"tool_name": "create_order", "arguments": order},
                         headers={"X-Tool-Approval": asked.get_json()["approval_state"]})
    assert placed.status_code == 200 and placed.get_json()["result"]["order_id"].startswith("ord-")
    body = {"request": {"tool_id": "ExampleTools.remove_pet", "input": {"pet_id": 1}}}
    asked = client.post("/oxp/tools/call", json=body)
    assert asked.status_code == 428 and client.get("/api/pets/1").status_code == 200  # still there
    removed = client.post("/oxp/tools/call", json=body, headers={"X-Tool-Approval": asked.get_json()["approval_state"]})
    assert removed.get_json()["result"]["success"] is True and client.get("/api/pets/1").status_code == 404
