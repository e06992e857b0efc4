"""Signed requests (epi-hmac), an identity source of the core: golden vectors both ways with the
official SDK's own ``EpiHmac``, and the same signed and unsigned requests sent to the SDK's app and
to ours (Opal mounted at the root, so both are signed over the same path) answered alike, but that
ours takes each nonce once."""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.serving.epi_hmac import sign, signature
from flask_tooldiscovery.settings import SettingsError

from .opal_sdk import sdk, sdk_app
from .test_operating_server import redis_url  # noqa: F401 - the fixture

APP_KEY = "opal-app"
SECRET = base64.b64encode(b"a secret of thirty-two bytes....").decode()
OTHER_SECRET = base64.b64encode(b"someone else's secret").decode()
KEY = base64.b64decode(SECRET)
BODY = json.dumps({"parameters": {"text": "hi"}}).encode()
CONFIG = {"TOOLDISCOVERY_DIALECTS": ["opal"], "TOOLDISCOVERY_OPAL_URL_PREFIX": "",
          "TOOLDISCOVERY_OPAL_HMAC_APP_KEY": APP_KEY, "TOOLDISCOVERY_OPAL_HMAC_SECRET": SECRET}


class EchoParams(BaseModel):
    text: str


def sdk_tools() -> None:
    @sdk.tool("echo", "Echo the text.")
    async def echo(params: EchoParams) -> dict:
        return {"text": params.text}


def our_tools() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool(name="echo", description="Echo the text.")
    def echo(text: str) -> dict:
        return {"text": text}

    return d


def header(*, secret: str = SECRET, app_key: str = APP_KEY, body: bytes = BODY, path: str = "/tools/echo",
           method: str = "POST", skew_ms: int = 0, nonce: str | None = None) -> dict[str, str]:
    """An Authorization header signed by the SDK's own EpiHmac (``skew_ms``: its clock that far off)."""
    stamp, nonce = str(int(time.time() * 1000) + skew_ms), nonce or str(uuid.uuid4())
    value = sdk.EpiHmac(app_key, secret)._build_header(method, path, body, stamp, nonce)
    return {"Authorization": value, "Content-Type": "application/json"}


def test_golden_vectors_both_ways() -> None:
    theirs = sdk.EpiHmac(APP_KEY, SECRET)
    fixed = theirs._build_header("POST", "/tools/echo?x=1", BODY, "1764000000000", "n-1")
    assert fixed.split(":")[-1] == signature(KEY, APP_KEY, "POST", "/tools/echo?x=1", "1764000000000", "n-1", BODY)
    empty = theirs._build_header("GET", "/discovery", b"", "1764000000000", "n-2")
    assert empty.split(":")[-1] == signature(KEY, APP_KEY, "GET", "/discovery", "1764000000000", "n-2", b"")
    # Ours signs, the SDK verifies; the SDK signs, ours verifies (through HTTP below).
    assert theirs.verify(sign(KEY, APP_KEY, "POST", "/tools/echo", BODY, nonce="n-3"), "POST", "/tools/echo", BODY)
    assert not theirs.verify(sign(KEY, APP_KEY, "POST", "/tools/echo", BODY, nonce="n-4"), "POST", "/tools/other", BODY)


CASES: list[tuple[str, dict[str, Any], int, int]] = [
    # name, what differs from a good request, the SDK's status, ours
    ("signed", {}, 200, 200),
    ("unsigned", {"unsigned": True}, 401, 401),
    ("stale", {"skew_ms": -301_000}, 401, 401),
    ("future", {"skew_ms": 61_000}, 401, 401),
    ("slightly ahead", {"skew_ms": 30_000}, 200, 200),
    ("wrong body", {"sent": json.dumps({"parameters": {"text": "bye"}}).encode()}, 401, 401),
    ("wrong secret", {"secret": OTHER_SECRET}, 401, 401),
    ("wrong app key", {"app_key": "someone"}, 401, 401),
    ("wrong path", {"path": "/tools/other"}, 401, 401),
    ("bearer instead", {"bearer": True}, 401, 401),
]


def send(client: Any, case: dict[str, Any], headers: dict[str, str] | None = None) -> int:
    headers = headers or header(**{k: v for k, v in case.items() if k in ("secret", "app_key", "skew_ms", "path")})
    if case.get("unsigned"):
        headers = {"Content-Type": "application/json"}
    if case.get("bearer"):
        headers = {"Authorization": "Bearer " + SECRET, "Content-Type": "application/json"}
    body = case.get("sent", BODY)
    if isinstance(client, TestClient):  # the SDK's app, through httpx
        return int(client.post("/tools/echo", content=body, headers=headers).status_code)
    return int(client.post("/tools/echo", data=body, headers=headers).status_code)


