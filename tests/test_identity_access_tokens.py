"""Only access tokens open a call: a refresh token (or an ID token, a logout token...) signed with
the same key is refused by every JWT verifier, in every dialect, with a 401 whose log line says
why and whose body and challenge say nothing more than ``invalid_token``; and
``TOOLDISCOVERY_JWT_REQUIRED_CLAIMS`` names claims every accepted token must carry.

The tokens of Flask-JWT-Extended are made by the library itself (``create_access_token``,
``create_refresh_token``), with ``TOOLDISCOVERY_JWT_SECRET`` equal to its ``JWT_SECRET_KEY``, as
an app that already issues them would configure it."""

from __future__ import annotations

import logging
import time
from typing import Any

import jwt
import pytest
from flask import Flask
from flask_jwt_extended import JWTManager, create_access_token, create_refresh_token

from flask_tooldiscovery import SettingsError, ToolDiscovery

from .conformance.drivers import DRIVERS
from .test_identity import KeyServer, build, issuer, jwks_config, whoami_tools  # noqa: F401 - the JWKS fixture

SECRET = "flask-jwt-extended-key-" + "k" * 40
DIALECTS = sorted(DRIVERS)


def jwt_extended_app(dialect: str, **config: Any) -> Flask:
    """An app whose Flask-JWT-Extended key is the identity layer's HS256 secret."""
    d = ToolDiscovery()
    whoami_tools(d)
    app = Flask("jwt_extended")
    app.config.update(TESTING=True, JWT_SECRET_KEY=SECRET, TOOLDISCOVERY_DIALECTS=[dialect],
                      TOOLDISCOVERY_ALLOW_EXECUTE=True, TOOLDISCOVERY_JWT_SECRET=SECRET, **config)
    JWTManager(app)
    d.init_app(app)
    return app


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_flask_jwt_extended_refresh_token_is_refused_in_every_dialect(dialect: str, caplog) -> None:
    app = jwt_extended_app(dialect)
    with app.app_context():
        access, refresh = create_access_token("alice"), create_refresh_token("alice")
    driver, client = DRIVERS[dialect], app.test_client()
    ok = driver.result(driver.call(client, "whoami", {}, headers=bearer(access)))
    assert ok.kind == "ok" and ok.value["user_id"] == "alice"
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        refused = driver.call(client, "whoami", {}, headers=bearer(refresh))
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Bearer realm="tools", error="invalid_token"'
    assert "refresh" not in refused.get_data(as_text=True)
    assert "not an access token: claim type is 'refresh'" in caplog.text


def hs256(claims: dict[str, Any], **header: Any) -> str:
    payload = {"sub": "alice", "exp": int(time.time()) + 300, **claims}
    return jwt.encode(payload, SECRET, algorithm="HS256", headers=header or None)


KINDS = {  # (header, claims) -> accepted
    "no typ": ({}, {}, True),
    "typ JWT": ({"typ": "JWT"}, {}, True),
    "typ jwt, lower case": ({"typ": "jwt"}, {}, True),
    "RFC 9068 at+jwt": ({"typ": "at+jwt"}, {}, True),
    "application/at+jwt": ({"typ": "application/at+jwt"}, {}, True),
    "AT+JWT": ({"typ": "AT+JWT"}, {}, True),
    "Flask-JWT-Extended access": ({"typ": "JWT"}, {"type": "access"}, True),
    "Keycloak access (typ Bearer)": ({}, {"typ": "Bearer"}, True),
    "Cognito access (token_use)": ({}, {"token_use": "access"}, True),
    "typ refresh+jwt": ({"typ": "refresh+jwt"}, {}, False),
    "typ id+jwt": ({"typ": "id+jwt"}, {}, False),
    "typ logout+jwt": ({"typ": "logout+jwt"}, {}, False),
    "typ dpop+jwt": ({"typ": "dpop+jwt"}, {}, False),
    "typ not a string": ({"typ": 7}, {}, False),
    "claim type refresh": ({}, {"type": "refresh"}, False),
    "claim type not a string": ({}, {"type": ["access"]}, False),
    "Keycloak refresh": ({}, {"typ": "Refresh"}, False),
    "Keycloak ID token": ({}, {"typ": "ID"}, False),
    "Cognito ID token": ({}, {"token_use": "id"}, False),
    "at+jwt header, refresh claim": ({"typ": "at+jwt"}, {"type": "refresh"}, False),
}


@pytest.mark.parametrize("case", sorted(KINDS))
def test_the_kind_of_a_token_is_read_from_its_typ_header_and_kind_claims(case: str) -> None:
    header, claims, accepted = KINDS[case]
    client = jwt_extended_app("tdp").test_client()
    r = client.post("/api/v1/tools/execute", json={"tool_name": "whoami"}, headers=bearer(hs256(claims, **header)))
    assert r.status_code == (200 if accepted else 401), r.get_json()
    if accepted:
        assert r.get_json()["result"]["user_id"] == "alice"


def signed(server: KeyServer, header: dict[str, Any], **claims: Any) -> str:
    key = server.keys["k1"]
    payload = {"iss": "https://issuer.test", "aud": "https://tools.test", "sub": "alice",
               "exp": int(time.time()) + 300, "scope": "tools.read", **claims}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": "k1", **header})


