"""Identity wins: once a credential of the identity layer named the caller, no field of a request's
body changes ``ctx.user_id`` (Opal's ``auth.credentials.user_id``, OXP's ``request.context.user_id``);
what the body claims stays readable as ``ctx.extra["claimed_user_id"]``. Without a credential that
names someone, the body's user id is the only one there is, as the protocols define it."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_tooldiscovery import Identity, ToolContext, ToolDiscovery

from .test_identity import KeyServer, issuer, jwks_config  # noqa: F401 - the JWKS server fixture

SECRET = "identity-wins-secret-" + "x" * 40


def hs256(sub: str | None, **claims: Any) -> dict[str, str]:
    payload = {"exp": int(time.time()) + 300, **claims}
    if sub is not None:
        payload["sub"] = sub
    return {"Authorization": "Bearer " + jwt.encode(payload, SECRET, algorithm="HS256")}


def app_with(requirements: dict[str, Any] | None = None, hook: bool = False, **config: Any) -> FlaskClient:
    d = ToolDiscovery()

    @d.tool(requirements=requirements or {})
    def whoami(ctx: ToolContext) -> dict:
        """Who called."""
        return {"user_id": ctx.user_id, "subject": ctx.identity.subject if ctx.identity else None,
                "claimed_user_id": ctx.extra.get("claimed_user_id")}

    if hook:
        @d.identity
        def from_header(request: Any) -> Identity | None:
            user = request.headers.get("X-User")
            return Identity(subject=user) if user else None

    app = Flask("wins")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal", "oxp"], TOOLDISCOVERY_OXP_TOOLKIT="Who", **config)
    d.init_app(app)
    return app.test_client()


def opal_as(client: FlaskClient, claimed: Any, headers: dict[str, str] | None = None) -> Any:
    body: dict[str, Any] = {"parameters": {}}
    if claimed is not None:
        body["auth"] = {"provider": "OptiID", "credentials": {"user_id": claimed, "access_token": "t"}}
    r = client.post("/opal/tools/whoami", json=body, headers=headers or {})
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_json()


def oxp_as(client: FlaskClient, claimed: Any, headers: dict[str, str] | None = None) -> Any:
    context = {} if claimed is None else {"user_id": claimed}
    r = client.post("/oxp/tools/call", json={"request": {"tool_id": "Who.whoami", "context": context}},
                    headers=headers or {})
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["result"]["success"] is True, r.get_json()
    return r.get_json()["result"]["value"]


@pytest.mark.parametrize("call", [opal_as, oxp_as], ids=["opal", "oxp"])
def test_a_body_cannot_rename_the_caller_a_jwt_named(call: Any) -> None:
    client = app_with(TOOLDISCOVERY_JWT_SECRET=SECRET)
    assert call(client, "bob", hs256("alice")) == {"user_id": "alice", "subject": "alice", "claimed_user_id": "bob"}
    assert call(client, None, hs256("alice")) == {"user_id": "alice", "subject": "alice", "claimed_user_id": None}


@pytest.mark.parametrize("call", [opal_as, oxp_as], ids=["opal", "oxp"])
def test_a_body_cannot_rename_the_caller_the_identity_hook_named(call: Any) -> None:
    client = app_with(hook=True)
    assert call(client, "bob", {"X-User": "alice"}) == {"user_id": "alice", "subject": "alice",
                                                         "claimed_user_id": "bob"}


@pytest.mark.parametrize("call", [opal_as, oxp_as], ids=["opal", "oxp"])
def test_a_body_cannot_rename_the_caller_a_jwks_token_named(call: Any, issuer: KeyServer) -> None:  # noqa: F811
    client = app_with(**jwks_config(issuer))
    headers = {"Authorization": f"Bearer {issuer.token('k1', sub='alice')}"}
    assert call(client, "bob", headers) == {"user_id": "alice", "subject": "alice", "claimed_user_id": "bob"}


@pytest.mark.parametrize("call", [opal_as, oxp_as], ids=["opal", "oxp"])
def test_without_a_named_caller_the_body_says_who_as_the_protocols_do(call: Any) -> None:
    anonymous = app_with()  # no credential at all: the body is the only source
    assert call(anonymous, "bob") == {"user_id": "bob", "subject": None, "claimed_user_id": "bob"}
    assert call(anonymous, None) == {"user_id": None, "subject": None, "claimed_user_id": None}
    # A static token lets the platform in but names nobody (Opal sends its user in the body).
    service = app_with(TOOLDISCOVERY_BEARER_TOKEN="platform-token")
    assert call(service, "bob", {"Authorization": "Bearer platform-token"}) == {
        "user_id": "bob", "subject": None, "claimed_user_id": "bob"}
    # A token without ``sub`` names nobody either.
    unnamed = app_with(TOOLDISCOVERY_JWT_SECRET=SECRET)
    assert call(unnamed, "bob", hs256(None)) == {"user_id": "bob", "subject": None, "claimed_user_id": "bob"}


def test_an_oxp_tool_that_requires_a_user_id_has_one_when_the_identity_names_the_caller() -> None:
    client = app_with(requirements={"user_id": True}, TOOLDISCOVERY_JWT_SECRET=SECRET)
    assert oxp_as(client, None, hs256("alice"))["user_id"] == "alice"
    anonymous = app_with(requirements={"user_id": True})
    r = anonymous.post("/oxp/tools/call", json={"request": {"tool_id": "Who.whoami"}})
    assert r.status_code == 400 and r.get_json()["missing_requirements"] == {"user_id": True}
    assert oxp_as(anonymous, "bob")["user_id"] == "bob"

