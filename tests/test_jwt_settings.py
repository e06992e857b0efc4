"""Every JWT setting of the identity layer takes effect in every mode it is given with, or
``init_app`` refuses the combination naming the keys; a token that fails verification for any
reason is a 401 with the challenge, never a 500; the start-up warning names exactly the dialects
that run tools for anyone. (The same under gunicorn: tests/test_identity_server.py.)"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flask import Flask

from flask_tooldiscovery import SettingsError, ToolContext, ToolDiscovery

from .conformance.drivers import DRIVERS
from .test_identity import FIVE, KeyServer, issuer, jwks_config  # noqa: F401 - the JWKS server fixture

SECRET = "jwt-settings-secret-" + "x" * 40


def whoami_app(**config: Any) -> Flask:
    d = ToolDiscovery()

    @d.tool
    def whoami(ctx: ToolContext) -> dict:
        """Who called."""
        return {"user_id": ctx.user_id}

    app = Flask("jwt")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": FIVE, "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                       **config})
    d.init_app(app)
    return app


def hs256(**claims: Any) -> dict[str, str]:
    payload = {"sub": "alice", "exp": int(time.time()) + 300, **claims}
    return {"Authorization": "Bearer " + jwt.encode({k: v for k, v in payload.items() if v is not None},
                                                    SECRET, algorithm="HS256")}


def refused(response: Any) -> bool:
    return response.status_code == 401 and 'error="invalid_token"' in response.headers.get("WWW-Authenticate", "")


# -- JWT_ISSUER and JWT_AUDIENCE with JWT_SECRET ------------------------------------------------------

@pytest.mark.parametrize("dialect", FIVE)
def test_the_issuer_is_checked_with_a_shared_secret(dialect: str) -> None:
    client = whoami_app(TOOLDISCOVERY_JWT_SECRET=SECRET, TOOLDISCOVERY_JWT_ISSUER="https://issuer.test").test_client()
    driver = DRIVERS[dialect]
    ok = driver.result(driver.call(client, "whoami", {}, headers=hs256(iss="https://issuer.test")))
    assert ok.kind == "ok" and ok.value == {"user_id": "alice"}
    for wrong in ("https://evil.test", None):  # another issuer, no issuer
        assert refused(driver.call(client, "whoami", {}, headers=hs256(iss=wrong)))


@pytest.mark.parametrize("dialect", FIVE)
def test_a_token_naming_an_audience_is_refused_when_none_is_configured(dialect: str) -> None:
    """RFC 7519 4.1.3, and PyJWT's own default: a token meant for someone else is not ours."""
    client = whoami_app(TOOLDISCOVERY_JWT_SECRET=SECRET).test_client()
    driver = DRIVERS[dialect]
    assert refused(driver.call(client, "whoami", {}, headers=hs256(aud="https://other-service.test")))
    assert driver.result(driver.call(client, "whoami", {}, headers=hs256())).kind == "ok"
    configured = whoami_app(TOOLDISCOVERY_JWT_SECRET=SECRET, TOOLDISCOVERY_JWT_AUDIENCE="tools").test_client()
    assert driver.result(driver.call(configured, "whoami", {}, headers=hs256(aud="tools"))).kind == "ok"
    assert refused(driver.call(configured, "whoami", {}, headers=hs256()))  # no aud: refused once one is set
    assert refused(driver.call(configured, "whoami", {}, headers=hs256(aud="https://other-service.test")))


def test_oxps_own_jwt_refuses_a_foreign_audience_when_none_is_configured() -> None:
    client = whoami_app(TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_JWT_SECRET=SECRET,
                        TOOLDISCOVERY_OXP_TOOLKIT="Who").test_client()
    call = {"request": {"tool_id": "Who.whoami"}}
    assert refused(client.post("/oxp/tools/call", json=call, headers=hs256(aud="https://other-service.test")))
    assert client.post("/oxp/tools/call", json=call, headers=hs256()).status_code == 200


