"""The recipes of docs/topics/identity-recipes.rst, run as the page shows them (each block the page
says to save is executed as that module), with the real libraries: a user signed in through a real
Flask-Login login view calls tools from the explorer's API and over MCP with the session cookie;
Flask-JWT-Extended's access tokens open calls and its refresh tokens do not (by the setting, and by
the library in a hook, which also honours its blocklist); an Authlib ``ResourceProtector`` token
without the scope is a 403 naming the scope and MCP's resource metadata. And the same credentials
give the tool the same ``ctx.user_id`` in every dialect."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_tooldiscovery import ToolDiscovery

from .conformance.drivers import DRIVERS
from .test_docs import blocks_of, run_python, saved_name

PAGE = Path(__file__).resolve().parent.parent / "docs" / "topics" / "identity-recipes.rst"
DIALECTS = sorted(DRIVERS)


def recipe(name: str) -> dict[str, Any]:
    """The namespace of the block the page says to save as ``name.py``, run afresh."""
    text = PAGE.read_text()
    for language, source, line in blocks_of(text):
        if language == "python" and saved_name(text, line) == name:
            namespace = run_python(source, f"{PAGE.name}:{line}", name)
            namespace["app"].config["TESTING"] = True
            return namespace
    raise LookupError(f"{PAGE.name} saves no {name}.py")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def user_seen(dialect: str, client: FlaskClient, **kw: Any) -> Any:
    """The ``ctx.user_id`` the recipe's ``whoami`` tool saw, called through ``dialect``."""
    driver = DRIVERS[dialect]
    result = driver.result(driver.call(client, "whoami", {}, **kw))
    assert result.kind == "ok", (dialect, result)
    value = result.value
    return value.get("value", value) if isinstance(value, dict) else value


# -- Flask-Login ---------------------------------------------------------------------------------------


def signed_in(app: Flask, user: str = "alice", password: str | None = None) -> FlaskClient:
    client = app.test_client()
    r = client.post("/login", data={"username": user, "password": password or f"{user}-password"})
    assert r.status_code == 302, r.get_data(as_text=True)
    return client


def test_the_login_view_signs_in_and_sends_back_only_to_this_site() -> None:
    app = recipe("login_app")["app"]
    client = app.test_client()
    assert "<form" in client.get("/login").get_data(as_text=True)
    assert client.post("/login", data={"username": "alice", "password": "wrong"}).status_code == 401
    assert signed_in(app).application is app
    for evil in ("//evil.example/x", "/\\evil.example", "https://evil.example"):
        r = client.post(f"/login?next={evil}", data={"username": "alice", "password": "alice-password"})
        assert r.headers["Location"] == "/"
    r = client.post("/login?next=/explorer/", data={"username": "alice", "password": "alice-password"})
    assert r.headers["Location"] == "/explorer/"


def test_a_signed_in_user_calls_from_the_explorer_api_and_over_mcp() -> None:
    app = recipe("login_app")["app"]
    anonymous = app.test_client()
    for dialect in ("explorer", "mcp"):
        assert DRIVERS[dialect].call(anonymous, "whoami", {}).status_code == 401
    client = signed_in(app)
    assert user_seen("explorer", client) == "alice"
    assert user_seen("mcp", client) == "alice"
    orders = DRIVERS["mcp"].result(DRIVERS["mcp"].call(client, "my_orders", {}))
    assert orders.kind == "ok"


def test_a_tool_needing_a_scope_the_user_lacks_is_not_theirs() -> None:
    app = recipe("login_app")["app"]
    alice, bob = signed_in(app), signed_in(app, "bob")
    assert "my_orders" in DRIVERS["mcp"].names(DRIVERS["mcp"].discover(alice))
    assert "my_orders" not in DRIVERS["mcp"].names(DRIVERS["mcp"].discover(bob))
    assert DRIVERS["mcp"].result(DRIVERS["mcp"].call(bob, "my_orders", {})).kind != "ok"
    assert user_seen("mcp", bob) == "bob"