@pytest.mark.parametrize("name, case, theirs, ours", CASES, ids=[c[0] for c in CASES])
def test_signed_and_unsigned_beside_the_sdk(make_app, name: str, case: dict[str, Any], theirs: int,
                                            ours: int) -> None:
    config = sdk.SdkConfig(auth_mode="hmac", hmac_app_key=APP_KEY, hmac_secret=SECRET)
    with sdk_app(sdk_tools, config=config) as client:
        assert send(client, case) == theirs
    assert send(make_app(our_tools(), **CONFIG).test_client(), case) == ours


def test_a_nonce_is_taken_once_where_the_sdk_takes_it_again(make_app) -> None:
    once = header()
    config = sdk.SdkConfig(auth_mode="hmac", hmac_app_key=APP_KEY, hmac_secret=SECRET)
    with sdk_app(sdk_tools, config=config) as client:
        assert [send(client, {}, once) for _ in range(2)] == [200, 200]  # the SDK: replayable for 5 minutes
    client = make_app(our_tools(), **CONFIG).test_client()
    first = client.post("/tools/echo", data=BODY, headers=once)
    again = client.post("/tools/echo", data=BODY, headers=once)
    assert (first.status_code, first.get_json()) == (200, {"text": "hi"})
    assert again.status_code == 401
    assert again.headers["WWW-Authenticate"] == 'epi-hmac realm="tools"'
    assert again.get_json()["error"] == "Unauthorized: a signed request (epi-hmac) is required."
    assert client.post("/tools/echo", data=BODY, headers=header()).status_code == 200  # a new nonce


def test_nonces_are_kept_in_the_state_store_for_every_worker(make_app, redis_url, caplog) -> None:  # noqa: F811
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        one = make_app(our_tools(), TOOLDISCOVERY_STATE_STORAGE_URI=redis_url, **CONFIG).test_client()
    assert "each nonce once, remembered in the state store" in caplog.text
    other = make_app(our_tools(), TOOLDISCOVERY_STATE_STORAGE_URI=redis_url, **CONFIG).test_client()
    once = header()
    assert one.post("/tools/echo", data=BODY, headers=once).status_code == 200
    assert other.post("/tools/echo", data=BODY, headers=once).status_code == 401


def test_in_process_is_said_at_start(make_app, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        make_app(our_tools(), **CONFIG)
    assert "each nonce once, remembered in this process only" in caplog.text


def test_discovery_stays_public_unless_auth_discovery(make_app) -> None:
    client = make_app(our_tools(), **CONFIG).test_client()
    assert client.get("/discovery").status_code == 200
    client = make_app(our_tools(), TOOLDISCOVERY_AUTH_DISCOVERY=True, **CONFIG).test_client()
    assert client.get("/discovery").status_code == 401
    signed = header(method="GET", path="/discovery?page=1", body=b"")
    assert client.get("/discovery?page=1", headers=signed).status_code == 200
    assert client.get("/discovery?page=2", headers=header(method="GET", path="/discovery?page=1", body=b"")
                      ).status_code == 401  # the query is signed too


def test_every_dialect_accepts_it(make_app) -> None:
    """An identity source of the core: MCP's calls take a signed request as they take a bearer token."""
    client = make_app(our_tools(), **{**CONFIG, "TOOLDISCOVERY_DIALECTS": ["opal", "mcp"]}).test_client()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "hi"}}}).encode()
    accept = {"Accept": "application/json, text/event-stream"}
    assert client.post("/mcp", data=body, headers={"Content-Type": "application/json", **accept}).status_code == 401
    answer = client.post("/mcp", data=body, headers={**header(path="/mcp", body=body), **accept})
    assert answer.status_code == 200 and answer.get_json()["result"]["structuredContent"] == {"text": "hi"}


@pytest.mark.parametrize("config, fragment", [
    ({"TOOLDISCOVERY_OPAL_HMAC_SECRET": "not base64!"}, "TOOLDISCOVERY_OPAL_HMAC_SECRET must be base64"),
    ({"TOOLDISCOVERY_OPAL_HMAC_SECRET": "===="}, "TOOLDISCOVERY_OPAL_HMAC_SECRET must be base64"),
    ({"TOOLDISCOVERY_OPAL_HMAC_APP_KEY": None}, "are set together"),
    ({"TOOLDISCOVERY_OPAL_HMAC_SECRET": None}, "are set together"),
])
def test_a_malformed_credential_fails_at_init_app(make_app, config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SettingsError, match=fragment) as caught:
        make_app(our_tools(), **{**CONFIG, **config})
    assert "not base64!" not in str(caught.value)


def test_an_unreachable_nonce_store_refuses_with_503(make_app) -> None:
    from .conftest import free_port

    app = make_app(our_tools(), TOOLDISCOVERY_STATE_STORAGE_URI=f"redis://127.0.0.1:{free_port()}/0", **CONFIG)
    answer = app.test_client().post("/tools/echo", data=BODY, headers=header())
    assert answer.status_code == 503
    assert answer.get_json()["error"] == "Signed requests cannot be checked right now."
