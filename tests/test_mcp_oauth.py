"""MCP as an OAuth 2.1 resource server, against a real authorization server.

The authorization server is built from the official ``mcp`` SDK's own components
(``mcp.server.auth``: ``create_auth_routes`` with its metadata, registration, authorize and token
handlers) around an in-memory provider that approves every authorization and issues RS256 JWT
access tokens (``aud`` = the resource the client asked for), with its JWKS at ``/jwks``; it runs on
uvicorn in a thread. The official client's OAuth flow (``OAuthClientProvider``) then finds our
protected resource metadata, registers, obtains a token and lists and calls tools on a live
Flask server; raw HTTP checks the challenges, the metadata documents and the refusals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import jwt
import pytest
import requests
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, cors_middleware, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyHttpUrl, AnyUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from flask_tooldiscovery import SettingsError, ToolContext, ToolDiscovery

from .conftest import live_server

SCOPE = "mcp:tools"
KID = "as-key-1"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never contacted: the redirect handler reads the code


class MetadataWithJwks(OAuthMetadata):
    """RFC 8414 metadata with ``jwks_uri`` (the SDK's model has no such field)."""

    jwks_uri: AnyHttpUrl


class Provider:
    """An in-memory ``OAuthAuthorizationServerProvider`` that approves every authorization for
    subject ``alice`` and issues RS256 JWT access tokens."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.issued: list[dict[str, Any]] = []
        self.metadata_fetches = 0
        self.jwks_fetches = 0

    def jwk(self) -> dict[str, Any]:
        data = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {**data, "kid": KID, "use": "sig", "alg": "RS256"}

    def mint(self, *, aud: str | None, scopes: list[str], sub: str = "alice", client_id: str = "raw",
             lifetime: int = 3600, **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "sub": sub, "scope": " ".join(scopes), "client_id": client_id,
                   "iat": now, "exp": now + lifetime, "jti": secrets.token_hex(8), **claims}
        if aud is not None:
            payload["aud"] = aud
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": KID, "typ": "at+jwt"})

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None, subject: str | None) -> OAuthToken:
        access = self.mint(aud=resource, scopes=scopes, sub=subject or "alice", client_id=client_id)
        self.issued.append(jwt.decode(access, options={"verify_signature": False}))
        refresh = secrets.token_urlsafe(32)
        self.refresh_tokens[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                                    resource=resource, subject=subject)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600, scope=" ".join(scopes),
                          refresh_token=refresh)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32), scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="alice")
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          code: AuthorizationCode) -> OAuthToken:
        del self.codes[code.code]
        return self._tokens(code.client_id, code.scopes, code.resource, code.subject)

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str) -> RefreshToken | None:
        return self.refresh_tokens.get(token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        del self.refresh_tokens[token.token]
        return self._tokens(token.client_id, scopes, token.resource, token.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # resource servers verify the JWT themselves

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh_tokens.pop(token.token, None)


def authorization_server_app(provider: Provider) -> Starlette:
    issuer = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True)).validate_python(provider.issuer)
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE, "other"], default_scopes=[SCOPE])
    revocation = RevocationOptions(enabled=True)
    routes = create_auth_routes(provider, issuer, client_registration_options=registration,
                                revocation_options=revocation)
    metadata = MetadataWithJwks(**build_metadata(issuer, None, registration, revocation).model_dump(),
                                jwks_uri=f"{provider.issuer}/jwks")
    served = MetadataHandler(metadata)

    async def counted_metadata(request: Request) -> Any:
        provider.metadata_fetches += 1
        return await served.handle(request)

    async def jwks(request: Request) -> JSONResponse:
        provider.jwks_fetches += 1
        return JSONResponse({"keys": [provider.jwk()]})

    well_known = "/.well-known/oauth-authorization-server"
    routes = [r for r in routes if getattr(r, "path", None) != well_known]
    routes += [Route(well_known, endpoint=cors_middleware(counted_metadata, ["GET", "OPTIONS"]),
                     methods=["GET", "OPTIONS"]),
               Route("/jwks", endpoint=jwks, methods=["GET"])]
    return Starlette(routes=routes)


@contextlib.contextmanager
def serve_asgi(app_for: Any) -> Iterator[tuple[str, Any]]:
    """``app_for(base_url)`` served by uvicorn on 127.0.0.1 at a free port, in a thread."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    made = app_for(base)
    server = uvicorn.Server(uvicorn.Config(made[0], log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the authorization server did not start"
    try:
        yield base, made[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def auth_server() -> Iterator[Provider]:
    def build(base: str) -> tuple[Starlette, Provider]:
        provider = Provider(base)
        return authorization_server_app(provider), provider

    with serve_asgi(build) as (_, provider):
        yield provider


def tools() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool
    def whoami(ctx: ToolContext) -> dict:
        """Who is calling."""
        return {"user_id": ctx.user_id, "scopes": list(ctx.scopes), "aud": ctx.claims.get("aud"),
                "client_id": ctx.claims.get("client_id")}

    @d.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return d


def make_app(provider: Provider, **config: Any) -> Flask:
    app = Flask("oauth_resource")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp"],
                       "TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS": [provider.issuer],
                       "TOOLDISCOVERY_MCP_SCOPES": [SCOPE], **config})
    tools().init_app(app)
    return app


class MemoryStorage:
    """The client's ``TokenStorage``, in memory."""

    def __init__(self, tokens: OAuthToken | None = None) -> None:
        self.tokens = tokens
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def oauth_client(server_url: str, storage: MemoryStorage, visits: list[str]) -> OAuthClientProvider:
    """The official client's OAuth flow; the "browser" GETs the authorize URL without following its
    redirect and hands the code and state from it to the callback handler."""
    answers: list[AuthorizationCodeResult] = []

    async def redirect_handler(url: str) -> None:
        visits.append(url)
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(url)
        assert response.status_code == 302, response.text
        query = parse_qs(urlsplit(response.headers["location"]).query)
        answers.append(AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                               iss=query.get("iss", [None])[0]))

    async def callback_handler() -> AuthorizationCodeResult:
        return answers.pop()

    metadata = OAuthClientMetadata(client_name="flask-tooldiscovery test client", redirect_uris=[AnyUrl(REDIRECT_URI)],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="client_secret_post")
    return OAuthClientProvider(server_url=server_url, client_metadata=metadata, storage=storage,
                               redirect_handler=redirect_handler, callback_handler=callback_handler)


async def use_tools(server_url: str, auth: OAuthClientProvider, mode: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with Client(streamable_http_client(server_url, http_client=http), mode=mode) as client:
            listed = await client.list_tools()
            who = await client.call_tool("whoami", {})
            added = await client.call_tool("add", {"a": 2, "b": 3})
    return {"tools": [t.name for t in listed.tools], "whoami": who, "added": added}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_completes_the_oauth_flow(auth_server: Provider, mode: str) -> None:
    clients_before, issued_before = len(auth_server.clients), len(auth_server.issued)
    storage, visits = MemoryStorage(), []
    with live_server(make_app(auth_server)) as base:
        server_url = f"{base}/mcp"
        out = asyncio.run(use_tools(server_url, oauth_client(server_url, storage, visits), mode))
    assert out["tools"] == ["whoami", "add"]
    assert out["added"].structured_content == {"result": 5.0}
    assert out["whoami"].is_error is False
    who = out["whoami"].structured_content
    assert who["user_id"] == "alice" and who["scopes"] == [SCOPE] and who["aud"] == server_url
    assert len(auth_server.clients) == clients_before + 1  # registered dynamically (RFC 7591)
    assert who["client_id"] == storage.client_info.client_id  # type: ignore[union-attr]
    assert len(auth_server.issued) == issued_before + 1  # one authorization, one token, every request
    authorize = parse_qs(urlsplit(visits[0]).query)
    assert authorize["resource"] == [server_url] and authorize["scope"] == [SCOPE]  # RFC 8707, our challenge
    assert authorize["code_challenge_method"] == ["S256"]
    assert storage.tokens is not None and storage.tokens.scope == SCOPE


def test_a_token_without_the_scope_is_stepped_up_by_the_client(auth_server: Provider) -> None:
    with live_server(make_app(auth_server)) as base:
        server_url = f"{base}/mcp"
        weak = auth_server.mint(aud=server_url, scopes=["other"])
        storage, visits = MemoryStorage(OAuthToken(access_token=weak, token_type="Bearer", scope="other")), []
        out = asyncio.run(use_tools(server_url, oauth_client(server_url, storage, visits), "legacy"))
    assert out["whoami"].structured_content["scopes"] == ["other", SCOPE]  # 403 insufficient_scope: re-authorized
    assert parse_qs(urlsplit(visits[0]).query)["scope"] == [f"other {SCOPE}"]


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}}


