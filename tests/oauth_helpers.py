"""The authorization server's test helpers: an app with a login, and the code flow done by hand
with Flask's test client (register, authorize, consent, token), as a client and a person would."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from flask import Flask, request, session
from flask.testing import FlaskClient

from flask_tooldiscovery import ToolContext, ToolDiscovery

REDIRECT = "http://127.0.0.1:5173/callback"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def oauth_app(**config: Any) -> Flask:
    """An app whose users sign in at /login (``?user=``), with the authorization server on and two
    tools: ``whoami`` (anyone signed in through OAuth) and ``secret`` (scope ``admin`` only)."""
    discovery = ToolDiscovery()

    @discovery.tool
    def whoami(ctx: ToolContext = None) -> str:  # type: ignore[assignment]
        """Who calls."""
        return f"user={ctx.user_id} scopes={' '.join(ctx.scopes)}"

    @discovery.tool(scopes=["admin"])
    def secret() -> str:
        """Only with the admin scope."""
        return "the secret"

    @discovery.oauth_user
    def current() -> str | None:
        return session.get("user")

    app = Flask("oauthapp")
    app.secret_key = "test-secret-key"
    app.config.update({"TESTING": True, "TOOLDISCOVERY_OAUTH_SERVER": True, "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                       "TOOLDISCOVERY_OAUTH_LOGIN_VIEW": "login",
                       "TOOLDISCOVERY_OAUTH_SCOPES": {"tools": "Use the tools of {title}", "admin": "Administer"},
                       **config})

    @app.route("/login")
    def login() -> str:
        user = request.args.get("user")
        if user:
            session["user"] = user
            return "signed in"
        return "login form"

    discovery.init_app(app)
    return app


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(client: FlaskClient, **metadata: Any) -> dict[str, Any]:
    body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "Test client",
            "grant_types": ["authorization_code", "refresh_token"], **metadata}
    response = client.post("/oauth/register", json=body)
    assert response.status_code == 201, response.get_json()
    found: dict[str, Any] = response.get_json()
    return found


def sign_in(client: FlaskClient, user: str = "alice") -> None:
    assert client.get(f"/login?user={user}").status_code == 200


@dataclass
class Consent:
    """The consent page's form, as a browser would post it back."""

    fields: dict[str, str]
    html: str


def consent_form(html: str) -> dict[str, str]:
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))
    return {k: v.replace("&amp;", "&").replace("&#34;", '"').replace("&#39;", "'").replace("&lt;", "<")
            .replace("&gt;", ">") for k, v in fields.items()}


def authorize_params(client_id: str, challenge: str, **extra: Any) -> dict[str, Any]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "st-1",
            "code_challenge": challenge, "code_challenge_method": "S256", "scope": "tools", **extra}


def consent(client: FlaskClient, params: dict[str, Any]) -> Consent:
    page = client.get("/oauth/authorize?" + urlencode(params), headers={"Accept": "text/html"})
    assert page.status_code == 200, page.get_data(as_text=True)
    html = page.get_data(as_text=True)
    return Consent(consent_form(html), html)


def decide(client: FlaskClient, form: Consent, decision: str = "allow") -> dict[str, str]:
    """Post the consent form; the query of the redirect back to the client."""
    response = client.post("/oauth/authorize", data={**form.fields, "decision": decision})
    assert response.status_code == 302, response.get_data(as_text=True)
    location = response.headers["Location"]
    assert location.startswith(REDIRECT.split("?")[0])
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def code_for(client: FlaskClient, client_id: str, challenge: str, **extra: Any) -> str:
    answer = decide(client, consent(client, authorize_params(client_id, challenge, **extra)))
    return answer["code"]


def exchange(client: FlaskClient, client_id: str, code: str, verifier: str, **extra: Any) -> Any:
    return client.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                             "redirect_uri": REDIRECT, "client_id": client_id,
                                             "code_verifier": verifier, **extra})


def tokens(client: FlaskClient, user: str = "alice", **extra: Any) -> tuple[str, dict[str, Any]]:
    """Register a public client, sign ``user`` in, consent, exchange: (client_id, the token answer)."""
    registered = register(client)
    sign_in(client, user)
    verifier, challenge = pkce()
    code = code_for(client, registered["client_id"], challenge, **extra)
    response = exchange(client, registered["client_id"], code, verifier)
    assert response.status_code == 200, response.get_json()
    return registered["client_id"], response.get_json()


def call(client: FlaskClient, token: str | None, tool: str = "whoami", path: str = "/mcp") -> Any:
    headers = dict(MCP_HEADERS)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": tool, "arguments": {}}}, headers=headers)