@pytest.mark.parametrize("config, named", [
    ({"TOOLDISCOVERY_JWT_ISSUER": "https://issuer.test"}, ["TOOLDISCOVERY_JWT_ISSUER"]),
    ({"TOOLDISCOVERY_JWT_AUDIENCE": "tools", "TOOLDISCOVERY_BEARER_TOKEN": "t"}, ["TOOLDISCOVERY_JWT_AUDIENCE"]),
    ({"TOOLDISCOVERY_JWT_ALGORITHMS": ["ES256"], "TOOLDISCOVERY_JWT_SECRET": SECRET},
     ["TOOLDISCOVERY_JWT_ALGORITHMS", "TOOLDISCOVERY_JWT_JWKS_URL"]),
    ({"TOOLDISCOVERY_JWT_JWKS_COOLDOWN": 5, "TOOLDISCOVERY_JWT_SECRET": SECRET},
     ["TOOLDISCOVERY_JWT_JWKS_COOLDOWN", "TOOLDISCOVERY_JWT_JWKS_URL"]),
    ({"TOOLDISCOVERY_OXP_JWT_AUDIENCE": "tools", "TOOLDISCOVERY_OXP_JWT_REQUIRE_EXP": False},
     ["TOOLDISCOVERY_OXP_JWT_AUDIENCE", "TOOLDISCOVERY_OXP_JWT_REQUIRE_EXP", "TOOLDISCOVERY_OXP_JWT_SECRET"]),
])
def test_a_jwt_key_that_would_change_nothing_is_refused_naming_it(config: dict[str, Any], named: list[str]) -> None:
    app = Flask("stray")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "oxp"], **config)
    with pytest.raises(SettingsError) as info:
        ToolDiscovery().init_app(app)
    assert all(key in str(info.value) for key in named), info.value


# -- JWT_ALGORITHMS: public-key algorithms only ------------------------------------------------------

@pytest.mark.parametrize("algorithms", [["RS256", "HS256"], "HS512", ["ES256", "none"], ["RS265"]])
@pytest.mark.parametrize("beside", [
    {"TOOLDISCOVERY_JWT_JWKS_URL": "https://issuer.test/jwks.json"},
    {"TOOLDISCOVERY_DIALECTS": ["mcp"], "TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS": ["https://issuer.test"]},
])
def test_a_shared_secret_algorithm_beside_a_jwks_is_refused_at_start(algorithms: Any, beside: dict[str, Any]) -> None:
    app = Flask("algs")
    app.config.update(TOOLDISCOVERY_JWT_ALGORITHMS=algorithms, **beside)
    with pytest.raises(SettingsError) as info:
        ToolDiscovery().init_app(app)
    assert "TOOLDISCOVERY_JWT_ALGORITHMS" in str(info.value) and "TOOLDISCOVERY_JWT_JWKS_URL" in str(info.value)
    wrong = [a for a in ([algorithms] if isinstance(algorithms, str) else algorithms) if a not in ("RS256", "ES256")]
    assert all(a in str(info.value) for a in wrong)


