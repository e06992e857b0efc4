"""Dialect oxp: every response validated against the OXP 1.0 OpenAPI components, the official
client against a live server, the JWT/API-key matrix, versions, requirements, 400/422/200."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt
import oxp
import pytest
import requests
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from flask_tooldiscovery import ToolContext, ToolDiscovery, ToolError

from .conftest import live_server

SPEC = json.loads((Path(__file__).parent / "fixtures" / "oxp-openapi.json").read_text())
# As published, CallToolResponse declares `value`/`error` only inside its oneOf branches while its
# own `additionalProperties: false` sees just call_id/duration/success, so no response carrying a
# value or an error could ever validate. oxp-notes.md decides for value-xor-error; checking with
# `unevaluatedProperties: false` (which does see into oneOf) keeps the schema closed and meaningful.
_CALL = SPEC["components"]["schemas"]["CallToolResponse"]
assert _CALL.pop("additionalProperties") is False
_CALL["unevaluatedProperties"] = False
_REGISTRY = Registry().with_resource(
    "urn:oxp-spec", Resource.from_contents(SPEC, default_specification=DRAFT202012))
SECRET = "s3cret-signing-key-" + "x" * 50
API_KEY = "key-123"


def check(instance, pointer: str) -> None:
    """Validate ``instance`` against the schema at ``pointer`` in the OpenAPI document."""
    schema = {"$ref": f"urn:oxp-spec#{pointer}"}
    errors = list(Draft202012Validator(schema, registry=_REGISTRY).iter_errors(instance))
    assert not errors, [e.message for e in errors]


LIST_200 = "/paths/~1tools/get/responses/200/content/application~1json/schema"
CALL_200 = "/paths/~1tools~1call/post/responses/200/content/application~1json/schema"
SERVER_ERROR = "/components/schemas/ServerErrorResponse"
VALIDATION_ERROR = "/components/schemas/ValidationErrorResponse"


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool(toolkit="Calculator", name="Add")
    def add(a: float, b: float) -> float:
        """Adds two numbers together."""
        return a + b

    @d.tool(toolkit="Calculator", name="Add", version="2.0.0")
    def add_v2(a: float, b: float, c: float = 0) -> float:
        """Adds up to three numbers."""
        return a + b + c

    @d.tool(toolkit="Calculator", name="Add", version="2.1.0")
    def add_v21(a: float, b: float) -> dict:
        """Adds, with a report."""
        return {"sum": a + b}

    @d.tool(version="0.1.0")
    async def ring(doorbell_id: str, ctx: ToolContext) -> None:
        """Rings a doorbell given a doorbell ID."""
        return None

    @d.tool(requirements={"secrets": ["API_TOKEN"], "user_id": True,
                          "authorization": [{"id": "google", "oauth2": {"scopes": ["mail"]}}]})
    def send_mail(to: str, ctx: ToolContext) -> dict:
        """Send mail."""
        return {"to": to, "user": ctx.user_id, "secret": ctx.secret("API_TOKEN"),
                "token": ctx.token("google"), "trace": ctx.trace_id, "call": ctx.call_id}

    @d.tool
    def flaky() -> None:
        """Fails on purpose."""
        raise ToolError("Service busy", developer_message="upstream 503", can_retry=True,
                        retry_after_ms=250, additional_prompt_content="wait a bit")

    @d.tool
    def broken() -> None:
        """Crashes."""
        raise ZeroDivisionError("secret internals")

    return d


@pytest.fixture
def app(discovery, make_app):
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_SERVER_NAME="door-bells")


@pytest.fixture
def client(app):
    return app.test_client()


def call(client, body, **kw):
    r = client.post("/oxp/tools/call", json=body, **kw)
    return r, r.get_json()


def test_health(client) -> None:
    r = client.get("/oxp/health")
    assert r.status_code == 200 and r.get_json() == {"status": "ok"}


def test_health_503_when_provider_fails(make_app) -> None:
    def broken():
        raise RuntimeError("down")

    app = make_app(ToolDiscovery(tools=broken), TOOLDISCOVERY_DIALECTS=["oxp"],
                   TOOLDISCOVERY_OXP_API_KEY=API_KEY)
    r = app.test_client().get("/oxp/health")  # no credentials: health is public
    assert r.status_code == 503 and r.get_json()["message"]
    r = app.test_client().get("/oxp/tools", headers={"OXP-API-Key": API_KEY})
    assert r.status_code == 503 and "down" not in r.get_data(as_text=True)
    check(r.get_json(), SERVER_ERROR)


def test_list_tools(client) -> None:
    r = client.get("/oxp/tools")
    doc = r.get_json()
    check(doc, LIST_200)
    assert doc["$schema"] == "urn:oxp:1.0" and "tools" not in doc
    by_id = {t["id"]: t for t in doc["items"]}
    assert set(by_id) == {
        "Calculator.Add@1.0.0", "Calculator.Add@2.0.0", "Calculator.Add@2.1.0",
        "DoorBells.ring@0.1.0", "DoorBells.send_mail@1.0.0", "DoorBells.flaky@1.0.0",
        "DoorBells.broken@1.0.0",
    }
    add = by_id["Calculator.Add@1.0.0"]
    assert add["name"] == "Calculator_Add" and add["version"] == "1.0.0"
    assert add["input_schema"]["required"] == ["a", "b"]
    assert add["output_schema"] == {"type": "number"}
    assert by_id["DoorBells.ring@0.1.0"]["output_schema"] is None
    assert by_id["DoorBells.send_mail@1.0.0"]["requirements"] == {
        "secrets": [{"id": "API_TOKEN"}], "user_id": True,
        "authorization": [{"id": "google", "oauth2": {"scopes": ["mail"]}}]}
    for t in doc["items"]:
        check(t, "/components/schemas/ToolDefinition")
        assert set(t) <= {"id", "name", "description", "version", "input_schema",
                          "output_schema", "requirements"}


def test_empty_list_and_legacy_key(make_app) -> None:
    app = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["oxp"],
                   TOOLDISCOVERY_OXP_LEGACY_TOOLS_KEY=True)
    doc = app.test_client().get("/oxp/tools").get_json()
    assert doc == {"$schema": "urn:oxp:1.0", "items": [], "tools": []}


@pytest.mark.parametrize("tool_id, expected", [
    ("Calculator.Add", 3.0 + 0),       # latest: 2.1.0 returns a dict
    ("Calculator.Add@1", 3.0),
    ("Calculator.Add@1.0.0", 3.0),
    ("Calculator.Add@2", 3.0),
    ("Calculator.Add@2.1.0", {"sum": 3.0}),
])
def test_version_resolution(client, tool_id, expected) -> None:
    r, doc = call(client, {"$schema": "urn:oxp:1.0", "request": {"tool_id": tool_id, "input": {"a": 1, "b": 2}}})
    assert r.status_code == 200, doc
    check(doc, CALL_200)
    if tool_id == "Calculator.Add":
        assert doc["result"]["value"] == {"sum": 3.0}
    else:
        assert doc["result"]["value"] == expected


@pytest.mark.parametrize("tool_id", ["Calculator.Add@3", "Calculator.Add@2.0.1", "Calculator.Sub", "Nope.Add"])
def test_unknown_tool_or_version_is_400(client, tool_id) -> None:
    r, doc = call(client, {"request": {"tool_id": tool_id}})
    assert r.status_code == 400
    check(doc, SERVER_ERROR)
    assert "Tool not found" in doc["message"]


def test_success_shape_and_call_id(client) -> None:
    _, doc = call(client, {"request": {"call_id": "abc", "tool_id": "DoorBells.ring@0.1.0",
                                       "input": {"doorbell_id": "d1"}}})
    check(doc, CALL_200)
    res = doc["result"]
    assert res["call_id"] == "abc" and res["success"] is True and "error" not in res
    assert res["value"] is None and isinstance(res["duration"], float)
    _, doc = call(client, {"request": {"tool_id": "DoorBells.ring", "input": {"doorbell_id": "d"}}})
    import uuid
    uuid.UUID(doc["result"]["call_id"])  # generated uuid4


def test_flat_form_and_schema_urls(client) -> None:
    for schema in (None, "urn:oxp:1.0",
                   "https://github.com/ArcadeAI/oxp/blob/main/spec/http/1.0/openapi.json"):
        body = {"tool_id": "Calculator.Add@1", "input": {"a": 1, "b": 1}}
        if schema:
            body["$schema"] = schema
        r, doc = call(client, body)
        assert r.status_code == 200 and doc["result"]["value"] == 2.0
    r, doc = call(client, {"$schema": "urn:oxp:2.0", "request": {"tool_id": "Calculator.Add"}})
    assert r.status_code == 400 and "Unsupported $schema" in doc["message"]
    check(doc, SERVER_ERROR)


@pytest.mark.parametrize("body, fragment", [
    ({"request": {"input": {}}}, "tool_id"),
    ({"request": {"tool_id": "no-dots"}}, "tool id"),
    ({"request": {"tool_id": "A.B", "surprise": 1}}, "surprise"),
    ({"request": "Calculator.Add"}, "must be a JSON object"),
    ({"request": {"tool_id": "Calculator.Add", "input": [1]}}, "input"),
    ({"request": {"tool_id": "A.B"}, "extra": 1}, "extra"),
])
def test_malformed_requests_are_400(client, body, fragment) -> None:
    r, doc = call(client, body)
    assert r.status_code == 400
    check(doc, SERVER_ERROR)
    assert fragment in doc["message"]


def test_malformed_json_and_wrong_method(client) -> None:
    r = client.post("/oxp/tools/call", data="{oops", content_type="application/json")
    assert r.status_code == 400 and "Malformed JSON" in r.get_json()["message"]
    check(r.get_json(), SERVER_ERROR)
    r = client.post("/oxp/tools/call", data="", content_type="application/json")
    assert r.status_code == 400
    r = client.get("/oxp/tools/call")
    assert r.status_code == 405 and r.mimetype == "application/json"


def test_invalid_input_is_422(client) -> None:
    r, doc = call(client, {"request": {"tool_id": "Calculator.Add@1", "input": {"a": "x"}}})
    assert r.status_code == 422
    check(doc, VALIDATION_ERROR)
    assert set(doc["parameter_errors"]) == {"a", "b"}


def test_tool_failure_is_200_with_error(client) -> None:
    r, doc = call(client, {"request": {"tool_id": "DoorBells.flaky"}})
    assert r.status_code == 200
    check(doc, CALL_200)
    res = doc["result"]
    assert res["success"] is False and "value" not in res
    assert res["error"] == {"message": "Service busy", "developer_message": "upstream 503",
                            "can_retry": True, "additional_prompt_content": "wait a bit",
                            "retry_after_ms": 250}
    r, doc = call(client, {"request": {"tool_id": "DoorBells.broken"}})
    check(doc, CALL_200)
    assert doc["result"]["error"]["message"] == "The tool failed with an unexpected error."
    assert "secret internals" not in json.dumps(doc)


def test_requirements(client) -> None:
    r, doc = call(client, {"request": {"tool_id": "DoorBells.send_mail", "input": {"to": "a@b"}}})
    assert r.status_code == 400
    check(doc, SERVER_ERROR)
    assert doc["missing_requirements"] == {
        "authorization": [{"id": "google", "url": ""}], "secrets": [{"id": "API_TOKEN"}],
        "user_id": True}
    r, doc = call(client, {"request": {
        "tool_id": "DoorBells.send_mail", "trace_id": "tr-1", "call_id": "c-1",
        "input": {"to": "a@b"},
        "context": {"user_id": "u1", "secrets": [{"id": "API_TOKEN", "value": "sv"}],
                    "authorization": [{"id": "google", "token": "gt"}]}}})
    assert r.status_code == 200, doc
    assert doc["result"]["value"] == {"to": "a@b", "user": "u1", "secret": "sv", "token": "gt",
                                      "trace": "tr-1", "call": "c-1"}


def _token(**claims):
    payload = {"exp": int(time.time()) + 600, **claims}
    return jwt.encode(payload, SECRET, algorithm="HS256")


@pytest.fixture
def jwt_client(discovery, make_app):
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_JWT_SECRET=SECRET,
                   TOOLDISCOVERY_OXP_JWT_AUDIENCE=["oxp", "tools"])
    return app.test_client()


def _none_alg_token() -> str:
    import base64

    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64({'exp': int(time.time()) + 600, 'aud': 'oxp'})}."


@pytest.mark.parametrize("name, token, status", [
    ("valid", lambda: _token(aud="oxp"), 200),
    ("valid second audience", lambda: _token(aud="tools"), 200),
    ("expired", lambda: _token(aud="oxp", exp=int(time.time()) - 10), 401),
    ("no exp", lambda: jwt.encode({"aud": "oxp"}, SECRET, algorithm="HS256"), 401),
    ("wrong aud", lambda: _token(aud="other"), 401),
    ("no aud", lambda: _token(), 401),
    ("wrong signature", lambda: jwt.encode({"exp": int(time.time()) + 60, "aud": "oxp"},
                                           "another-secret-of-enough-length!!", algorithm="HS256"), 401),
    ("alg none", _none_alg_token, 401),
    ("HS512", lambda: jwt.encode({"exp": int(time.time()) + 60, "aud": "oxp"}, SECRET, algorithm="HS512"), 401),
    ("garbage", lambda: "not.a.jwt", 401),
])
def test_jwt_matrix(jwt_client, name, token, status) -> None:
    headers = {"Authorization": f"Bearer {token()}"}
    r = jwt_client.get("/oxp/tools", headers=headers)
    assert r.status_code == status, name
    if status == 401:
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert r.get_json() == {"$schema": "urn:oxp:1.0", "message": "Unauthorized"}
    body = {"request": {"tool_id": "Calculator.Add@1", "input": {"a": 1, "b": 2}}}
    r2 = jwt_client.post("/oxp/tools/call", json=body, headers=headers)
    assert r2.status_code == status, name


def test_missing_bearer_is_401_and_health_stays_public(jwt_client) -> None:
    assert jwt_client.get("/oxp/tools").status_code == 401
    assert jwt_client.get("/oxp/health").status_code == 200


def test_arcade_variant(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_JWT_SECRET=SECRET,
                   TOOLDISCOVERY_OXP_JWT_AUDIENCE="worker", TOOLDISCOVERY_OXP_JWT_REQUIRE_EXP=False,
                   TOOLDISCOVERY_OXP_JWT_CLAIMS={"ver": "1"})
    c = app.test_client()
    good = jwt.encode({"aud": "worker", "ver": "1"}, SECRET, algorithm="HS256")
    assert c.get("/oxp/tools", headers={"Authorization": f"Bearer {good}"}).status_code == 200
    wrong_ver = jwt.encode({"aud": "worker", "ver": "2"}, SECRET, algorithm="HS256")
    assert c.get("/oxp/tools", headers={"Authorization": f"Bearer {wrong_ver}"}).status_code == 401


def test_api_key_and_either_credential(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_API_KEY=API_KEY)
    c = app.test_client()
    assert c.get("/oxp/tools").status_code == 401
    assert c.get("/oxp/tools", headers={"OXP-API-Key": "nope"}).status_code == 401
    assert c.get("/oxp/tools", headers={"OXP-API-Key": API_KEY}).status_code == 200
    both = make_app(discovery, TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_API_KEY=API_KEY,
                    TOOLDISCOVERY_OXP_JWT_SECRET=SECRET).test_client()
    assert both.get("/oxp/tools", headers={"OXP-API-Key": API_KEY}).status_code == 200
    assert both.get("/oxp/tools", headers={"Authorization": f"Bearer {_token()}"}).status_code == 200
    assert both.get("/oxp/tools", headers={"Authorization": "Bearer junk"}).status_code == 401


def test_auth_off_ignores_authorization_header(client) -> None:
    r = client.get("/oxp/tools", headers={"Authorization": "Bearer whatever"})
    assert r.status_code == 200


def test_official_client_against_live_server(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_JWT_SECRET=SECRET,
                   TOOLDISCOVERY_SERVER_NAME="door bells")
    with live_server(app) as base:
        client = oxp.Oxp(base_url=f"{base}/oxp", bearer_token=_token(), max_retries=0)
        listed = client.tools.list()
        ids = [t.id for t in listed.items]
        assert "Calculator.Add@2.1.0" in ids and "DoorBells.ring@0.1.0" in ids
        result = client.tools.call(request={"tool_id": "Calculator.Add@1", "input": {"a": 2, "b": 5}})
        assert result.result.success is True and result.result.value == 7.0
        failed = client.tools.call(request={"tool_id": "DoorBells.flaky"})
        assert failed.result.success is False and failed.result.error.message == "Service busy"
        with pytest.raises(oxp.UnprocessableEntityError):
            client.tools.call(request={"tool_id": "Calculator.Add@1", "input": {"a": "x"}})
        with pytest.raises(oxp.BadRequestError):
            client.tools.call(request={"tool_id": "Calculator.Nope"})
        bad = oxp.Oxp(base_url=f"{base}/oxp", bearer_token="wrong", max_retries=0)
        with pytest.raises(oxp.AuthenticationError):
            bad.tools.list()
        assert requests.get(f"{base}/oxp/health").status_code == 200
