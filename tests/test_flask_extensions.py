"""Beside the Flask extensions an app already has (docs/topics/flask-extensions.rst): Flask-WTF's
CSRFProtect leaves tool routes alone and keeps guarding the app's own forms, whichever was set up
first; Flask-Limiter's refusal reaches an MCP client as the answer to its own request."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient
from flask_wtf import FlaskForm
from flask_wtf.csrf import CSRFProtect
from wtforms import StringField

from flask_tooldiscovery import ToolDiscovery

# (path, body) of one call of ``add(a=2, b=3)`` in each dialect that runs tools, and where its answer says 5.
CALLS: dict[str, tuple[str, dict[str, Any], Callable[[Any], Any]]] = {
    "opal": ("/opal/tools/add", {"parameters": {"a": 2, "b": 3}}, lambda body: body),
    "tdp": ("/api/v1/tools/execute", {"tool_name": "add", "arguments": {"a": 2, "b": 3}},
            lambda body: body["result"]["value"]),
    "explorer": ("/explorer/tools/add/call", {"a": 2, "b": 3}, lambda body: int(body["content"][0]["text"])),
    "oxp": ("/oxp/tools/call", {"request": {"tool_id": "Csrf.add", "input": {"a": 2, "b": 3}}},
            lambda body: body["result"]["value"]),
    "utcp": ("/utcp/tools/add", {"a": 2, "b": 3}, lambda body: body),
    "mcp": ("/mcp", {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add",
                                                                                   "arguments": {"a": 2, "b": 3}}},
            lambda body: body["result"]["structuredContent"]["result"]),
}


class NameForm(FlaskForm):
    name = StringField("name")


def csrf_app(order: str) -> Flask:
    """An app with a Flask-WTF form of its own, CSRFProtect and tools, set up in ``order``."""
    discovery = ToolDiscovery()

    @discovery.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    app = Flask("csrf")
    app.config.update(TESTING=True, SECRET_KEY="test-secret", TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_TITLE="Csrf", TOOLDISCOVERY_SERVER_NAME="Csrf", TOOLDISCOVERY_DIALECTS=[*CALLS])
    csrf = CSRFProtect()

    @app.route("/profile", methods=["GET", "POST"])
    def profile() -> str:
        form = NameForm()
        if form.validate_on_submit():
            return f"saved {form.name.data}"
        return render_template_string("{{ form.csrf_token._value() }}", form=form)

    if order == "csrf first":
        csrf.init_app(app)
        discovery.init_app(app)
    else:
        discovery.init_app(app)
        csrf.init_app(app)
    return app


def form_token(client: FlaskClient) -> str:
    token = client.get("/profile").get_data(as_text=True)
    assert re.fullmatch(r"[\w.-]+", token)
    return token


@pytest.mark.parametrize("order", ["csrf first", "tools first"])
@pytest.mark.parametrize("dialect", sorted(CALLS))
def test_tool_calls_pass_csrfprotect_in_either_order(order: str, dialect: str) -> None:
    """Every dialect's tool call runs with CSRFProtect on the app (no token, no exemption by hand),
    before and after the app's own form has been used."""
    client = csrf_app(order).test_client()
    path, body, result = CALLS[dialect]
    answer = client.post(path, json=body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert result(answer.get_json()) == 5
    form_token(client)  # the session now holds a CSRF secret: a call still needs no token
    again = client.post(path, json=body)
    assert again.status_code == 200 and result(again.get_json()) == 5


@pytest.mark.parametrize("order", ["csrf first", "tools first"])
def test_the_apps_own_form_still_needs_its_token(order: str) -> None:
    app = csrf_app(order)
    client = app.test_client()
    client.post("/mcp", json=CALLS["mcp"][1])  # the tool routes' exemption leaves the form's alone
    refused = client.post("/profile", data={"name": "Ada"})
    assert refused.status_code == 400 and "CSRF token is missing" in refused.get_data(as_text=True)
    wrong = client.post("/profile", data={"name": "Ada", "csrf_token": "not-the-token"})
    assert wrong.status_code == 400
    saved = client.post("/profile", data={"name": "Ada", "csrf_token": form_token(client)})
    assert saved.status_code == 200 and saved.get_data(as_text=True) == "saved Ada"
    exempt = {bp.name for bp in app.extensions["csrf"]._exempt_blueprints}
    assert "tooldiscovery_mcp" in exempt and all(name.startswith("tooldiscovery_") for name in exempt)


def test_tool_routes_keep_their_origin_check_under_csrfprotect() -> None:
    """Exempt from the form token, not from the guard: a foreign Origin is still refused."""
    client = csrf_app("csrf first").test_client()
    for dialect, (path, body, _) in CALLS.items():
        refused = client.post(path, json=body, headers={"Origin": "https://evil.example"})
        assert refused.status_code == 403, dialect


def limited_app(**limiter_options: Any) -> tuple[Flask, Any]:
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    discovery = ToolDiscovery()

    @discovery.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    app = Flask("limited")
    app.config.update(TESTING=True, TOOLDISCOVERY_ALLOW_EXECUTE=True, RATELIMIT_HEADERS_ENABLED=True)
    limiter = Limiter(get_remote_address, app=app, storage_uri="memory://", **limiter_options)
    discovery.init_app(app)
    return app, limiter


def mcp_call(ident: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": "add",
                                                                              "arguments": {"a": 2, "b": 3}}}


def test_flask_limiters_429_answers_the_mcp_request_under_its_own_id() -> None:
    """Flask-Limiter's default limits refuse before the body is read; the JSON-RPC error still
    names the request it answers, so a client can match it (and retries after Retry-After)."""
    app, _ = limited_app(default_limits=["2 per minute"])
    client = app.test_client()
    assert [client.post("/mcp", json=mcp_call(n)).status_code for n in (1, 2)] == [200, 200]
    refused = client.post("/mcp", json=mcp_call("third"))
    assert refused.status_code == 429
    body = refused.get_json()
    assert body["id"] == "third" and body["error"]["message"] == "2 per 1 minute"
    assert int(refused.headers["Retry-After"]) > 0
    batch = client.post("/mcp", json=[mcp_call(4), mcp_call(5)])  # several ids: none can be named
    assert batch.status_code == 429 and batch.get_json()["id"] is None
    not_json = client.post("/mcp", data="{not json", content_type="application/json")
    assert not_json.status_code == 429 and not_json.get_json()["id"] is None


def test_flask_limiter_exempting_discovery_keeps_limiting_calls() -> None:
    """The recipe of the docs page: discovery (GETs, MCP's lists) free, tool calls limited."""
    from flask import request

    app, limiter = limited_app(default_limits=["2 per minute"])

    @limiter.request_filter
    def discovery_is_free() -> bool:
        if not (request.blueprint or "").startswith("tooldiscovery_"):
            return False
        return request.method == "GET" or b'"tools/call"' not in request.get_data(cache=True)

    client = app.test_client()
    for _ in range(4):
        assert client.get("/opal/discovery").status_code == 200
        listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert listed.status_code == 200 and listed.get_json()["result"]["tools"][0]["name"] == "add"
    assert [client.post("/mcp", json=mcp_call(n)).status_code for n in (1, 2, 3)] == [200, 200, 429]
