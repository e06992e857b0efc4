"""A tool call with one of the app's own OAuth access tokens against the same call with an RS256 JWT
of an outside issuer, verified against its JWKS (the identity layer's ``JwksVerifier``, keys fetched
once and cached): what a team pays for being its users' authorization server instead of trusting
an outside one. Target (issue #38): no more than the JWT's cost.

The app is ``tests/apps/oauth_login_app.py`` (Flask-Login, one tool ``whoami`` that returns
``ctx.user_id``), MCP ``tools/call`` in process (requests straight into the WSGI callable, no
sockets, as ``bench_calls.py``), three ways:

* ``JWT (JWKS)``: the app with the authorization server off and ``TOOLDISCOVERY_JWT_JWKS_URL`` set
  to a JWKS served on loopback; an RS256 token (2048-bit key) with ``iss``, ``aud``, ``exp``;
* ``own token, in process``: the authorization server on, its records in the process
  (``STATE_STORAGE_URI`` unset: one worker);
* ``own token, Redis``: the same with its records in a redis-server of its own (started here on a
  free port; every worker and host reads them: each call reads the token's and its grant's record
  in one ``MGET``).

Each own token is obtained as a client would: registered (RFC 7591), alice signed in on the app's
login form, the consent form posted with Allow, the code redeemed with its PKCE verifier.

Run: ``python bench/bench_oauth_tokens.py [ROUNDS]``. Rounds interleave the cases; each case's figure
is the median over rounds of its microseconds per call (``best``: the fastest round, nearer what a
quiet machine gives), and the ratio is the median of (case / the JWT case measured just before it)
over rounds. bench/RESULTS.rst ("OAuth tokens") records runs.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import logging
import re
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
logging.disable(logging.CRITICAL)

import jwt  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from flask import Flask, jsonify  # noqa: E402
from timing import against, calibrated, wsgi_request  # noqa: E402

from tests.apps.oauth_login_app import create_app  # noqa: E402
from tests.loopback import RedisServer, live_server, redis_binary  # noqa: E402

ISSUER, AUDIENCE, KID = "https://login.example.test", "http://127.0.0.1/mcp", "bench-1"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}


@contextmanager
def jwks_server(key: rsa.RSAPrivateKey) -> Iterator[str]:
    """A JWKS with ``key``'s public half on loopback; its URL."""
    issuer = Flask("jwks")
    jwk = {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())), "kid": KID, "use": "sig", "alg": "RS256"}
    issuer.get("/jwks.json")(lambda: jsonify({"keys": [jwk]}))
    with live_server(issuer) as base:
        yield base + "/jwks.json"


@contextmanager
def redis_server() -> Iterator[str | None]:
    """A redis-server of our own on a free port (``None`` when there is none)."""
    if redis_binary() is None:
        yield None
        return
    server = RedisServer()
    try:
        yield server.url + "/0"
    finally:
        server.close()


def hidden_inputs(page: str) -> dict[str, str]:
    """The consent form's fields: its inputs with a name and a value."""
    fields: dict[str, str] = {}
    for tag in re.findall(r"<input\b[^>]*>", page):
        name, value = re.search(r'name="([^"]*)"', tag), re.search(r'value="([^"]*)"', tag)
        if name:
            fields[html.unescape(name.group(1))] = html.unescape(value.group(1) if value else "")
    return fields


