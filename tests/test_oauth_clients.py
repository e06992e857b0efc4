"""The official MCP Python SDK's OAuth client (``OAuthClientProvider``) against the app as its own
users' authorization server, end to end: the app under gunicorn with two workers sharing a real
Redis, every connection closed after its response so that the registration, the authorization, the
token request and the calls land on either worker; the person signs in on the app's Flask-Login form
and presses **Allow** in Chromium; the client takes the redirect on its loopback listener (RFC 8252).

It registers dynamically (RFC 7591) or names itself by a Client ID Metadata Document served over
HTTPS on loopback, in both MCP eras the SDK speaks (the 2025-11-25 handshake, 2026-07-28), and the
tool sees the user who granted as ``ctx.user_id``; a person who presses **Deny** gives the client
nothing. (Refreshing an expired token: tests/test_oauth_clients_refresh.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyUrl

from .oauth_harness import (
    ERAS,
    CallbackListener,
    MemoryStorage,
    MetadataServer,
    Person,
    app_trusting,
    callback_listener,
    chromium,
    documents,  # noqa: F401  (a fixture)
)
from .test_operating_server import redis_url  # noqa: F401  (a redis-server of our own)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ALICE = {"username": "alice", "password": "wonderland"}
ALICE_ID = "u-1001"  # her id in the app's user table (Flask-Login's get_id), not her username
CLIENT_NAME = "Acme desktop (Python SDK)"


@pytest.fixture(scope="module")
def base(redis_url: str, documents: MetadataServer) -> Iterator[str]:  # noqa: F811
    with app_trusting(documents, redis_url + "/1") as url:
        yield url


def provider(server_url: str, storage: MemoryStorage, person: Person, listener: CallbackListener, *,
             client_metadata_url: str | None = None) -> OAuthClientProvider:
    """The official client's OAuth flow as a desktop client runs it: the redirect handler opens the
    authorization URL in the browser (where ``person`` signs in and decides), the callback handler
    waits for the browser to come back to the loopback listener."""
    visits: list[str] = []
    answers: list[dict[str, str]] = []

    async def redirect_handler(url: str) -> None:
        visits.append(url)
        await person.authorize(url, listener.url)

    async def callback_handler() -> AuthorizationCodeResult:
        answer = await anyio.to_thread.run_sync(listener.wait)
        answers.append(answer)
        return AuthorizationCodeResult(code=answer.get("code", ""), state=answer.get("state"), iss=answer.get("iss"))

    metadata = OAuthClientMetadata(client_name=CLIENT_NAME, redirect_uris=[AnyUrl(listener.url)],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none")
    auth = OAuthClientProvider(server_url=server_url, client_metadata=metadata, storage=storage,
                               redirect_handler=redirect_handler, callback_handler=callback_handler,
                               client_metadata_url=client_metadata_url)
    auth.visits, auth.answers = visits, answers  # type: ignore[attr-defined]
    return auth


async def whoami(server_url: str, auth: OAuthClientProvider, mode: str, *, calls: int = 40) -> dict[str, Any]:
    """A session: ``whoami`` called until both workers answered (at most ``calls`` times)."""
    answers: list[dict[str, Any]] = []
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
        async with Client(streamable_http_client(server_url, http_client=http), mode=mode) as client:
            for _ in range(calls):
                result = await client.call_tool("whoami", {})
                assert result.is_error is False, result
                answers.append(result.structured_content or {})
                if len({a["worker"] for a in answers}) == 2:
                    break
            return {"protocol": client.protocol_version, "answers": answers}


def leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions an exception group holds (anyio's task groups wrap the client's), or ``error``."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


def connect(server_url: str, auth: OAuthClientProvider, mode: str, *people: Person) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with chromium(*people):
            return await whoami(server_url, auth, mode)

    return asyncio.run(run())


@pytest.mark.parametrize(("mode", "version"), ERAS)
@pytest.mark.parametrize("registration", ["dcr", "cimd"])
def test_the_python_sdk_signs_a_user_in_and_calls_as_them(
        base: str, documents: MetadataServer, registration: str, mode: str, version: str) -> None:  # noqa: F811
    server_url = f"{base}/mcp"
    person, storage = Person(**ALICE), MemoryStorage()
    with callback_listener() as listener:
        document = None
        if registration == "cimd":
            document = documents.document_for(f"/clients/python-{mode}.json", listener.url, client_name=CLIENT_NAME)
        auth = provider(server_url, storage, person, listener, client_metadata_url=document)
        out = connect(server_url, auth, mode, person)

    assert out["protocol"] == version
    assert {a["user_id"] for a in out["answers"]} == {ALICE_ID}  # the user who granted, as ctx.user_id
    assert len({a["worker"] for a in out["answers"]}) == 2  # the token works on both workers
    # One authorization: the login form (with next= the authorization request), then the consent page.
    [authorization] = auth.visits  # type: ignore[attr-defined]
    (login_url, login_text), (_, consent_text) = person.seen
    back_to = urlsplit(parse_qs(urlsplit(login_url).query)["next"][0])
    assert back_to.path == "/oauth/authorize" and parse_qs(back_to.query) == parse_qs(urlsplit(authorization).query)
    assert "Sign in to Acme" in login_text
    assert CLIENT_NAME in consent_text and "Use the Acme tools as you" in consent_text
    asked = parse_qs(urlsplit(authorization).query)
    assert asked["resource"] == [server_url] and asked["code_challenge_method"] == ["S256"]  # RFC 8707, PKCE
    if registration == "cimd":
        assert storage.client_info.client_id == document  # the document's URL is the client id
        assert documents.fetches[urlsplit(document).path] >= 1  # the server read it
    else:
        assert storage.client_info.client_id.startswith("http") is False  # registered: an id the server made
    assert storage.tokens.refresh_token  # for later, without the person


def test_a_person_who_denies_gives_the_client_nothing(base: str) -> None:
    server_url = f"{base}/mcp"
    person, storage = Person(**ALICE, decision="Deny"), MemoryStorage()
    with callback_listener() as listener:
        auth = provider(server_url, storage, person, listener)
        with pytest.raises(BaseException) as raised:
            connect(server_url, auth, "legacy", person)
    assert any(isinstance(e, OAuthFlowError) and "No authorization code" in str(e) for e in leaves(raised.value))
    [answer] = auth.answers  # type: ignore[attr-defined]
    assert answer["error"] == "access_denied" and "code" not in answer  # RFC 6749 section 4.1.2.1
    assert answer["state"] == parse_qs(urlsplit(auth.visits[0]).query)["state"][0]  # type: ignore[attr-defined]
    assert answer["iss"] == base  # RFC 9207, on errors too
    assert storage.tokens is None