def test_a_jwks_verified_refresh_or_id_token_is_refused(issuer: KeyServer, caplog) -> None:  # noqa: F811
    d = ToolDiscovery()
    whoami_tools(d)
    client = build("opal", d, **jwks_config(issuer)).test_client()

    def call(token: str) -> int:
        return client.post("/opal/tools/whoami", json={}, headers=bearer(token)).status_code

    assert call(signed(issuer, {"typ": "at+jwt"})) == 200
    assert call(signed(issuer, {"typ": "refresh+jwt"})) == 401
    assert call(signed(issuer, {}, type="refresh")) == 401
    assert call(signed(issuer, {}, token_use="id")) == 401
    assert "not an access token: header typ 'refresh+jwt'" in caplog.text


MCP_RESOURCE = "http://localhost/mcp"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def mcp_oauth_config(server: KeyServer, **more: Any) -> dict[str, Any]:
    return {"TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS": ["https://issuer.test"],
            "TOOLDISCOVERY_MCP_JWKS_URL": server.url,  # type: ignore[attr-defined]
            "TOOLDISCOVERY_MCP_RESOURCE": MCP_RESOURCE, **more}


def test_an_oauth_resource_servers_refresh_token_is_refused(issuer: KeyServer) -> None:  # noqa: F811
    d = ToolDiscovery()
    whoami_tools(d)
    client = build("mcp", d, **mcp_oauth_config(issuer)).test_client()

    def initialize(token: str) -> Any:
        return client.post("/mcp", json=INITIALIZE, headers=bearer(token))

    assert initialize(signed(issuer, {"typ": "at+jwt"}, aud=MCP_RESOURCE)).status_code == 200
    refused = initialize(signed(issuer, {"typ": "refresh+jwt"}, aud=MCP_RESOURCE))
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer error="invalid_token", resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"')
    assert initialize(signed(issuer, {}, aud=MCP_RESOURCE, type="refresh")).status_code == 401


# -- TOOLDISCOVERY_JWT_REQUIRED_CLAIMS ---------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_required_claims_apply_to_the_shared_secrets_tokens(dialect: str, caplog) -> None:
    app = jwt_extended_app(dialect, TOOLDISCOVERY_JWT_REQUIRED_CLAIMS="jti, type")
    with app.app_context():
        access = create_access_token("alice")  # Flask-JWT-Extended's carry a jti and a type
    driver, client = DRIVERS[dialect], app.test_client()
    assert driver.result(driver.call(client, "whoami", {}, headers=bearer(access))).kind == "ok"
    without = driver.call(client, "whoami", {}, headers=bearer(hs256({"type": "access"})))
    assert without.status_code == 401 and "jti" not in without.get_data(as_text=True)
    assert "token lacks claim jti" in caplog.text


def test_required_claims_apply_to_jwks_oxp_and_oauth_resource_tokens(issuer: KeyServer) -> None:  # noqa: F811
    required = {"TOOLDISCOVERY_JWT_REQUIRED_CLAIMS": ["jti"]}
    d = ToolDiscovery()
    whoami_tools(d)
    opal = build("opal", d, **jwks_config(issuer), **required).test_client()
    assert opal.post("/opal/tools/whoami", json={}, headers=bearer(signed(issuer, {}, jti="1"))).status_code == 200
    assert opal.post("/opal/tools/whoami", json={}, headers=bearer(signed(issuer, {}))).status_code == 401

    d = ToolDiscovery()
    whoami_tools(d)
    oxp, driver = build("oxp", d, TOOLDISCOVERY_OXP_JWT_SECRET=SECRET, **required).test_client(), DRIVERS["oxp"]
    assert driver.call(oxp, "whoami", {}, headers=bearer(hs256({"jti": "1"}))).status_code == 200
    assert driver.call(oxp, "whoami", {}, headers=bearer(hs256({}))).status_code == 401

    d = ToolDiscovery()
    whoami_tools(d)
    mcp = build("mcp", d, **mcp_oauth_config(issuer), **required).test_client()
    with_jti = signed(issuer, {"typ": "at+jwt"}, aud=MCP_RESOURCE, jti="1")
    assert mcp.post("/mcp", json=INITIALIZE, headers=bearer(with_jti)).status_code == 200
    no_jti = signed(issuer, {"typ": "at+jwt"}, aud=MCP_RESOURCE)
    assert mcp.post("/mcp", json=INITIALIZE, headers=bearer(no_jti)).status_code == 401


@pytest.mark.parametrize("value, message", [
    (["sub"], "TOOLDISCOVERY_JWT_REQUIRED_CLAIMS only applies where JWTs are verified"),
    ("sub jti", "TOOLDISCOVERY_JWT_REQUIRED_CLAIMS holds names (a list, or comma-separated), not 'sub jti'"),
    ([7], "TOOLDISCOVERY_JWT_REQUIRED_CLAIMS must hold strings"),
    ({"sub": True}, "TOOLDISCOVERY_JWT_REQUIRED_CLAIMS must be a list"),
])
def test_required_claims_that_would_change_nothing_or_are_malformed_stop_init_app(value: Any, message: str) -> None:
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_BEARER_TOKEN="t",
                      TOOLDISCOVERY_JWT_REQUIRED_CLAIMS=value)
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ToolDiscovery().init_app(app)


def test_required_claims_are_read_as_a_list_or_a_comma_separated_string() -> None:
    for value in (["sub", "jti"], "sub, jti", "sub,jti,"):
        app = jwt_extended_app("tdp", TOOLDISCOVERY_JWT_REQUIRED_CLAIMS=value)
        assert ToolDiscovery.state(app).settings.jwt_required_claims == ("sub", "jti")