def own_token(app: Flask) -> str:
    """An access token of ``app``'s authorization server, obtained as a client and a person would."""
    client = app.test_client()
    here = {"base_url": "http://127.0.0.1"}  # the host the calls name, so the resource is this server's
    redirect_uri = "http://127.0.0.1:9/callback"
    registered = client.post("/oauth/register", **here, json={"client_name": "bench", "redirect_uris": [redirect_uri],
                                                      "token_endpoint_auth_method": "none"})
    assert registered.status_code == 201, registered.get_data(as_text=True)
    client_id = registered.get_json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": "tools",
                       "state": "s", "code_challenge": challenge, "code_challenge_method": "S256",
                       "resource": AUDIENCE})
    signed_in = client.post("/login", **here, data={"username": "alice", "password": "wonderland"})
    assert signed_in.status_code == 302, signed_in.status_code
    consent = client.get(f"/oauth/authorize?{query}", **here)
    assert consent.status_code == 200, consent.get_data(as_text=True)[:500]
    page = consent.get_data(as_text=True)
    allow = re.search(r'<button[^>]*name="([^"]+)"[^>]*value="([^"]+)"[^>]*>\s*Allow\s*</button>', page)
    form = {**hidden_inputs(page), **({allow.group(1): allow.group(2)} if allow else {})}
    decided = client.post("/oauth/authorize", **here, data=form)
    assert decided.status_code in (302, 303), decided.get_data(as_text=True)[:500]
    code = parse_qs(urlsplit(decided.headers["Location"]).query)["code"][0]
    tokens = client.post("/oauth/token", **here, data={"grant_type": "authorization_code", "code": code,
                                               "redirect_uri": redirect_uri, "client_id": client_id,
                                               "code_verifier": verifier, "resource": AUDIENCE})
    assert tokens.status_code == 200, tokens.get_data(as_text=True)
    token: str = tokens.get_json()["access_token"]
    return token


def mcp_call(app: Flask, token: str) -> Callable[[], bytes]:
    """MCP ``tools/call`` of ``whoami`` with ``token``, straight into the WSGI callable."""
    headers = {**HEADERS, "HTTP_AUTHORIZATION": f"Bearer {token}"}
    return wsgi_request(app, "POST", "/mcp", json.dumps(CALL).encode(), headers,
                        check=lambda out: b'"user_id": "' in out and b'"isError": true' not in out)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with jwks_server(key) as jwks_url, redis_server() as redis_url:
        now = int(time.time())
        signed = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "u-1001", "iat": now, "exp": now + 3600,
                             "scope": "tools"}, key, algorithm="RS256", headers={"kid": KID, "typ": "at+jwt"})
        jwt_settings = {"JWT_JWKS_URL": jwks_url, "JWT_ISSUER": ISSUER, "JWT_AUDIENCE": AUDIENCE}
        # (label, the call, its reference: the JWT call of an app with the same state store)
        cases: list[tuple[str, Callable[[], bytes], str]] = [
            ("JWT (JWKS), in process", mcp_call(create_app(oauth=False, settings=jwt_settings), signed), ""),
            ("own token, in process", mcp_call(memory := create_app(), own_token(memory)), "JWT (JWKS), in process")]
        if redis_url:  # with a state store, MCP does more per call (its shared state): the JWT app gets it too
            cases += [("JWT (JWKS), Redis", mcp_call(create_app(redis_url, jwt_settings, oauth=False), signed), ""),
                      ("own token, Redis", mcp_call(shared := create_app(redis_url), own_token(shared)),
                       "JWT (JWKS), Redis")]
        calls = dict((label, fn) for label, fn, _ in cases)
        for fn in calls.values():
            fn()  # the JWKS is fetched once, then cached
        n = calibrated(calls["JWT (JWKS), in process"], 0.3)
        times: dict[str, list[float]] = {label: [] for label in calls}
        ratios: dict[str, list[float]] = {}
        for _ in range(rounds):
            for label, fn, reference in cases:
                if not reference:
                    continue
                ref, mine = against(fn, calls[reference], n)
                times[reference].append(ref)
                times[label].append(mine)
                ratios.setdefault(label, []).append(mine / ref)
    print(f"Python {sys.version.split()[0]}, {rounds} rounds of {n} calls, in-process WSGI, MCP tools/call")
    print(f"{'case':28} {'us/call':>8} {'best':>8} {'vs JWT':>8}")
    for label, values in times.items():
        ratio = f"{statistics.median(ratios[label]):.2f}" if label in ratios else ""
        print(f"{label:28} {statistics.median(values):8.1f} {min(values):8.1f} {ratio:>8}")


if __name__ == "__main__":
    main()
