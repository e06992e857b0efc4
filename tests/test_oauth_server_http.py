"""The authorization server over real HTTP: two gunicorn servers of two worker processes each,
sharing Redis behind one public name (``OAUTH_PUBLIC_URL``, as a load balancer gives them). The
person's browser signs in and consents on one; the client's token and refresh requests and its
MCP calls alternate between the two: codes, tokens, rotation and reuse detection hold across
processes, and the server that did not issue a token takes it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from .oauth_helpers import REDIRECT, authorize_params, consent_form, pkce
from .test_deploy import stop
from .test_operating_server import redis_url, start  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow
APP = "tests.apps.oauth_app:create_app()"
PUBLIC = "http://tools.test"
MCP = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
       "Content-Type": "application/json"}


@pytest.fixture
def servers(redis_url: str) -> Iterator[tuple[str, str]]:  # noqa: F811
    started = []
    try:
        for _ in range(2):
            started.append(start(APP, workers=2, env={"OAUTH_STATE_URI": redis_url, "OAUTH_PUBLIC_URL": PUBLIC},
                                 ready="/.well-known/oauth-authorization-server"))
        yield started[0][0], started[1][0]
    finally:
        for _, proc in started:
            stop(proc)


def whoami(base: str, token: str) -> requests.Response:
    return requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                              "params": {"name": "whoami", "arguments": {}}},
                         headers={**MCP, "Authorization": f"Bearer {token}"}, timeout=10)


def authorized(browser: requests.Session, base: str, client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    """The person consents on ``base``: the query the browser is sent back with."""
    page = browser.get(f"{base}/oauth/authorize", params=authorize_params(client_id, challenge, **extra), timeout=10)
    assert page.status_code == 200 and "HTTP client" in page.text
    back = browser.post(f"{base}/oauth/authorize", data={**consent_form(page.text), "decision": "allow"},
                        allow_redirects=False, timeout=10)
    return {k: v[0] for k, v in parse_qs(urlsplit(back.headers["Location"]).query).items()}


def test_codes_tokens_and_refreshes_hold_across_servers(servers: tuple[str, str]) -> None:
    one, two = servers
    metadata = requests.get(f"{two}/.well-known/oauth-authorization-server", timeout=10).json()
    assert metadata["issuer"] == PUBLIC and metadata["token_endpoint"] == f"{PUBLIC}/oauth/token"
    registered = requests.post(f"{one}/oauth/register", timeout=10, json={
        "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "HTTP client",
        "grant_types": ["authorization_code", "refresh_token"]}).json()
    client_id = registered["client_id"]
    browser = requests.Session()
    browser.get(f"{one}/login", params={"user": "alice"}, timeout=10)
    verifier, challenge = pkce()
    answer = authorized(browser, one, client_id, challenge, resource=f"{PUBLIC}/mcp")
    assert answer["iss"] == PUBLIC and answer["state"] == "st-1"

    def exchange(base: str, code: str) -> requests.Response:
        return requests.post(f"{base}/oauth/token", timeout=10, data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier})

    first = exchange(two, answer["code"])  # registered and authorized on one, exchanged on two
    assert first.status_code == 200, first.text
    assert exchange(one, answer["code"]).status_code == 400  # spent for every process, and its tokens revoked
    assert whoami(two, first.json()["access_token"]).status_code == 401

    token = exchange(one, authorized(browser, one, client_id, challenge)["code"]).json()
    pids = set()
    for base in (one, two, one, two):
        reply = whoami(base, token["access_token"])
        assert reply.status_code == 200, reply.text
        text = reply.json()["result"]["content"][0]["text"]
        assert text.startswith("user=alice ")
        pids.add(re.search(r"pid=(\d+)", text).group(1))  # type: ignore[union-attr]
    assert len(pids) >= 2  # answered by processes of both servers

    def refresh(base: str, refresh_token: str) -> requests.Response:
        return requests.post(f"{base}/oauth/token", timeout=10, data={
            "grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})

    refreshed = refresh(two, token["refresh_token"])
    assert refreshed.status_code == 200 and whoami(one, refreshed.json()["access_token"]).status_code == 200
    reused = refresh(one, token["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    for base in (one, two):  # the grant is gone everywhere: the newest tokens too
        assert whoami(base, refreshed.json()["access_token"]).status_code == 401
        assert refresh(base, refreshed.json()["refresh_token"]).status_code == 400