def post(url: str, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(url, json=INITIALIZE, headers=headers, timeout=10)


def test_401_names_the_resource_metadata(auth_server: Provider) -> None:
    with live_server(make_app(auth_server)) as base:
        missing = post(f"{base}/mcp")
        wrong = post(f"{base}/mcp", "not-a-jwt")
    metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata}", scope="{SCOPE}"'
    assert missing.json()["error"]["code"] == -32600  # the MCP dialect's own error shape
    assert wrong.status_code == 401
    assert wrong.headers["WWW-Authenticate"] == (
        f'Bearer error="invalid_token", resource_metadata="{metadata}", scope="{SCOPE}"')


def test_protected_resource_metadata_at_both_paths(auth_server: Provider) -> None:
    with live_server(make_app(auth_server, TOOLDISCOVERY_SERVER_NAME="acme")) as base:
        documents = [requests.get(f"{base}/.well-known/oauth-protected-resource{suffix}", timeout=10)
                     for suffix in ("", "/mcp")]
        preflight = requests.options(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=10, headers={
            "Origin": "http://inspector.test", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "mcp-protocol-version"})
        elsewhere = requests.get(f"{base}/.well-known/oauth-protected-resource/other", timeout=10)
    expected = {"resource": f"{base}/mcp", "authorization_servers": [auth_server.issuer],
                "bearer_methods_supported": ["header"], "resource_name": "acme", "scopes_supported": [SCOPE]}
    for document in documents:
        assert document.status_code == 200 and document.headers["Content-Type"] == "application/json"
        assert document.json() == expected
        assert document.headers["Access-Control-Allow-Origin"] == "*"
    assert preflight.status_code == 200 and preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert "MCP-Protocol-Version" in preflight.headers["Access-Control-Allow-Headers"]
    assert elsewhere.status_code == 404


