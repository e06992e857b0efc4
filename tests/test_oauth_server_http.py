"""The authorization server over real HTTP: gunicorn with two worker processes sharing Redis. A
person's browser session (a cookie), the client's registration, authorization, token and refresh
requests and the MCP calls each land on whichever worker accepts them: codes, tokens, rotation
and reuse detection hold across workers."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from .oauth_helpers import REDIRECT, authorize_params, consent_form, pkce
from .test_deploy import stop
from .test_operating_server import redis_url, start  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow
APP = "tests.apps.oauth_app:create_app()"
MCP = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
       "Content-Type": "application/json"}


def whoami(base: str, token: str) -> requests.Response:
    return requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                              "params": {"name": "whoami", "arguments": {}}},
                         headers={**MCP, "Authorization": f"Bearer {token}"}, timeout=10)


def test_two_workers_on_redis(redis_url: str) -> None:  # noqa: F811
    base, proc = start(APP, workers=2, env={"OAUTH_STATE_URI": redis_url},
                       ready="/.well-known/oauth-authorization-server")
    try:
        metadata = requests.get(f"{base}/.well-known/oauth-authorization-server", timeout=10).json()
        assert metadata["issuer"] == base
        registered = requests.post(metadata["registration_endpoint"], timeout=10, json={
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "HTTP client",
            "grant_types": ["authorization_code", "refresh_token"]}).json()
        browser = requests.Session()
        browser.get(f"{base}/login", params={"user": "alice"}, timeout=10)
        verifier, challenge = pkce()
        page = browser.get(metadata["authorization_endpoint"], timeout=10,
                           params=authorize_params(registered["client_id"], challenge, resource=f"{base}/mcp"))
        assert page.status_code == 200 and "HTTP client" in page.text
        back = browser.post(metadata["authorization_endpoint"], data={**consent_form(page.text), "decision": "allow"},
                            allow_redirects=False, timeout=10)
        answer = {k: v[0] for k, v in parse_qs(urlsplit(back.headers["Location"]).query).items()}
        assert answer["iss"] == base and answer["state"] == "st-1"
        token = requests.post(metadata["token_endpoint"], timeout=10, data={
            "grant_type": "authorization_code", "code": answer["code"], "redirect_uri": REDIRECT,
            "client_id": registered["client_id"], "code_verifier": verifier, "resource": f"{base}/mcp"}).json()
        again = requests.post(metadata["token_endpoint"], timeout=10, data={
            "grant_type": "authorization_code", "code": answer["code"], "redirect_uri": REDIRECT,
            "client_id": registered["client_id"], "code_verifier": verifier})
        assert again.status_code == 400  # the code is spent on every worker, and its tokens revoked
        # a fresh grant, used on both workers
        page = browser.get(metadata["authorization_endpoint"], timeout=10,
                           params=authorize_params(registered["client_id"], challenge))
        back = browser.post(metadata["authorization_endpoint"], data={**consent_form(page.text), "decision": "allow"},
                            allow_redirects=False, timeout=10)
        code = parse_qs(urlsplit(back.headers["Location"]).query)["code"][0]
        token = requests.post(metadata["token_endpoint"], timeout=10, data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
            "client_id": registered["client_id"], "code_verifier": verifier}).json()
        pids = set()
        for _ in range(60):  # each a new connection: until both workers have answered
            text = whoami(base, token["access_token"]).json()["result"]["content"][0]["text"]
            assert text.startswith("user=alice ")
            pids.add(re.search(r"pid=(\d+)", text).group(1))  # type: ignore[union-attr]
            if len(pids) == 2:
                break
        assert len(pids) == 2, "both workers answered"
        refreshed = requests.post(metadata["token_endpoint"], timeout=10, data={
            "grant_type": "refresh_token", "refresh_token": token["refresh_token"],
            "client_id": registered["client_id"]}).json()
        assert whoami(base, refreshed["access_token"]).status_code == 200
        reused = requests.post(metadata["token_endpoint"], timeout=10, data={
            "grant_type": "refresh_token", "refresh_token": token["refresh_token"],
            "client_id": registered["client_id"]})
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        for _ in range(4):  # the grant is gone everywhere
            assert whoami(base, refreshed["access_token"]).status_code == 401
    finally:
        stop(proc)
