"""Dialect opal: the seed's validation checklist, the SDK's keys, execution and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import pytest
import requests
from pydantic import BaseModel

from flask_tooldiscovery import ToolContext, ToolDiscovery, ToolError

from .conftest import live_server

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "opal_sdk_discovery.json").read_text())
TOKEN = "opal-secret-token"


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool(annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": True})
    async def get_weather(city: Annotated[str, "City name"],
                          units: Literal["metric", "imperial"] = "metric",
                          days: int = 1) -> dict:
        """Fetch current weather for a city."""
        if city == "Atlantis":
            raise ToolError("Unknown city", can_retry=False)
        return {"city": city, "units": units, "days": days}

    @d.tool(annotations={"readOnlyHint": False, "idempotentHint": True})
    def tag_items(tags: Annotated[list[str], "Tags to attach"], weight: float,
                  dry_run: bool = False) -> dict:
        """Attach tags."""
        return {"tags": tags, "weight": weight, "dry_run": dry_run}

    @d.tool(auth_requirements=[{"provider": "OptiID", "scope_bundle": "shipping", "required": True}])
    def ship(address: dict[str, str], note: str | None = None, ctx: ToolContext = None) -> dict:
        """Ship a parcel."""
        return {"address": address, "note": note, "user": ctx.user_id,
                "token": ctx.token("OptiID"), "extra": ctx.extra}

    @d.tool
    def undocumented(x):
        return x

    @d.tool
    def crash() -> None:
        """Crash."""
        raise KeyError("internal detail /etc/passwd")

    @d.tool
    def echo_list() -> list:
        """A list."""
        return [1, "two"]

    return d


@pytest.fixture
def client(discovery, make_app):
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_SERVER_NAME="acme",
                    TOOLDISCOVERY_SERVER_DESCRIPTION="Acme tools",
                    TOOLDISCOVERY_SERVER_VERSION="2.0.0").test_client()


def test_validation_checklist(client) -> None:
    r = client.get("/opal/discovery")
    # Response format
    assert r.status_code == 200
    assert r.mimetype == "application/json"
    doc = r.get_json()
    assert isinstance(doc["functions"], list) and doc["functions"]
    assert (doc["name"], doc["description"], doc["version"]) == ("acme", "Acme tools", "2.0.0")
    for fn in doc["functions"]:
        assert {"name", "description", "parameters", "endpoint", "http_method"} <= set(fn)
        assert isinstance(fn["parameters"], list)
        assert fn["endpoint"] == f"/tools/{fn['name']}"
        assert fn["http_method"] == "POST"
        assert isinstance(fn["description"], str) and fn["description"]
        for p in fn["parameters"]:
            assert {"name", "type", "description", "required"} <= set(p)
            assert not {"default", "enum", "examples", "items"} & set(p)
            assert isinstance(p["required"], bool)
            assert isinstance(p["description"], str) and p["description"]
            assert p["type"] in {"string", "integer", "number", "boolean", "array", "object"}
            assert p["in_context"] is False
            assert ("schema" in p) == (p["type"] in ("array", "object"))
    # Authentication and caching
    assert r.headers["Cache-Control"] == "no-cache, no-store, must-revalidate"
    assert r.headers["Access-Control-Allow-Origin"] == "*"


def test_parameter_mapping(client) -> None:
    fns = {f["name"]: f for f in client.get("/opal/discovery").get_json()["functions"]}
    weather = {p["name"]: p for p in fns["get_weather"]["parameters"]}
    assert weather["city"] == {"name": "city", "type": "string", "description": "City name",
                               "required": True, "in_context": False}
    assert weather["units"]["description"].startswith("The units parameter. One of: metric, imperial.")
    assert "Defaults to metric" in weather["units"]["description"]
    assert weather["days"]["type"] == "integer" and weather["days"]["required"] is False
    tags = {p["name"]: p for p in fns["tag_items"]["parameters"]}
    assert tags["tags"]["schema"] == {"type": "array", "items": {"type": "string"},
                                      "description": "Tags to attach"}
    ship = {p["name"]: p for p in fns["ship"]["parameters"]}
    assert ship["address"]["type"] == "object"
    assert ship["note"]["type"] == "string"  # int | None style optionals keep their real type
    assert fns["ship"]["auth_requirements"] == [
        {"provider": "OptiID", "scope_bundle": "shipping", "required": True}]
    assert fns["get_weather"]["hints"] == ["idempotent", "open_world"]
    assert fns["tag_items"]["hints"] == ["idempotent", "write"]
    assert "hints" not in fns["ship"]
    assert fns["undocumented"]["description"] == "The undocumented tool."
    assert fns["undocumented"]["parameters"][0]["description"] == "The x parameter."


def test_keys_match_the_official_sdk(client) -> None:
    ours = {f["name"]: f for f in client.get("/opal/discovery").get_json()["functions"]}
    for theirs in FIXTURE["functions"]:
        mine = ours[theirs["name"]]
        assert set(theirs) <= set(mine), theirs["name"]
        assert set(mine) - set(theirs) <= {"hints", "auth_requirements"}
        their_params = {p["name"]: p for p in theirs["parameters"]}
        my_params = {p["name"]: p for p in mine["parameters"]}
        assert set(their_params) == set(my_params)
        for pname, tp in their_params.items():
            assert set(tp) == set(my_params[pname]), (theirs["name"], pname)
            assert tp["type"] == my_params[pname]["type"]
            assert tp["required"] == my_params[pname]["required"]


def test_trailing_slash_and_preflight(client) -> None:
    assert client.get("/opal/discovery/").get_json() == client.get("/opal/discovery").get_json()
    assert client.get("/opal/discovery/").status_code == 200
    pre = client.options("/opal/discovery", headers={
        "Origin": "https://opal.optimizely.com", "Access-Control-Request-Method": "GET"})
    assert pre.status_code == 200
    assert pre.headers["Access-Control-Allow-Origin"] == "*"
    assert pre.headers["Access-Control-Allow-Methods"] == "GET, OPTIONS"
    # Tool calls are not open to every website: no CORS grant for an origin nobody allowed.
    pre = client.options("/opal/tools/get_weather", headers={
        "Origin": "https://opal.optimizely.com", "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in pre.headers


def test_preflight_for_an_allowed_origin(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["opal"],
                   TOOLDISCOVERY_ALLOWED_ORIGINS=["https://opal.optimizely.com"])
    pre = app.test_client().options("/opal/tools/get_weather", headers={
        "Origin": "https://opal.optimizely.com", "Access-Control-Request-Method": "POST"})
    assert pre.headers["Access-Control-Allow-Origin"] == "https://opal.optimizely.com"
    assert pre.headers["Access-Control-Allow-Methods"] == "POST, OPTIONS"
    assert "Authorization" in pre.headers["Access-Control-Allow-Headers"]


def test_execution_wrapped_and_bare_and_under_discovery(client) -> None:
    r = client.post("/opal/tools/get_weather", json={"parameters": {"city": "Oslo"}})
    assert r.status_code == 200 and r.get_json() == {"city": "Oslo", "units": "metric", "days": 1}
    r = client.post("/opal/tools/get_weather", json={"city": "Rome", "days": 3})
    assert r.get_json() == {"city": "Rome", "units": "metric", "days": 3}
    r = client.post("/opal/discovery/tools/get_weather", json={"parameters": {"city": "Nice"}})
    assert r.status_code == 200 and r.get_json()["city"] == "Nice"
    assert client.post("/opal/tools/echo_list", json={}).get_json() == [1, "two"]


def test_strings_are_coerced(client) -> None:
    r = client.post("/opal/tools/tag_items", json={"parameters": {
        "tags": "['a', 'b']", "weight": "2.5", "dry_run": "True"}})
    assert r.status_code == 200, r.get_json()
    assert r.get_json() == {"tags": ["a", "b"], "weight": 2.5, "dry_run": True}
    r = client.post("/opal/tools/get_weather", json={"parameters": {"city": "Oslo", "days": "4"}})
    assert r.get_json()["days"] == 4


def test_auth_environment_and_headers_reach_the_tool(client) -> None:
    r = client.post("/opal/tools/ship", json={
        "parameters": {"address": {"street": "Main"}},
        "auth": {"provider": "OptiID", "credentials": {"access_token": "at-1", "user_id": "u-9"}},
        "environment": {"execution_mode": "headless"},
    }, headers={"x-opal-thread-id": "th-1", "x-opal-workflow-execution-id": "wf-2"})
    body = r.get_json()
    assert r.status_code == 200
    assert body["user"] == "u-9" and body["token"] == "at-1"
    assert body["extra"]["environment"] == {"execution_mode": "headless"}
    assert body["extra"]["headers"] == {"x-opal-thread-id": "th-1", "x-opal-workflow-execution-id": "wf-2"}


def test_only_the_x_opal_headers_reach_the_tool_whatever_else_the_environ_holds(client) -> None:
    # A middleware's own environ keys (one not text, one naming an X-Opal key inside another name)
    # neither break the call nor pass for a header.
    environ = {"my.middleware": object(), 7: "not text", "MY_HTTP_X_OPAL_FAKE": "no",
               "weird\nHTTP_X_OPAL_GHOST": "no"}
    r = client.post("/opal/tools/ship", json={"parameters": {"address": {"street": "Main"}}},
                    headers={"X-Opal-Agent-Execution-Id": "ag-3", "X-Other": "x"}, environ_base=environ)
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["extra"]["headers"] == {"x-opal-agent-execution-id": "ag-3"}


def test_an_x_opal_header_first_in_the_environ_is_found_too() -> None:
    # A server (or a middleware rebuilding the environ) may put a header first: it is read as the others.
    from flask_tooldiscovery.dialects.opal.requests import opal_headers

    environ = {"HTTP_X_OPAL_THREAD_ID": "th-1", "REQUEST_METHOD": "POST", "HTTP_X_OPAL_AGENT_EXECUTION_ID": "ag-3"}
    assert list(opal_headers(environ).items()) == [("x-opal-thread-id", "th-1"), ("x-opal-agent-execution-id", "ag-3")]
    assert opal_headers({"HTTP_X_OPAL_THREAD_ID": "th-1"}) == {"x-opal-thread-id": "th-1"}
    assert opal_headers({"REQUEST_METHOD": "POST"}) == {}


def test_each_call_reads_its_own_x_opal_headers(client) -> None:
    # Which environ keys are headers is remembered per set of keys; the values are each call's own.
    seen = []
    for thread in ("th-1", "th-2", "th-3"):
        headers = {"X-Opal-Thread-Id": thread, **({"X-Opal-Agent-Execution-Id": "ag"} if thread == "th-2" else {})}
        r = client.post("/opal/tools/ship", json={"parameters": {"address": {"street": "Main"}}}, headers=headers)
        assert r.status_code == 200, r.get_json()
        seen.append(r.get_json()["extra"]["headers"])
    assert seen == [{"x-opal-thread-id": "th-1"}, {"x-opal-thread-id": "th-2", "x-opal-agent-execution-id": "ag"},
                    {"x-opal-thread-id": "th-3"}]


@pytest.mark.parametrize("kwargs, status, fragment", [
    ({"data": "{not json", "content_type": "application/json"}, 400, "Malformed JSON"),
    ({"json": [1, 2]}, 400, "must be a JSON object"),
    ({"json": {"parameters": "city=Oslo"}}, 400, "'parameters' must be a JSON object"),
    ({"json": {"parameters": {"units": "kelvin"}}}, 400, "Invalid arguments"),
])
def test_bad_requests(client, kwargs, status, fragment) -> None:
    r = client.post("/opal/tools/get_weather", **kwargs)
    assert r.status_code == status
    assert r.mimetype == "application/json"
    assert fragment in r.get_json()["error"]


def test_invalid_parameters_listed(client) -> None:
    r = client.post("/opal/tools/get_weather", json={"parameters": {"units": "kelvin"}})
    assert set(r.get_json()["parameter_errors"]) == {"city", "units"}


def test_unknown_tool_wrong_method_too_large(client, discovery, make_app) -> None:
    r = client.post("/opal/tools/nope", json={})
    assert r.status_code == 404 and r.get_json()["error"] == "Tool not found: nope"
    r = client.get("/opal/tools/get_weather")
    assert r.status_code == 405 and r.mimetype == "application/json"
    assert "POST" in r.headers["Allow"]
    r = client.delete("/opal/discovery")
    assert r.status_code == 405 and r.mimetype == "application/json"
    small = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["opal"],
                     TOOLDISCOVERY_MAX_CONTENT_LENGTH=100).test_client()
    r = small.post("/opal/tools/x", json={"parameters": {"city": "x" * 500}})
    assert r.status_code == 413 and r.mimetype == "application/json"


def test_tool_failures_are_500_without_traceback(client) -> None:
    r = client.post("/opal/tools/get_weather", json={"parameters": {"city": "Atlantis"}})
    assert r.status_code == 500 and r.get_json()["error"] == "Unknown city"
    r = client.post("/opal/tools/crash", json={})
    assert r.status_code == 500
    text = r.get_data(as_text=True)
    assert "passwd" not in text and "Traceback" not in text and "KeyError" not in text


def test_bearer_token_on_calls_not_discovery(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_BEARER_TOKEN=TOKEN)
    with live_server(app) as base:
        assert requests.get(f"{base}/opal/discovery").status_code == 200
        url = f"{base}/opal/tools/get_weather"
        body = {"parameters": {"city": "Oslo"}}
        r = requests.post(url, json=body)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
        assert TOKEN not in r.text
        assert requests.post(url, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert requests.post(url, json=body, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
        # An unknown tool is not revealed to an unauthenticated caller.
        assert requests.post(f"{base}/opal/tools/nope", json={}).status_code == 401
        ok = requests.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json()["city"] == "Oslo"


def test_defaults_and_enum_values_are_written_as_json(make_app) -> None:
    d = ToolDiscovery()

    @d.tool
    def f(on: bool = False, opts: dict = {"k": "v"}, level: Literal[1, 2] = 1, unit: str = "metric") -> int:  # noqa: B006
        """F.

        Args:
            on: Switch.
            opts: Options.
            level: Level.
            unit: Unit.
        """
        return 1

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"])
    params = {p["name"]: p["description"] for p in app.test_client().get("/opal/discovery").get_json()
              ["functions"][0]["parameters"]}
    assert params["on"] == "Switch. Defaults to false."
    assert params["opts"] == 'Options. Defaults to {"k": "v"}.'
    assert params["level"] == "Level. One of: 1, 2. Defaults to 1."
    assert params["unit"] == "Unit. Defaults to metric."


def test_auth_requirements_always_name_a_scope_bundle(make_app) -> None:
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="mail", auth_requirements=[{"provider": "google"},
                                                          {"provider": "ms", "scope_bundle": "mail"}])
    fn = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"]).test_client().get("/opal/discovery").get_json()["functions"][0]
    assert fn["auth_requirements"] == [{"provider": "google", "scope_bundle": "", "required": True},
                                       {"provider": "ms", "scope_bundle": "mail", "required": True}]


def test_options_on_discovery_names_only_its_methods(client) -> None:
    for path in ("/opal/discovery", "/opal/discovery/"):
        r = client.options(path)
        assert r.status_code == 200 and r.get_data() == b""
        assert "text/html" not in r.headers.get("Content-Type", "")
        assert r.headers["Allow"] == "GET, HEAD, OPTIONS"
    r = client.options("/opal/tools/get_weather")
    assert r.headers["Allow"] == "POST, OPTIONS"


class Line(BaseModel):
    sku: str
    qty: int = 1


class Order(BaseModel):
    first: Line
    rest: list[Line] = []


def test_nested_parameter_schemas_are_self_contained(make_app) -> None:
    d = ToolDiscovery()

    @d.tool
    def place(order: Order) -> int:
        """Place an order.

        Args:
            order: The order.
        """
        return 1 + len(order.rest)

    d.add_tool(lambda **kw: len(kw), name="explicit", input_schema={
        "type": "object", "$defs": {"P": {"type": "object", "properties": {"n": {"type": "string"}}}},
        "properties": {"p": {"$ref": "#/$defs/P"}, "ps": {"type": "array", "items": {"$ref": "#/$defs/P"}}}})
    c = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    text = c.get("/opal/discovery").get_data(as_text=True)
    assert "$ref" not in text and "$defs" not in text
    order = {"first": {"sku": "a"}, "rest": [{"sku": "b", "qty": 2}]}
    r = c.post("/opal/tools/place", json={"parameters": {"order": order}})
    assert r.status_code == 200 and r.get_json() == 2