def test_another_sites_page_cannot_call_with_the_users_cookie() -> None:
    client = signed_in(recipe("login_app")["app"])
    driver = DRIVERS["explorer"]
    r = driver.call(client, "whoami", {}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    form = client.post(driver.call_path("whoami", client), data={"x": "1"})  # what a cross-site form can send
    assert form.status_code == 415


# -- Flask-JWT-Extended ---------------------------------------------------------------------------------


def issued(client: FlaskClient, user: str = "alice") -> dict[str, str]:
    tokens: dict[str, str] = client.post("/token", json={"username": user}).get_json()
    return tokens


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_shared_key_takes_access_tokens_and_refuses_refresh_tokens(dialect: str, caplog) -> None:
    client = recipe("jwt_app")["app"].test_client()
    tokens = issued(client)
    assert user_seen(dialect, client, headers=bearer(tokens["access_token"])) == "alice"
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        r = DRIVERS[dialect].call(client, "whoami", {}, headers=bearer(tokens["refresh_token"]))
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert "not an access token: claim type is 'refresh'" in caplog.text
    renewed = client.post("/refresh", headers=bearer(tokens["refresh_token"])).get_json()["access_token"]
    assert user_seen(dialect, client, headers=bearer(renewed)) == "alice"


def test_the_shared_key_refuses_a_token_without_a_required_claim(caplog) -> None:
    app = recipe("jwt_app")["app"]
    no_jti = jwt.encode({"sub": "alice", "type": "access", "exp": int(time.time()) + 60},
                        app.config["JWT_SECRET_KEY"], algorithm="HS256")
    r = DRIVERS["tdp"].call(app.test_client(), "whoami", {}, headers=bearer(no_jti))
    assert r.status_code == 401 and "token lacks claim jti" in caplog.text


def test_the_hook_lets_flask_jwt_extended_verify_and_honours_its_blocklist() -> None:
    namespace = recipe("jwt_hook_app")
    app = namespace["app"]
    from flask_jwt_extended import create_access_token, create_refresh_token, decode_token

    with app.app_context():
        access, refresh = create_access_token("alice"), create_refresh_token("alice")
        jti = decode_token(access)["jti"]
    client = app.test_client()
    for dialect in DIALECTS:
        assert user_seen(dialect, client, headers=bearer(access)) == "alice"
        assert DRIVERS[dialect].call(client, "whoami", {}, headers=bearer(refresh)).status_code == 401
        assert DRIVERS[dialect].call(client, "whoami", {}).status_code == 401
    namespace["REVOKED"].add(jti)  # signed out
    assert DRIVERS["mcp"].call(client, "whoami", {}, headers=bearer(access)).status_code == 401


# -- Authlib's ResourceProtector ----------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_resource_protector_token_without_the_scope_is_a_403_naming_it(dialect: str, caplog) -> None:
    client = recipe("authlib_app")["app"].test_client()
    driver = DRIVERS[dialect]
    assert user_seen(dialect, client, headers=bearer("tok-alice")) == "alice"
    assert driver.call(client, "whoami", {}).status_code == 401
    assert driver.call(client, "whoami", {}, headers=bearer("tok-unknown")).status_code == 401
    r = driver.call(client, "whoami", {}, headers=bearer("tok-carol"))
    assert r.status_code == 403
    challenge = r.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge and challenge.endswith('scope="tools"')
    if dialect == "mcp":
        assert challenge == ('Bearer error="insufficient_scope", resource_metadata='
                             '"https://provider.example.com/.well-known/oauth-protected-resource/mcp", scope="tools"')
    assert "the token lacks the tools scope" in caplog.text


def test_mcp_serves_the_metadata_that_names_the_authorization_server() -> None:
    client = recipe("authlib_app")["app"].test_client()
    document = client.get("/.well-known/oauth-protected-resource/mcp").get_json()
    assert document["resource"] == "https://provider.example.com/mcp"
    assert document["authorization_servers"] == ["https://provider.example.com"]


# -- one user, every dialect -----------------------------------------------------------------------------


def session_client() -> FlaskClient:
    return signed_in(recipe("login_app")["app"])


def jwt_client() -> FlaskClient:
    client = recipe("jwt_app")["app"].test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = "Bearer " + issued(client)["access_token"]
    return client


def authlib_client() -> FlaskClient:
    client = recipe("authlib_app")["app"].test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = "Bearer tok-alice"
    return client


CREDENTIALS: dict[str, Callable[[], FlaskClient]] = {
    "Flask-Login session": session_client, "Flask-JWT-Extended token": jwt_client,
    "Authlib token": authlib_client}


@pytest.mark.parametrize("credentials", sorted(CREDENTIALS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_tool_sees_the_same_user_id_in_every_dialect(dialect: str, credentials: str) -> None:
    client = CREDENTIALS[credentials]()
    assert dialect in ToolDiscovery.pipelines(client.application)
    assert user_seen(dialect, client) == "alice"
