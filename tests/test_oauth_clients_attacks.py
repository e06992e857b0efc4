"""Attacks on the app's authorization server end to end, over real HTTP to gunicorn (two workers
sharing a real Redis, every connection closed after its response so that consecutive requests land
on either worker), each starting from a real authorization: a client registered by RFC 7591, the
person signing in on the app's Flask-Login form and pressing **Allow** in Chromium, the code taken
on the client's loopback listener. What an attacker then sends is refused as the RFCs say:

- an authorization code used twice (RFC 6749 section 4.1.2, RFC 9700 section 4.5);
- a code redeemed with the wrong PKCE verifier (RFC 7636 section 4.6) or none;
- a rotated refresh token used again: refused, and the whole grant dies with it (RFC 9700 section 4.14.2);
- a revoked access token (RFC 7009), refused by the MCP endpoint on the other worker too;
- a token minted for another resource (RFC 8707): refused here, and not issued for a resource this
  server does not serve."""

from __future__ import annotations

import asyncio
import json
import queue
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
import requests

from .oauth_harness import (
    CallbackListener,
    HTMLServer,
    Person,
    app_server,
    callback_listener,
    chromium,
    require_chromium,
)
from .oauth_helpers import pkce
from .test_operating_server import redis_url  # noqa: F401  (a redis-server of our own)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ALICE_ID = "u-1001"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}


@pytest.fixture(scope="module")
def listener() -> Iterator[CallbackListener]:
    with callback_listener() as it:
        yield it


@pytest.fixture(scope="module")
def servers(redis_url: str) -> Iterator[tuple[str, str]]:  # noqa: F811
    """Two servers of the app on one Redis, with one session key: each a resource of its own."""
    require_chromium()
    with app_server(redis_url + "/2") as first, app_server(redis_url + "/2") as second:
        yield first, second


@pytest.fixture(scope="module")
def base(servers: tuple[str, str]) -> str:
    return servers[0]


@dataclass
class Grant:
    """A client registered at ``base`` and one authorization code for it, with its PKCE verifier."""

    base: str
    client_id: str
    redirect_uri: str
    code: str
    verifier: str

    def redeem(self, **changes: Any) -> requests.Response:
        data = {"grant_type": "authorization_code", "code": self.code, "redirect_uri": self.redirect_uri,
                "client_id": self.client_id, "code_verifier": self.verifier, "resource": f"{self.base}/mcp",
                **changes}
        return token_request(self.base, {k: v for k, v in data.items() if v is not None})

    def refresh(self, refresh_token: str) -> requests.Response:
        return token_request(self.base, {"grant_type": "refresh_token", "refresh_token": refresh_token,
                                         "client_id": self.client_id})


def token_request(base: str, data: dict[str, str]) -> requests.Response:
    return requests.post(f"{base}/oauth/token", data=data, timeout=10)


def register(base: str, redirect_uri: str, name: str = "Raw test client") -> str:
    r = requests.post(f"{base}/oauth/register", timeout=10, json={
        "client_name": name, "redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]})
    assert r.status_code == 201, r.text
    client_id: str = r.json()["client_id"]
    return client_id


def authorize(base: str, listener: CallbackListener, *, resource: str | None = None,
              name: str = "Raw test client") -> Grant:
    """Register a client, and have alice sign in and allow it in Chromium: its code and verifier."""
    client_id = register(base, listener.url, name)
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(16)
    url = f"{base}/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": listener.url, "scope": "tools",
        "state": state, "code_challenge": challenge, "code_challenge_method": "S256",
        "resource": resource or f"{base}/mcp"})
    person = Person("alice", "wonderland")

    async def run() -> None:
        async with chromium(person):
            await person.authorize(url, listener.url)

    asyncio.run(run())
    answer = listener.wait(10)
    assert answer["state"] == state and answer["iss"] == base, answer
    return Grant(base, client_id, listener.url, answer["code"], verifier)


