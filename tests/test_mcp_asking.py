"""A tool asks its MCP 2026-07-28 caller (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``):
``InputRequiredResult`` rounds whose ``requestState`` is sealed, bound to the caller and good
once; only what the client's ``_meta`` capabilities declare is ever asked (else -32021 naming
it); ``Mcp-Param-*`` headers checked against ``x-mcp-header`` parameters (SEP-2243)."""

from __future__ import annotations

import base64
from typing import Any

from flask.testing import FlaskClient

from .apps.asking_app import create_app

MODERN = "2026-07-28"
EVERYTHING = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}


def call(client: FlaskClient, name: str, arguments: dict[str, Any] | None = None, *,
         capabilities: dict[str, Any] | None = None, caller: str | None = None,
         headers: dict[str, str] | None = None, **params: Any) -> tuple[int, dict[str, Any]]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": EVERYTHING if capabilities is None else capabilities}
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name, **(headers or {})}
    if caller:
        sent["Authorization"] = f"Bearer {caller}"
    r = client.post("/mcp", headers=sent, json={"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": name, "arguments": arguments or {}, "_meta": meta, **params}})
    return r.status_code, r.get_json()


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Go far"}, "model": "m", "stopReason": "endTurn"}


def test_three_rounds_each_state_sealed_and_good_once() -> None:
    c = create_app().test_client()
    _, first = call(c, "plan_trip", {"days": 2})
    r1 = first["result"]
    assert r1["resultType"] == "input_required" and list(r1["inputRequests"]) == ["name"]
    assert r1["inputRequests"]["name"] == {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Who travels?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
    _, second = call(c, "plan_trip", {"days": 2}, inputResponses={"name": accept(name="Ada")},
                     requestState=r1["requestState"])
    r2 = second["result"]
    assert list(r2["inputRequests"]) == ["color"] and r2["requestState"] != r1["requestState"]
    assert r2["inputRequests"]["color"]["params"]["requestedSchema"]["properties"]["color"]["default"] == "blue"
    _, third = call(c, "plan_trip", {"days": 2}, inputResponses={"color": accept(color="red")},
                    requestState=r2["requestState"])
    r3 = third["result"]
    assert r3["inputRequests"] == {"motto": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "A motto for a 2-day trip"}}],
        "maxTokens": 20}}}
    _, done = call(c, "plan_trip", {"days": 2}, inputResponses={"motto": SAMPLED}, requestState=r3["requestState"])
    assert done["result"]["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "Ada: 2 days, a red suitcase, 'Go far'"
    # Spent: the same state again, on any worker, is the SDK's invalid-state error.
    status, again = call(c, "plan_trip", {"days": 2}, inputResponses={"motto": SAMPLED},
                         requestState=r3["requestState"])
    assert status == 400 and again["error"]["message"] == "Invalid or expired requestState"


def test_a_state_is_bound_to_its_call_and_caller_and_untamperable() -> None:
    c = create_app(callers=True).test_client()
    _, first = call(c, "plan_trip", {"days": 2}, caller="ada")
    state = first["result"]["requestState"]
    answers = {"name": accept(name="Ada")}
    tampered = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
    for kwargs in ({"caller": "bob"}, {"caller": "ada", "arguments": {"days": 9}},
                   {"caller": "ada", "state": tampered}):
        status, body = call(c, "plan_trip", kwargs.get("arguments", {"days": 2}), caller=kwargs["caller"],
                            inputResponses=answers, requestState=kwargs.get("state", state))
        assert status == 400 and body["error"]["code"] == -32602, kwargs
    _, ok = call(c, "plan_trip", {"days": 2}, caller="ada", inputResponses=answers, requestState=state)
    assert list(ok["result"]["inputRequests"]) == ["color"]  # still good: the refusals did not spend it


def test_several_requests_in_one_round_reach_the_tool_typed() -> None:
    c = create_app().test_client()
    _, first = call(c, "survey")
    requests_ = first["result"]["inputRequests"]
    assert {k: v["method"] for k, v in requests_.items()} == {
        "name": "elicitation/create", "motto": "sampling/createMessage", "roots": "roots/list"}
    assert requests_["roots"]["params"] == {}
    _, done = call(c, "survey", inputResponses={
        "name": accept(name="Ada"), "motto": SAMPLED, "roots": {"roots": [{"uri": "file:///srv", "name": "srv"}]},
        "unrelated": accept(x=1)}, requestState=first["result"]["requestState"])
    assert done["result"]["content"][0]["text"] == "Ada|Go far|file:///srv"


def test_only_declared_capabilities_are_asked() -> None:
    c = create_app().test_client()
    _, body = call(c, "abilities", capabilities={"sampling": {}})
    assert body["result"]["structuredContent"] == {"result": ["sampling"]}
    status, body = call(c, "survey", capabilities={"elicitation": {}, "roots": {}})
    assert status == 400 and body["error"]["code"] == -32021
    assert body["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    # A tool that catches CannotAsk carries on without; where it can ask, its fallback does not swallow the round.
    _, body = call(c, "motto_or_default", capabilities={})
    assert body["result"]["resultType"] == "complete" and "could not be asked" in body["result"]["content"][0]["text"]
    _, body = call(c, "motto_or_default", capabilities={"sampling": {}})
    assert body["result"]["resultType"] == "input_required"


def test_elicitation_declared_for_url_mode_only_is_not_asked_a_form() -> None:
    """The same rule as a handshake-era session's (tests/test_mcp_declared_capabilities.py): a
    2025-11-25-style ``elicitation`` naming only ``url`` cannot answer the form this server asks."""
    c = create_app().test_client()
    for declared, able in (({"url": {}}, ["sampling"]), ({"form": {}}, ["elicitation", "sampling"]),
                           ({"form": {}, "url": {}}, ["elicitation", "sampling"]), ({}, ["elicitation", "sampling"])):
        _, body = call(c, "abilities", capabilities={"elicitation": declared, "sampling": {}})
        assert body["result"]["structuredContent"] == {"result": able}, declared
    status, body = call(c, "plan_trip", {"days": 2}, capabilities={"elicitation": {"url": {}}})
    assert status == 400 and body["error"]["code"] == -32021  # never an elicitation/create it cannot answer
    assert body["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_malformed_answers_are_invalid_params_and_a_missing_one_is_asked_again() -> None:
    c = create_app().test_client()
    for responses in ({"name": 12345}, {"name": accept(age=3)}, {"name": {"action": "shrug"}}):
        status, body = call(c, "plan_trip", inputResponses=responses)
        assert status == 400 and body["error"]["code"] == -32602, responses
    status, body = call(c, "plan_trip", inputResponses="nope")
    assert status == 400 and body["error"]["code"] == -32602
    _, body = call(c, "plan_trip", inputResponses={"other": accept(name="x")})
    assert list(body["result"]["inputRequests"]) == ["name"]
    _, body = call(c, "survey", inputResponses={"name": accept(name="A"), "motto": {"role": "robot"},
                                                "roots": {"roots": []}})
    assert body["error"]["code"] == -32602


def test_an_approved_call_that_asks_is_approved_once() -> None:
    """The approval is the first round's question; the round after the approved run carries a fresh
    approval of the same call, so the person is not asked again, and it is good once."""
    c = create_app().test_client()
    _, first = call(c, "transfer", {"amount": 5})
    assert list(first["result"]["inputRequests"]) == ["approval"]
    _, second = call(c, "transfer", {"amount": 5}, requestState=first["result"]["requestState"],
                     inputResponses={"approval": accept(approve=True)})
    assert list(second["result"]["inputRequests"]) == ["account"]
    _, done = call(c, "transfer", {"amount": 5}, requestState=second["result"]["requestState"],
                   inputResponses={"account": accept(iban="DE01")})
    assert done["result"]["content"][0]["text"] == "Moved 5 to DE01 (run 1)."
    status, again = call(c, "transfer", {"amount": 5}, requestState=second["result"]["requestState"],
                         inputResponses={"account": accept(iban="DE01")})
    assert status == 400 and again["error"]["message"] == "Invalid or expired requestState"


def test_without_a_secret_key_rounds_carry_no_state() -> None:
    c = create_app(secret="").test_client()
    _, first = call(c, "plan_trip")
    assert "requestState" not in first["result"] and list(first["result"]["inputRequests"]) == ["name"]
    status, body = call(c, "plan_trip", requestState="forged")
    assert status == 400 and body["error"]["message"] == "Invalid or expired requestState"


# -- x-mcp-header -------------------------------------------------------------------------------------


def header_app() -> FlaskClient:
    app = create_app()
    discovery = app.extensions["tooldiscovery"]

    @discovery.tool(input_schema={"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}, "size": {"type": "integer", "x-mcp-header": "Size"}}})
    def deploy(region: str, size: int = 1) -> str:
        """Deploy somewhere."""
        return f"{region}:{size}"

    return app.test_client()


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def test_parameter_headers_must_agree_with_the_body() -> None:
    c = header_app()
    for headers, arguments in (({"Mcp-Param-Region": "eu"}, {"region": "eu"}),
                               ({"Mcp-Param-Region": b64("Zürich")}, {"region": "Zürich"}),
                               ({"Mcp-Param-Region": " eu ", "Mcp-Param-Size": "3"}, {"region": "eu", "size": 3}),
                               ({"Mcp-Param-Region": "=?base64?ZXU="}, {"region": "=?base64?ZXU="})):
        status, body = call(c, "deploy", arguments, headers=headers)
        assert status == 200 and "result" in body, (headers, body)
    for headers, arguments in (({}, {"region": "eu"}), ({"Mcp-Param-Region": "us"}, {"region": "eu"}),
                               ({"Mcp-Param-Region": "=?base64?ZXU?="}, {"region": "eu"}),  # bad padding
                               ({"Mcp-Param-Region": "=?base64?Z!!U=?="}, {"region": "eu"}),
                               ({"Mcp-Param-Region": "eu", "Mcp-Param-Size": "4"}, {"region": "eu", "size": 3})):
        status, body = call(c, "deploy", arguments, headers=headers)
        assert status == 400 and body["error"]["code"] == -32020, headers
    # The handshake era has no parameter headers.
    legacy = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "deploy", "arguments": {"region": "eu"}}})
    assert legacy.get_json()["result"]["content"][0]["text"] == "eu:1"


def test_handshake_era_a_context_tool_that_says_nothing_is_one_json_body() -> None:
    """Streamed only once the tool logs or asks: ``abilities`` does neither. What it can ask follows
    the call's protocol version (elicitation from 2025-06-18, sampling and roots on streams)."""
    c = create_app().test_client()
    for version, can in (("2025-11-25", ["elicitation", "sampling", "roots"]), ("2025-03-26", ["sampling", "roots"])):
        r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                 "params": {"name": "abilities", "arguments": {}}},
                   headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version})
        assert r.mimetype == "application/json", version
        assert r.get_json()["result"]["structuredContent"] == {"result": can}, version
    # Not accepting a stream: nothing can be asked.
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "abilities", "arguments": {}}},
               headers={"Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"})
    assert r.get_json()["result"]["structuredContent"] == {"result": []}
