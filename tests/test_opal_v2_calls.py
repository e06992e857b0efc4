"""Opal v2 calls beside the official SDK on the same tools: the v2 envelope (success and error),
rollbacks (listed, run once per operation_id), interactions, the per-function fields and
``auth_credentials``; then what other dialects make of an envelope."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from flask_tooldiscovery import Envelope, RegistrationError, ToolContext, ToolDiscovery
from flask_tooldiscovery.dialects.oxp import DIALECT as OXP

from .opal_sdk import by_name, sdk, sdk_app

V2 = "application/vnd.optimizely.opal.tools.discovery+json"
ANSWER_V2 = "application/vnd.optimizely.opal.tools+json"
OPERATION = {"operation_id": "op-1", "status": "completed",
             "rollback": {"tool_name": "undo_order", "parameters": {"order_id": "o-1"}}}
CREDENTIALS = [{"provider": "OptiID", "scope_bundle": None, "status": "delivered",
                "credentials": {"access_token": "at-1"}}, "not an object", {"provider": "x", "status": "missing"}]


class OrderParams(BaseModel):
    item: str = Field(description="What to order")
    note: str | None = Field(None, description="A note for the shop", json_schema_extra={"in_context": True})
    owner: str | None = Field(None, description="Whose files", json_schema_extra={"principal_scope": "personal_files"})


class UndoParams(BaseModel):
    order_id: str = Field(description="The order")


class Empty(BaseModel):
    pass


class FormParams(BaseModel):
    title: str = Field(description="The task's title")


def sdk_tools(runs: list[str]) -> None:
    @sdk.tool("place_order", "Place an order.", sensitive="Check the amount", wait=True, skippable_interaction=True)
    async def place_order(params: OrderParams) -> sdk.ComposableToolResponse:
        return sdk.ComposableToolResponse(message="Placed", content={"order_id": "o-1"},
                                          operation=sdk.OperationResult(**OPERATION))

    @sdk.rollback("undo_order")
    async def undo_order(params: UndoParams, operation_id: str | None = None) -> dict:
        runs.append(params.order_id)
        return {"undone": params.order_id, "operation_id": operation_id}

    @sdk.tool("refuse", "Refuse to place it.")
    async def refuse(params: Empty) -> sdk.ComposableToolResponse:
        return sdk.resource_conflict("Already placed")

    @sdk.tool("plain", "A v1 tool.")
    async def plain(params: Empty, context: sdk.ToolExecutionContext) -> dict:
        return {"auth_credentials": context.auth_credentials}

    @sdk.interaction("submit_form", "Submit the card.")
    async def submit_form(params: FormParams, context: sdk.InteractionContext) -> dict:
        return {"ok": params.title, "auth_credentials": context.auth_credentials}


def our_tools(runs: list[str]) -> ToolDiscovery:
    d = ToolDiscovery()

    def undo_order(order_id: Annotated[str, "The order"], ctx: ToolContext = None) -> dict:
        runs.append(order_id)
        return {"undone": order_id, "operation_id": ctx.extra["operation_id"]}

    @d.tool(name="place_order", description="Place an order.", rollback=undo_order, sensitive="Check the amount",
            wait=True, skippable_interaction=True, in_context=["note"], principal_scope={"owner": "personal_files"})
    def place_order(item: Annotated[str, "What to order"], note: Annotated[str | None, "A note for the shop"] = None,
                    owner: Annotated[str | None, "Whose files"] = None) -> Envelope:
        return Envelope(message="Placed", content={"order_id": "o-1"}, operation=OPERATION)

    @d.tool(name="refuse", description="Refuse to place it.")
    def refuse() -> Envelope:
        return Envelope(message="Already placed", error={
            "title": "Resource Conflict", "status": 409, "detail": "Already placed", "error_code": "RESOURCE_CONFLICT"})

    @d.tool(name="plain", description="A v1 tool.")
    def plain(ctx: ToolContext = None) -> dict:
        return {"auth_credentials": ctx.extra["auth_credentials"]}

    @d.interaction(name="submit_form", description="Submit the card.")
    def submit_form(title: Annotated[str, "The task's title"], ctx: ToolContext = None) -> dict:
        return {"ok": title, "auth_credentials": ctx.extra["auth_credentials"]}

    return d


@pytest.fixture
def both(make_app) -> Any:
    """``(sdk_client, our_client, sdk_runs, our_runs)``, Opal mounted at the root on ours."""
    theirs_runs: list[str] = []
    ours_runs: list[str] = []
    app = make_app(our_tools(ours_runs), TOOLDISCOVERY_DIALECTS=["opal", "mcp", "oxp"],
                   TOOLDISCOVERY_OPAL_URL_PREFIX="")
    with sdk_app(lambda: sdk_tools(theirs_runs)) as theirs:
        yield theirs, app.test_client(), theirs_runs, ours_runs


def post(client: Any, path: str, body: Any) -> tuple[int, str, Any]:
    answer = client.post(path, json=body)
    kind = answer.headers.get("content-type", "").split(";")[0]
    return answer.status_code, kind, answer.json() if callable(answer.json) else answer.get_json()


def test_discovery_field_by_field(both) -> None:
    theirs, ours, _, _ = both
    their_doc, our_answer = theirs.get("/discovery"), ours.get("/discovery")
    assert their_doc.headers["content-type"] == our_answer.mimetype == V2
    their_doc, our_doc = their_doc.json(), our_answer.get_json()
    assert our_doc["rollbacks"] == their_doc["rollbacks"] == [
        {"name": "undo_order", "endpoint": "/tools/rollbacks/undo_order"}]
    mine, their = by_name(our_doc["functions"]), by_name(their_doc["functions"])
    assert mine.keys() == their.keys() == {"place_order", "refuse", "plain"}  # interactions are not listed
    for name in their:
        assert {k: v for k, v in mine[name].items() if k != "parameters"} == {
            k: v for k, v in their[name].items() if k != "parameters"}, name
    for my_param, their_param in zip(mine["place_order"]["parameters"], their["place_order"]["parameters"],
                                     strict=True):
        assert my_param == their_param  # in_context, principal_scope in the schema, descriptions
    assert mine["place_order"]["sensitive"] == "Check the amount"
    assert mine["place_order"]["wait"] is mine["place_order"]["skippable_interaction"] is True


def test_envelope_answers_match(both) -> None:
    theirs, ours, _, _ = both
    body = {"parameters": {"item": "tea"}}
    assert post(theirs, "/tools/place_order", body) == post(ours, "/tools/place_order", body) == (
        200, ANSWER_V2, {"message": "Placed", "content": {"order_id": "o-1"}, "operation": OPERATION,
                         "content_type": "application/json"})
    # An error inside the envelope: HTTP 200, as the SDK sends it; the error is the body's.
    their_answer, our_answer = post(theirs, "/tools/refuse", {"parameters": {}}), post(ours, "/tools/refuse",
                                                                                       {"parameters": {}})
    assert their_answer == our_answer
    assert our_answer[:2] == (200, ANSWER_V2) and our_answer[2]["error"]["status"] == 409


def test_rollback_runs_once_per_operation_id(both) -> None:
    theirs, ours, their_runs, our_runs = both
    body = {"data": {"order_id": "o-1"}, "operation_id": "op-1"}
    for _ in range(2):
        assert post(theirs, "/tools/rollbacks/undo_order", body) == post(ours, "/tools/rollbacks/undo_order", body) == (
            200, "application/json", {"undone": "o-1", "operation_id": "op-1"})
    assert their_runs == ["o-1", "o-1"]  # the SDK leaves deduplication to the handler
    assert our_runs == ["o-1"]  # ours answers the first result again
    assert post(ours, "/tools/rollbacks/undo_order", {**body, "operation_id": "op-2"})[0] == 200
    assert our_runs == ["o-1", "o-1"]
    assert post(ours, "/tools/rollbacks/nope", body)[0] == 404
    assert post(ours, "/tools/rollbacks/undo_order", {"data": {}, "operation_id": "op-3"})[0] == 400  # invalid
    assert post(ours, "/tools/rollbacks/undo_order", {"data": {"order_id": "o-1"}, "operation_id": 5})[0] == 400


def test_a_failed_rollback_runs_again(make_app) -> None:
    d, attempts = ToolDiscovery(), []

    def undo(order_id: str) -> dict:
        attempts.append(order_id)
        if len(attempts) == 1:
            raise RuntimeError("the shop is down")
        return {"undone": order_id}

    @d.tool(rollback=undo)
    def place(item: str) -> dict:
        return {"placed": item}

    client = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    body = {"data": {"order_id": "o-9"}, "operation_id": "op-9"}
    assert client.post("/opal/tools/rollbacks/undo", json=body).status_code == 500
    assert client.post("/opal/tools/rollbacks/undo", json=body).get_json() == {"undone": "o-9"}
    assert client.post("/opal/tools/rollbacks/undo", json=body).get_json() == {"undone": "o-9"}
    assert attempts == ["o-9", "o-9"]


def test_a_rollback_named_by_another_tool_goes_through_identity_and_limits(make_app) -> None:
    d, runs = ToolDiscovery(), []

    @d.tool
    def cancel(order_id: str) -> dict:
        runs.append(order_id)
        return {"cancelled": order_id}

    @d.tool(rollback="cancel", rate_limit_per_minute=100)
    def place(item: str) -> dict:
        return {"placed": item}

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_BEARER_TOKEN="t0k",
                   TOOLDISCOVERY_RATELIMIT_TOOLS={"cancel": "1/minute"})
    client = app.test_client()
    doc = client.get("/opal/discovery").get_json()
    assert doc["rollbacks"] == [{"name": "cancel", "endpoint": "/tools/rollbacks/cancel"}]
    body = {"data": {"order_id": "o-1"}, "operation_id": "op-1"}
    assert client.post("/opal/tools/rollbacks/cancel", json=body).status_code == 401
    auth = {"Authorization": "Bearer t0k"}
    assert client.post("/opal/tools/rollbacks/cancel", json=body, headers=auth).status_code == 200
    again = client.post("/opal/tools/rollbacks/cancel", json={**body, "operation_id": "op-2"}, headers=auth)
    assert again.status_code == 429  # its limit counts rollbacks too
    assert runs == ["o-1"]


def test_rollback_records_live_in_the_state_store(make_app, redis_url) -> None:  # noqa: F811
    runs: list[str] = []
    config = {"TOOLDISCOVERY_DIALECTS": ["opal"], "TOOLDISCOVERY_STATE_STORAGE_URI": redis_url}
    one, other = (make_app(our_tools(runs), **config).test_client() for _ in range(2))
    body = {"data": {"order_id": "o-5"}, "operation_id": "op-shared"}
    first = one.post("/opal/tools/rollbacks/undo_order", json=body)
    second = other.post("/opal/tools/rollbacks/undo_order", json=body)
    assert first.get_json() == second.get_json() == {"undone": "o-5", "operation_id": "op-shared"}
    assert runs == ["o-5"]


def test_interactions_match(both) -> None:
    theirs, ours, _, _ = both
    body = {"name": "submit_form", "parameters": {"title": "Buy tea"}, "auth_credentials": CREDENTIALS}
    expected = {"ok": "Buy tea", "auth_credentials": [CREDENTIALS[0], CREDENTIALS[2]]}
    assert post(theirs, "/interactions/execute", body) == post(ours, "/interactions/execute", body) == (
        200, "application/json", expected)
    assert post(theirs, "/interactions/execute", {"name": "nope"})[0] == post(
        ours, "/interactions/execute", {"name": "nope"})[0] == 404
    assert post(theirs, "/interactions/execute", {"parameters": {}})[0] == post(
        ours, "/interactions/execute", {"parameters": {}})[0] == 400
    # Never a tool: no function of discovery, no tool call.
    assert post(ours, "/tools/submit_form", {"parameters": {"title": "x"}})[0] == 404


@pytest.mark.parametrize("sent, seen", [
    (CREDENTIALS, [CREDENTIALS[0], CREDENTIALS[2]]),  # non-objects dropped, the rest as sent
    ("not a list", []),
    (None, None),  # a server that predates the key
    ([], []),
])
def test_auth_credentials_reach_the_tool_as_the_sdk_hands_them(both, sent: Any, seen: Any) -> None:
    theirs, ours, _, _ = both
    body = {"parameters": {}, "auth_credentials": sent}
    assert post(theirs, "/tools/plain", body) == post(ours, "/tools/plain", body) == (
        200, "application/json", {"auth_credentials": seen})


@pytest.mark.parametrize("extra, theirs_status, ours_status", [
    ({"auth": None, "environment": None, "async_callback": None}, 200, 200),  # null: none given
    ({"auth": "OptiID"}, 500, 400),  # not an object: the SDK crashes on it, we name the mistake
    ({"environment": [None, None]}, 200, 400),  # the SDK hands it on unread; Opal sends an object
    ({"auth": []}, 200, 400),
])
def test_leniency(both, extra: dict[str, Any], theirs_status: int, ours_status: int) -> None:
    theirs, ours, _, _ = both
    body = {"parameters": {"item": "tea"}, **extra}
    assert post(theirs, "/tools/place_order", body)[0] == theirs_status
    status, _, answer = post(ours, "/tools/place_order", body)
    assert status == ours_status
    if status == 400:
        assert set(answer) == {"error", "detail"} and "must be a JSON object" in answer["error"]


def test_other_dialects_get_the_plain_result_and_what_they_can_carry(both) -> None:
    _, ours, _, _ = both
    mcp = {"Accept": "application/json, text/event-stream"}

    def call(name: str) -> dict[str, Any]:
        return ours.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": {"item": "tea"} if name == "place_order" else {}}}, headers=mcp).get_json()

    placed = call("place_order")["result"]
    assert placed["isError"] is False and placed["structuredContent"] == {"order_id": "o-1"}
    assert placed["_meta"]["io.optimizely.opal/envelope"] == {"message": "Placed", "operation": OPERATION}
    refused = call("refuse")["result"]
    assert refused["isError"] is True and refused["content"][0]["text"] == "Already placed"
    assert refused["_meta"]["io.optimizely.opal/envelope"]["error"]["status"] == 409
    # OXP carries no envelope: the plain result, and an error stays an error (read by its own driver).
    driver, settings = OXP.driver, ours.application.extensions["tooldiscovery.state"].settings
    assert driver is not None

    def oxp(name: str, arguments: dict[str, Any]) -> Any:
        answer = ours.post(driver.call_path("/oxp", name), json=driver.call_body(name, arguments, settings))
        return driver.read(answer.status_code, answer.get_json())

    placed = oxp("place_order", {"item": "tea"})
    assert (placed.kind, placed.values) == ("ok", [{"order_id": "o-1"}])
    refused = oxp("refuse", {})
    assert refused.kind != "ok" and refused.message == "Already placed"


@pytest.mark.parametrize("options, fragment", [
    ({"principal_scope": {"item": "im"}}, "optional string parameter"),
    ({"principal_scope": {"owner": "everything"}}, "principal_scope must be one of"),
    ({"principal_scope": {"owner": "im"}, "long_running": True}, "not long_running"),
    ({"in_context": ["nope"]}, "in_context names no parameter"),
    ({"sensitive": 5}, "sensitive must be True or an advisory sentence"),
    ({"wait": "yes"}, "wait must be True or False"),
    ({"rollback": 7}, "rollback must be a function"),
])
def test_per_function_options_are_checked_at_registration(options: dict[str, Any], fragment: str) -> None:
    d = ToolDiscovery()
    with pytest.raises(RegistrationError, match=fragment):
        @d.tool(**options)
        def order(item: str, owner: str | None = None) -> dict:
            return {}


def test_sensitive_true_is_the_sdks_generic_sentence(make_app) -> None:
    d = ToolDiscovery()

    @d.tool(sensitive=True)
    def wipe() -> None:
        """Wipe."""

    with sdk_app(lambda: sdk.tool("wipe", "Wipe.", sensitive=True)(_wipe)) as theirs:
        their_function = theirs.get("/discovery").json()["functions"][0]
    ours = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"]).test_client().get("/opal/discovery")
    assert ours.mimetype == V2
    assert ours.get_json()["functions"][0]["sensitive"] == their_function["sensitive"]


async def _wipe(params: Empty) -> None:
    return None


from .test_operating_server import redis_url  # noqa: E402, F401 - the fixture


def test_our_openapi_variant_documents_the_shapes(make_app) -> None:
    from openapi_spec_validator import validate

    app = make_app(our_tools([]), TOOLDISCOVERY_DIALECTS=["opal", "openapi"], TOOLDISCOVERY_OPENAPI_DIALECT="opal")
    doc = app.test_client().get("/tools/openapi.json").get_json()
    validate(doc)
    rollback = doc["paths"]["/opal/tools/rollbacks/undo_order"]["post"]
    body = rollback["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["operation_id"] == {"type": ["string", "null"], "minLength": 1}
    assert set(body["properties"]["data"]["properties"]) == {"order_id"}
    assert "409" in rollback["responses"]
    placed = doc["paths"]["/opal/tools/place_order"]["post"]
    assert set(placed["responses"]["200"]["content"]) == {ANSWER_V2}
    envelope = placed["requestBody"]["content"]["application/json"]["schema"]["anyOf"][0]
    assert envelope["properties"]["auth"] == envelope["properties"]["environment"] == {"type": ["object", "null"]}
    assert "auth_credentials" in envelope["properties"]


def test_a_second_call_while_the_first_runs_is_a_409(make_app) -> None:
    import threading

    import requests

    from .conftest import live_server

    d, started, release = ToolDiscovery(), threading.Event(), threading.Event()

    def undo(order_id: str) -> dict:
        started.set()
        release.wait(30)
        return {"undone": order_id}

    @d.tool(rollback=undo)
    def place(item: str) -> dict:
        return {"placed": item}

    body = {"data": {"order_id": "o-1"}, "operation_id": "op-1"}
    with live_server(make_app(d, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_MAX_CONCURRENT_CALLS=4)) as base:
        first: list[requests.Response] = []
        worker = threading.Thread(target=lambda: first.append(
            requests.post(f"{base}/opal/tools/rollbacks/undo", json=body, timeout=30)))
        worker.start()
        assert started.wait(30)
        second = requests.post(f"{base}/opal/tools/rollbacks/undo", json=body, timeout=30)
        release.set()
        worker.join(30)
    assert second.status_code == 409 and "running" in second.json()["error"]
    assert first[0].status_code == 200 and first[0].json() == {"undone": "o-1"}


def test_interaction_names_are_unique_among_tools_and_interactions() -> None:
    d = ToolDiscovery()

    @d.tool
    def place(item: str) -> dict:
        return {}

    with pytest.raises(RegistrationError, match="already the name of a tool or an interaction"):
        d.interaction(name="place")(lambda: None)

    @d.interaction
    def card() -> dict:
        return {}

    with pytest.raises(RegistrationError, match="already the name of an interaction"):
        d.tool(name="card")(lambda: None)


def test_one_callers_rollback_result_is_not_anothers(make_app) -> None:
    import jwt

    d, runs = ToolDiscovery(), []

    def undo(order_id: str, ctx: ToolContext = None) -> dict:
        runs.append(ctx.user_id)
        return {"undone": order_id, "by": ctx.user_id}

    @d.tool(rollback=undo)
    def place(item: str) -> dict:
        return {"placed": item}

    secret = "a-shared-secret-of-at-least-32-bytes!"
    client = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_JWT_SECRET=secret).test_client()
    body = {"order_id": "o-1", "operation_id": "op-1"}  # a bare body: the arguments, less the call's own keys
    for subject in ("alice", "bob", "alice"):
        token = jwt.encode({"sub": subject, "exp": 4102444800}, secret, algorithm="HS256")
        answer = client.post("/opal/tools/rollbacks/undo", json=body, headers={"Authorization": f"Bearer {token}"})
        assert answer.get_json() == {"undone": "o-1", "by": subject}
    assert runs == ["alice", "bob"]
    missing = client.post("/opal/interactions/execute", json={"name": "nope"}, headers={
        "Authorization": "Bearer " + jwt.encode({"sub": "a", "exp": 4102444800}, secret, algorithm="HS256")})
    assert missing.status_code == 404 and missing.get_json()["error"] == "Interaction not found: nope"


def test_a_rollback_asks_for_approval_and_sends_the_signals_a_call_sends(make_app) -> None:
    from flask_tooldiscovery import signals

    d, runs, seen = ToolDiscovery(), [], []

    @d.tool(requires_approval=True)
    def cancel(order_id: str) -> dict:
        runs.append(order_id)
        return {"cancelled": order_id}

    @d.tool(rollback="cancel")
    def place(item: str) -> dict:
        return {"placed": item}

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"], SECRET_KEY="approvals-of-rollbacks")
    client = app.test_client()
    body = {"data": {"order_id": "o-1"}, "operation_id": "op-1"}

    def called(sender: Any, **kwargs: Any) -> None:
        seen.append(("called", kwargs["tool"].name, kwargs["dialect"]))

    def succeeded(sender: Any, **kwargs: Any) -> None:
        seen.append(("succeeded", kwargs["tool"].name, kwargs["dialect"]))

    with signals.tool_called.connected_to(called), signals.tool_succeeded.connected_to(succeeded):
        asked = client.post("/opal/tools/rollbacks/cancel", json=body)
        assert asked.status_code != 200 and asked.get_json()["code"] == "approval_required" and runs == []
        state = asked.get_json()["approval_state"]
        # The refusal was not kept: the approved call runs, once.
        approved = client.post("/opal/tools/rollbacks/cancel", json=body, headers={"X-Tool-Approval": state})
        assert approved.get_json() == {"cancelled": "o-1"} and runs == ["o-1"]
    assert ("called", "cancel", "opal") in seen and seen[-1] == ("succeeded", "cancel", "opal")