def test_a_configured_resource_is_what_tokens_must_name(auth_server: Provider) -> None:
    resource = "https://tools.example/api/mcp"
    app = make_app(auth_server, TOOLDISCOVERY_MCP_RESOURCE=resource, TOOLDISCOVERY_MCP_SCOPES=[])
    client = app.test_client()
    for path in ("", "/mcp", "/api/mcp"):  # the proxy's path too
        document = client.get(f"/.well-known/oauth-protected-resource{path}").get_json()
        assert document["resource"] == resource and "scopes_supported" not in document
    refused = client.post("/mcp", json=INITIALIZE)
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer resource_metadata="https://tools.example/.well-known/oauth-protected-resource/api/mcp"')
    ok = client.post("/mcp", json=INITIALIZE, headers={
        "Authorization": f"Bearer {auth_server.mint(aud=resource, scopes=[])}"})
    assert ok.status_code == 200 and ok.get_json()["result"]["serverInfo"]
    local = client.post("/mcp", json=INITIALIZE, headers={
        "Authorization": f"Bearer {auth_server.mint(aud='http://localhost/mcp', scopes=[])}"})
    assert local.status_code == 401


def test_403_insufficient_scope(auth_server: Provider) -> None:
    with live_server(make_app(auth_server)) as base:
        r = post(f"{base}/mcp", auth_server.mint(aud=f"{base}/mcp", scopes=["other"]))
    assert r.status_code == 403
    assert r.headers["WWW-Authenticate"] == (
        f'Bearer error="insufficient_scope", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", '
        f'scope="{SCOPE}"')
    assert r.json()["error"]["message"] == "Forbidden: the access token lacks a required scope."


def test_tokens_for_another_resource_or_from_elsewhere_are_refused(auth_server: Provider) -> None:
    with live_server(make_app(auth_server)) as base:
        resource = f"{base}/mcp"
        good = auth_server.mint(aud=resource, scopes=[SCOPE])
        forger = Provider(auth_server.issuer)  # same issuer and key id, another key
        refused = {
            "another resource": auth_server.mint(aud="http://127.0.0.1:1/mcp", scopes=[SCOPE]),
            "several, not ours": auth_server.mint(aud=["http://a.test/mcp", "http://b.test/mcp"], scopes=[SCOPE]),
            "no audience": auth_server.mint(aud=None, scopes=[SCOPE]),
            "expired": auth_server.mint(aud=resource, scopes=[SCOPE], lifetime=-60),
            "another issuer": auth_server.mint(aud=resource, scopes=[SCOPE], iss="http://127.0.0.1:1"),
            "forged": forger.mint(aud=resource, scopes=[SCOPE]),
            "HS256": jwt.encode({"iss": auth_server.issuer, "aud": resource, "scope": SCOPE,
                                 "exp": int(time.time()) + 60}, "s" * 32, algorithm="HS256"),
        }
        assert post(resource, good).status_code == 200
        assert post(resource, auth_server.mint(aud=[resource, "http://b.test"], scopes=[SCOPE])).status_code == 200
        for what, token in refused.items():
            r = post(resource, token)
            assert r.status_code == 401, what
            assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token", resource_metadata='), what


