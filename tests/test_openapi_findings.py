"""What schemathesis found running over the served OpenAPI document (tests/test_openapi_fuzz.py),
each pinned by the answer a client sees."""

from __future__ import annotations

import pytest
from flask import Flask

from example_app import create_app

from .apps.sample import create_app as create_sample_app


@pytest.fixture(scope="module")
def app() -> Flask:
    return create_app({"TESTING": True, "SECRET_KEY": "findings"})


@pytest.mark.parametrize("method", ["TRACE", "QUERY"])
@pytest.mark.parametrize("path", ["/utcp/tools/add", "/opal/tools/add", "/oxp/tools/call", "/mcp"])
def test_any_other_method_on_a_call_route_is_the_dialects_405_with_allow(app: Flask, path: str, method: str) -> None:
    response = app.test_client().open(path, method=method, json={})
    assert response.status_code == 405 and response.mimetype == "application/json"
    assert "POST" in response.headers["Allow"]


@pytest.mark.parametrize("action", ["call", "validate"])
def test_a_get_of_an_explorer_call_route_is_a_405_not_an_unknown_tool(app: Flask, action: str) -> None:
    response = app.test_client().get(f"/explorer/tools/add/{action}")
    assert response.status_code == 405 and response.headers["Allow"] == "OPTIONS, POST"
    assert "not found" not in response.get_json()["error"].lower()
    assert app.test_client().get("/explorer/tools/add").status_code == 200  # the tool itself, as ever


def test_a_405_the_app_answers_keeps_its_allow_header(app: Flask) -> None:
    """The example's flask-smorest API answers the app's HTTP errors; its 405 kept no ``Allow``."""
    response = app.test_client().put("/explorer/tools/add/call", json={})
    assert response.status_code == 405 and "POST" in response.headers["Allow"]


@pytest.mark.parametrize("key", ["auth", "environment"])
@pytest.mark.parametrize("value", [[None, None], "text", 5])
def test_opal_refuses_an_envelope_whose_auth_or_environment_is_not_an_object(app: Flask, key: str,
                                                                            value: object) -> None:
    response = app.test_client().post("/opal/tools/add", json={"parameters": {"a": 1, "b": 2}, key: value})
    assert response.status_code == 400
    assert response.get_json()["error"] == f"{key!r} must be a JSON object."
    ok = app.test_client().post("/opal/tools/add", json={"parameters": {"a": 1, "b": 2}, key: None})
    assert ok.status_code == 200 and ok.get_json() == 3


@pytest.mark.parametrize("message", [{"jsonrpc": "2.0", "method": 5},
                                     {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}])
def test_mcp_refuses_a_notification_that_is_no_request_at_all(message: dict[str, object]) -> None:
    """The transport: a notification the server cannot accept is an HTTP error, not a 202."""
    client = create_sample_app({"TESTING": True}).test_client()
    response = client.post("/mcp", json=message)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == -32600
    assert client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202


def test_the_example_mean_of_huge_numbers_is_a_number_not_a_crash(app: Flask) -> None:
    values = [1.7976931348623157e308, 1.7976931348623157e308, 1e308]
    response = app.test_client().post("/utcp/tools/mean", json={"values": values})
    assert response.status_code == 200 and response.get_json() == pytest.approx(sum(v / 3 for v in values))


def test_a_key_a_dataclass_argument_does_not_take_is_refused_by_its_schema(app: Flask) -> None:
    """Its schema allowed any key while its constructor refused them with Python's own words."""
    ship_to = {"street": "Main 1", "city": "Oslo", "floor": 3}
    response = app.test_client().post("/utcp/tools/create_order", json={"items": ["sku-1"], "ship_to": ship_to})
    assert response.status_code == 400
    assert response.get_json()["error"] == "Invalid arguments: ship_to: Unexpected property 'floor'."