def mcp_call(base: str, token: str) -> requests.Response:
    return requests.post(f"{base}/mcp", json=CALL, timeout=10,
                         headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def on_both_workers(base: str, token: str, tries: int = 40) -> dict[str, requests.Response]:
    """The MCP call with ``token`` until both workers answered: each worker's (last) response."""
    seen: dict[str, requests.Response] = {}
    for _ in range(tries):
        r = mcp_call(base, token)
        seen[r.headers["X-Worker"]] = r
        if len(seen) == 2:
            break
    assert len(seen) == 2, f"only worker {list(seen)} answered {tries} calls"
    return seen


def refused(r: requests.Response) -> bool:
    """A refusal of the token: 401 with the Bearer challenge (RFC 6750 section 3.1)."""
    return r.status_code == 401 and 'error="invalid_token"' in r.headers.get("WWW-Authenticate", "")


def invalid_grant(r: requests.Response) -> bool:
    return r.status_code == 400 and r.json().get("error") == "invalid_grant"


def test_the_token_runs_tools_as_the_user_on_both_workers(base: str, listener: CallbackListener) -> None:
    tokens = authorize(base, listener).redeem().json()
    for r in on_both_workers(base, tokens["access_token"]).values():
        assert r.status_code == 200 and r.json()["result"]["structuredContent"]["user_id"] == ALICE_ID, r.text
    # Other dialects take it too (TDP here), as the same user.
    r = requests.post(f"{base}/api/v1/tools/execute", json={"tool_name": "whoami", "arguments": {}}, timeout=10,
                      headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert r.status_code == 200 and ALICE_ID in r.text, r.text


def test_a_code_is_redeemed_once(base: str, listener: CallbackListener) -> None:
    grant = authorize(base, listener)
    first = grant.redeem()
    assert first.status_code == 200, first.text
    assert mcp_call(base, first.json()["access_token"]).status_code == 200
    again = grant.redeem()
    assert invalid_grant(again), again.text
    # Someone else held the code too: what its first use gave is revoked (RFC 6749 section 4.1.2).
    for worker, r in on_both_workers(base, first.json()["access_token"]).items():
        assert refused(r), (worker, r.status_code, r.text)
    assert invalid_grant(grant.refresh(first.json()["refresh_token"]))


def test_a_code_needs_its_own_pkce_verifier(base: str, listener: CallbackListener) -> None:
    grant = authorize(base, listener)
    wrong = grant.redeem(code_verifier=pkce()[0])
    assert invalid_grant(wrong), wrong.text
    missing = grant.redeem(code_verifier=None)
    assert missing.status_code == 400 and missing.json()["error"] in ("invalid_grant", "invalid_request"), missing.text
    assert "access_token" not in wrong.text + missing.text


def test_a_rotated_refresh_token_used_again_kills_the_grant(base: str, listener: CallbackListener) -> None:
    grant = authorize(base, listener)
    first = grant.redeem().json()
    rotated = grant.refresh(first["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    second = rotated.json()
    assert second["refresh_token"] != first["refresh_token"] and second["access_token"] != first["access_token"]
    assert mcp_call(base, second["access_token"]).status_code == 200
    replayed = grant.refresh(first["refresh_token"])  # the attacker's copy of the old one
    assert invalid_grant(replayed), replayed.text
    # The family is dead: the legitimate client's newer tokens no longer work either.
    after = grant.refresh(second["refresh_token"])
    assert invalid_grant(after), after.text
    for worker, r in on_both_workers(base, second["access_token"]).items():
        assert refused(r), (worker, r.status_code, r.text)


def test_a_revoked_token_is_refused_by_every_worker(base: str, listener: CallbackListener) -> None:
    grant = authorize(base, listener)
    token = grant.redeem().json()["access_token"]
    assert all(r.status_code == 200 for r in on_both_workers(base, token).values())
    revoked = requests.post(f"{base}/oauth/revoke", data={"token": token, "client_id": grant.client_id}, timeout=10)
    assert revoked.status_code == 200, revoked.text
    for worker, r in on_both_workers(base, token).items():
        assert refused(r), (worker, revoked.headers["X-Worker"], r.status_code, r.text)


def test_a_token_for_another_resource_is_refused(servers: tuple[str, str], listener: CallbackListener) -> None:
    base, other = servers
    # A token the other server issued for its own MCP endpoint, on the same Redis and session key.
    theirs = authorize(other, listener).redeem(resource=f"{other}/mcp")
    assert theirs.status_code == 200, theirs.text
    token = theirs.json()["access_token"]
    assert mcp_call(other, token).status_code == 200
    for worker, r in on_both_workers(base, token).items():
        assert refused(r), (worker, r.status_code, r.text)
    # And this server does not issue a token for a resource it does not serve (RFC 8707 section 2).
    grant = authorize(base, listener)
    r = grant.redeem(resource=f"{other}/mcp")
    assert r.status_code == 400 and r.json()["error"] == "invalid_target", r.text


def test_an_unregistered_redirect_uri_is_never_sent_the_person(base: str, listener: CallbackListener) -> None:
    """RFC 6749 section 4.1.2.1 and RFC 9700 section 4.1: with a redirect URI the client did not
    register, the person, signed in, is shown an error and sent nowhere (no open redirector)."""
    client_id = register(base, listener.url)
    _, challenge = pkce()
    person = Person("alice", "wonderland")
    with callback_listener() as elsewhere:
        wrong = [elsewhere.url.replace("/callback", "/steal"), "https://attacker.example/callback",
                 listener.url + "?x=1"]

        async def visit() -> list[tuple[str, int, str]]:
            async with chromium(person):
                page = await person.context.new_page()
                await page.goto(f"{base}/login")
                await person.sign_in(page)
                await page.wait_for_url(f"{base}/")
                seen = []
                for redirect_uri in wrong:
                    response = await page.goto(f"{base}/oauth/authorize?" + urlencode({
                        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                        "scope": "tools", "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"}))
                    seen.append((page.url, response.status if response else 0, await page.inner_text("body")))
                return seen

        for redirect_uri, (where, status, text) in zip(wrong, asyncio.run(visit()), strict=True):
            assert where.startswith(f"{base}/oauth/authorize") and status == 400, (redirect_uri, where, status)
            assert "Allow" not in text, text
        with pytest.raises(queue.Empty):  # nothing came to the other listener
            elsewhere.wait(0.5)
    with pytest.raises(queue.Empty):
        listener.wait(0.1)


def test_the_person_revokes_a_client_on_the_grants_page(base: str, listener: CallbackListener) -> None:
    """The person sees the clients they allowed (the page, and JSON for the same session) and revokes
    one with its button: its tokens are refused on both workers at once."""
    grant = authorize(base, listener, name="Grants page test client")
    tokens = grant.redeem().json()
    assert mcp_call(base, tokens["access_token"]).status_code == 200
    person = Person("alice", "wonderland")

    async def revoke() -> tuple[Any, str, str]:
        async with chromium(person):
            page = await person.context.new_page()
            await page.goto(f"{base}/oauth/grants")  # not signed in: the app's login, then back here
            await person.sign_in(page)
            await page.wait_for_url(f"{base}/oauth/grants")
            listed = await (await page.request.get(f"{base}/oauth/grants",
                                                   headers={"Accept": "application/json"})).json()
            before = await page.inner_text("body")
            row = page.get_by_role("row").filter(has_text="Grants page test client")
            await row.get_by_role("button", name="Revoke").click()
            await page.wait_for_load_state()
            return listed, before, await page.inner_text("body")

    listed, before, after = asyncio.run(revoke())
    assert "Grants page test client" in before and "Grants page test client" not in after
    assert grant.client_id in json.dumps(listed)
    for worker, r in on_both_workers(base, tokens["access_token"]).items():
        assert refused(r), (worker, r.status_code, r.text)
    assert invalid_grant(grant.refresh(tokens["refresh_token"]))


def test_another_site_cannot_frame_the_consent_page(base: str, listener: CallbackListener) -> None:
    """RFC 9700 section 4.16 (clickjacking): a page on another origin that frames the consent page
    for a signed-in person gets nothing Chromium renders, so no Allow to click under a decoy."""
    client_id = register(base, listener.url, "Framed client")
    _, challenge = pkce()
    consent = f"{base}/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": listener.url, "scope": "tools",
        "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"})
    page_html = f'<!doctype html><title>Win a prize</title><iframe src="{consent}" width="800" height="600"></iframe>'
    decoy = HTMLServer(page_html)
    person = Person("alice", "wonderland")

    async def visit() -> tuple[str, str, list[str]]:
        async with chromium(person):
            page = await person.context.new_page()
            await page.goto(f"{base}/login")
            await person.sign_in(page)
            await page.wait_for_url(f"{base}/")
            direct = await (await page.goto(consent)).text()  # type: ignore[union-attr]  # the page itself shows
            await page.goto(decoy.url)
            await page.wait_for_load_state("load")
            [frame] = page.main_frame.child_frames
            buttons = await frame.get_by_role("button").all_inner_texts()
            return direct, frame.url, buttons

    try:
        direct, framed_url, buttons = asyncio.run(visit())
    finally:
        decoy.close()
    assert "Allow" in direct and "Framed client" in direct  # shown to the person on the app's own page
    assert buttons == [], (framed_url, buttons)  # nothing rendered inside the other site's frame
    with pytest.raises(queue.Empty):
        listener.wait(0.1)
