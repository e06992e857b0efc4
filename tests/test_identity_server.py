"""The identity layer under a real gunicorn (gthread, 2 workers x 4 threads), attacked as an
outsider would: a body that renames the caller a token named, tokens of another issuer or meant for
another audience, and tokens that fail verification in every way PyJWT can fail (alg confusion,
``alg: none``, a garbage header, a key id naming a key of the wrong type), against a real JWKS
server. Every one is a 401 with the challenge, on calls and on discovery; none is a 500."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from .conftest import live_server
from .loopback import Receiver
from .test_identity import KeyServer
from .test_jwt_settings import failing_tokens
from .test_operating_server import app_servers

pytestmark = pytest.mark.slow

SECRET = "gunicorn-identity-secret-" + "x" * 40
ISSUER = "https://issuer.test"


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(**create_app_args)``: the identity app under gunicorn gthread (2 workers); its base URL."""
    with app_servers("tests.apps.identity_app:create_app", "/oxp/health") as start_one:
        yield functools.partial(start_one, workers=2)


def calls(base: str, claimed: str | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    """One call of ``whoami`` per dialect; Opal and OXP carry ``claimed`` as their body's user id."""
    credentials = {"user_id": claimed, "access_token": "t"} if claimed else {}
    return {
        "opal": (f"{base}/opal/tools/whoami", {"parameters": {}, "auth": {"provider": "OptiID",
                                                                         "credentials": credentials}}),
        "oxp": (f"{base}/oxp/tools/call", {"request": {"tool_id": "Who.whoami",
                                                       "context": {"user_id": claimed} if claimed else {}}}),
        "tdp": (f"{base}/api/v1/tools/execute", {"tool_name": "whoami"}),
        "utcp": (f"{base}/utcp/tools/whoami", {}),
        "explorer": (f"{base}/explorer/tools/whoami/call", {}),
        "mcp": (f"{base}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "whoami", "arguments": {}}}),
    }


DISCOVERY = ["/opal/discovery", "/oxp/tools", "/api/v1/tools", "/utcp", "/explorer/tools"]
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **MCP_HEADERS}


def hs256(**claims: Any) -> str:
    payload = {"sub": "alice", "iss": ISSUER, "exp": int(time.time()) + 300, **claims}
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, SECRET, algorithm="HS256")


def refused(response: requests.Response) -> bool:
    return response.status_code == 401 and 'error="invalid_token"' in response.headers.get("WWW-Authenticate", "")


def test_the_body_cannot_rename_the_caller_a_token_named(serve: Any) -> None:
    base = serve(secret=SECRET, issuer=ISSUER)
    for dialect in ("opal", "oxp"):
        url, body = calls(base, claimed="bob")[dialect]
        r = requests.post(url, json=body, headers=bearer(hs256()), timeout=10)
        assert r.status_code == 200, r.text
        value = r.json() if dialect == "opal" else r.json()["result"]["value"]
        assert value == {"user_id": "alice", "subject": "alice", "claimed_user_id": "bob"}
    # OXP: the tool requires a user id, and the token's subject is one.
    url, body = calls(base)["oxp"]
    r = requests.post(url, json=body, headers=bearer(hs256()), timeout=10)
    assert r.status_code == 200 and r.json()["result"]["value"]["user_id"] == "alice", r.text


def test_a_task_keeps_the_caller_the_token_named_and_the_bodys_claim(serve: Any) -> None:
    """Opal's async_callback: the call runs as a task after the 202; who it runs for does not change."""
    receiver = Receiver()
    try:
        base = serve(secret=SECRET, issuer=ISSUER, callback_hosts="127.0.0.1")
        url = receiver.url()
        body = {"parameters": {}, "auth": {"provider": "OptiID", "credentials": {"user_id": "bob"}},
                "async_callback": {"url": url, "tool_call_id": "tc-1"}}
        r = requests.post(f"{base}/opal/tools/whoami_later", json=body, headers=bearer(hs256()), timeout=10)
        assert r.status_code == 202, r.text
        [(_, delivered)] = receiver.wait(url)
        assert json.loads(delivered)["content"] == {"user_id": "alice", "subject": "alice",
                                                    "claimed_user_id": "bob"}
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def test_a_shared_secrets_tokens_of_another_issuer_or_audience_run_nothing(serve: Any) -> None:
    base = serve(secret=SECRET, issuer=ISSUER)
    for name, token in {"another issuer": hs256(iss="https://evil.test"), "no issuer": hs256(iss=None),
                        "an audience not configured": hs256(aud="https://other-service.test")}.items():
        for dialect, (url, body) in calls(base, claimed="bob").items():
            r = requests.post(url, json=body, headers=bearer(token), timeout=10)
            assert refused(r), (name, dialect, r.status_code, r.text)


def test_refresh_tokens_signed_with_the_shared_secret_run_nothing(serve: Any) -> None:
    """The app's Flask-JWT-Extended key is the identity layer's secret: its access tokens call, its
    refresh tokens (and a token typed as another kind) are refused by every dialect, on every worker."""
    from flask import Flask
    from flask_jwt_extended import JWTManager, create_access_token, create_refresh_token

    issuer = Flask("issuer")
    issuer.config.update(JWT_SECRET_KEY=SECRET, JWT_ENCODE_ISSUER=ISSUER)
    JWTManager(issuer)
    with issuer.app_context():
        access, refresh = create_access_token("alice"), create_refresh_token("alice")
    base = serve(secret=SECRET, issuer=ISSUER)
    others = {"Flask-JWT-Extended refresh token": refresh,
              "RFC 9068-style refresh+jwt": jwt.encode({"sub": "alice", "iss": ISSUER, "exp": int(time.time()) + 60},
                                                       SECRET, algorithm="HS256", headers={"typ": "refresh+jwt"})}
    for dialect, (url, body) in calls(base).items():
        for _ in range(2):  # both workers, most likely
            assert requests.post(url, json=body, headers=bearer(access), timeout=10).status_code == 200, dialect
        for name, token in others.items():
            r = requests.post(url, json=body, headers=bearer(token), timeout=10)
            assert refused(r), (name, dialect, r.status_code, r.text)


@pytest.fixture
def keys() -> Iterator[KeyServer]:
    """A real JWKS server (werkzeug, threaded) holding an RSA key k1 and an EC key k2."""
    server = KeyServer()
    server.add("k1", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    server.add("k2", ec.generate_private_key(ec.SECP256R1()))
    with live_server(server.app) as base:
        server.url = f"{base}/jwks.json"  # type: ignore[attr-defined]
        yield server


def test_no_token_that_fails_verification_is_a_500(serve: Any, keys: KeyServer) -> None:
    base = serve(jwks_url=keys.url, issuer=ISSUER, audience="https://tools.test",  # type: ignore[attr-defined]
                 auth_discovery=True)
    for name, token in failing_tokens(keys).items():
        for dialect, (url, body) in calls(base).items():
            r = requests.post(url, json=body, headers=bearer(token), timeout=10)
            assert refused(r), (name, dialect, r.status_code, r.text)
        for path in DISCOVERY:
            r = requests.get(base + path, headers=bearer(token), timeout=10)
            assert refused(r), (name, path, r.status_code, r.text)
    good = bearer(keys.token("k1"))
    for dialect, (url, body) in calls(base).items():
        assert requests.post(url, json=body, headers=good, timeout=10).status_code == 200, dialect
    for path in DISCOVERY:
        assert requests.get(base + path, headers=good, timeout=10).status_code == 200, path