# -- tokens that fail verification: 401, never 500 ----------------------------------------------------

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hmac_token(header: dict[str, Any], payload: dict[str, Any], key: bytes) -> str:
    """A JWT "signed" with HMAC-SHA256 over ``key`` (PyJWT refuses to use a PEM as an HMAC secret)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    return f"{signing_input}.{b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest())}"


def failing_tokens(keys: KeyServer) -> dict[str, str]:
    """Tokens no verifier may accept, each failing differently, for a JWKS server holding an RSA
    key ``k1`` and an EC key ``k2``."""
    claims = {"iss": "https://issuer.test", "aud": "https://tools.test", "sub": "mallory",
              "exp": int(time.time()) + 300}
    rsa_key, ec_key = keys.keys["k1"], keys.keys["k2"]
    pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {
        "hs256 signed with the public key's PEM": hmac_token({"alg": "HS256", "typ": "JWT", "kid": "k1"}, claims, pem),
        "alg none": f"{b64(json.dumps({'alg': 'none', 'kid': 'k1'}).encode())}.{b64(json.dumps(claims).encode())}.",
        "garbage header": "bm90IGpzb24.e30.c2ln",
        "header not an object": f"{b64(b'[1]')}.{b64(json.dumps(claims).encode())}.c2ln",
        "RS256 naming the EC key": jwt.encode(claims, rsa_key, algorithm="RS256", headers={"kid": "k2"}),
        "ES256 naming the RSA key": jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "k1"}),
        "unknown key id": jwt.encode(claims, rsa_key, algorithm="RS256", headers={"kid": "k9"}),
    }


@pytest.fixture
def two_keys(issuer: KeyServer) -> KeyServer:  # noqa: F811
    issuer.add("k2", ec.generate_private_key(ec.SECP256R1()))
    return issuer


@pytest.mark.parametrize("dialect", FIVE)
def test_no_failing_token_is_a_500_on_calls(two_keys: KeyServer, dialect: str) -> None:
    client = whoami_app(**jwks_config(two_keys)).test_client()
    driver = DRIVERS[dialect]
    for name, token in failing_tokens(two_keys).items():
        r = driver.call(client, "whoami", {}, headers={"Authorization": f"Bearer {token}"})
        assert refused(r), (name, r.status_code, r.get_data(as_text=True))
    good = {"Authorization": f"Bearer {two_keys.token('k2')}"}
    assert driver.result(driver.call(client, "whoami", {}, headers=good)).kind == "ok"


@pytest.mark.parametrize("protected", [True, False])
@pytest.mark.parametrize("dialect", ["opal", "tdp", "explorer", "oxp"])
def test_no_failing_token_is_a_500_on_discovery(two_keys: KeyServer, dialect: str, protected: bool) -> None:
    """Protected discovery refuses with the challenge; open discovery shows the anonymous view."""
    client = whoami_app(**jwks_config(two_keys), TOOLDISCOVERY_AUTH_DISCOVERY=protected).test_client()
    driver = DRIVERS[dialect]
    for name, token in failing_tokens(two_keys).items():
        r = driver.discover(client, headers={"Authorization": f"Bearer {token}"})
        assert refused(r) if protected else r.status_code == 200, (name, r.status_code)


def test_an_oauth_resource_server_refuses_failing_tokens_with_its_challenge(two_keys: KeyServer) -> None:
    app = whoami_app(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["https://issuer.test"],
                     TOOLDISCOVERY_MCP_JWKS_URL=two_keys.url, TOOLDISCOVERY_MCP_RESOURCE="https://tools.test")  # type: ignore[attr-defined]
    client = app.test_client()
    for name, token in failing_tokens(two_keys).items():
        r = DRIVERS["mcp"].call(client, "whoami", {}, headers={"Authorization": f"Bearer {token}"})
        assert refused(r) and "resource_metadata=" in r.headers["WWW-Authenticate"], (name, r.status_code)


# -- the start-up warning -----------------------------------------------------------------------------

def startup_warning(caplog: pytest.LogCaptureFixture, **config: Any) -> str:
    app = Flask("warned")
    app.config.update(TOOLDISCOVERY_ALLOW_EXECUTE=True, **config)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        ToolDiscovery().init_app(app)
    return "\n".join(r.getMessage() for r in caplog.records if "runs tools" in r.getMessage()
                     or "run tools" in r.getMessage())


def test_the_warning_names_exactly_the_dialects_that_are_open(caplog: pytest.LogCaptureFixture) -> None:
    everything = ["explorer", "opal", "oxp", "tdp", "mcp", "utcp"]
    assert startup_warning(caplog, TOOLDISCOVERY_DIALECTS=everything, TOOLDISCOVERY_JWT_SECRET=SECRET) == ""
    text = startup_warning(caplog, TOOLDISCOVERY_DIALECTS=everything, TOOLDISCOVERY_JWT_SECRET=SECRET,
                           TOOLDISCOVERY_OPEN_DIALECTS=["tdp", "utcp"])
    assert "tdp" in text and "utcp" in text
    assert not any(f"{name} runs tools" in text for name in ("explorer", "opal", "oxp", "mcp")), text
    anyone = startup_warning(caplog, TOOLDISCOVERY_DIALECTS=everything)
    assert all(f"{name}" in anyone for name in everything), anyone