def test_the_jwks_uri_is_discovered_once(auth_server: Provider) -> None:
    app = make_app(auth_server)
    client = app.test_client()
    before = auth_server.metadata_fetches
    for _ in range(3):
        token = auth_server.mint(aud="http://localhost/mcp", scopes=[SCOPE])
        assert client.post("/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert auth_server.metadata_fetches == before + 1


def test_a_jwks_url_setting_skips_discovery(auth_server: Provider) -> None:
    app = make_app(auth_server, TOOLDISCOVERY_MCP_JWKS_URL=f"{auth_server.issuer}/jwks")
    before = auth_server.metadata_fetches
    token = auth_server.mint(aud="http://localhost/mcp", scopes=[SCOPE])
    assert app.test_client().post("/mcp", json=INITIALIZE, headers={
        "Authorization": f"Bearer {token}"}).status_code == 200
    assert auth_server.metadata_fetches == before


def test_an_unreachable_authorization_server_is_a_401_not_a_crash(auth_server: Provider, caplog) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    nobody = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: refused at once
    app = Flask("x")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=[nobody])
    tools().init_app(app)
    token = jwt.encode({"iss": nobody, "aud": "http://localhost/mcp", "exp": int(time.time()) + 60},
                       auth_server.key, algorithm="RS256", headers={"kid": KID})
    try:
        r = app.test_client().post("/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {token}"})
    finally:
        sock.close()
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    assert "metadata" in caplog.text or nobody in caplog.text


def test_settings_are_checked() -> None:
    def init(**config: Any) -> None:
        app = Flask("x")
        app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], **config)
        ToolDiscovery().init_app(app)

    with pytest.raises(SettingsError, match="TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS must be an absolute"):
        init(TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["as.example.com"])
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_MCP_RESOURCE must be an absolute"):
        init(TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS="https://as.example", TOOLDISCOVERY_MCP_RESOURCE="/mcp#x")
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_MCP_SCOPES only apply with"):
        init(TOOLDISCOVERY_MCP_SCOPES="tools", TOOLDISCOVERY_MCP_BEARER_TOKEN="t")
    init(TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS="https://a.example, https://b.example/tenant",
         TOOLDISCOVERY_MCP_JWKS_URL="https://b.example/keys?p=policy")  # no network at init_app


def test_without_authorization_servers_nothing_is_mounted_at_the_root() -> None:
    app = Flask("x")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_BEARER_TOKEN="t")
    tools().init_app(app)
    client = app.test_client()
    assert client.get("/.well-known/oauth-protected-resource/mcp").status_code == 404
    assert client.post("/mcp", json=INITIALIZE).headers["WWW-Authenticate"] == 'Bearer realm="mcp"'


def test_beside_the_identity_layer_the_challenge_still_names_the_metadata(auth_server: Provider) -> None:
    d = tools()
    d.identity(lambda request: request.headers.get("X-User"))
    app = Flask("x")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"],
                      TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=[auth_server.issuer])
    d.init_app(app)
    client = app.test_client()
    refused = client.post("/mcp", json=INITIALIZE)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"')
    assert client.post("/mcp", json=INITIALIZE, headers={"X-User": "bob"}).status_code == 200


def test_the_metadata_answers_only_for_allowed_hosts(auth_server: Provider) -> None:
    client = make_app(auth_server).test_client()
    path = "/.well-known/oauth-protected-resource/mcp"
    assert client.get(path, headers={"Host": "rebind.evil.example"}).status_code == 421
    served = make_app(auth_server, TOOLDISCOVERY_ALLOWED_HOSTS=["tools.example"]).test_client()
    document = served.get(path, headers={"Host": "tools.example"}, base_url="https://tools.example").get_json()
    assert document["resource"] == "https://tools.example/mcp"
