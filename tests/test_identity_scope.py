"""An identity hook refuses a signed-in caller who lacks a scope with ``403`` and
``WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`` (raising
:class:`flask_tooldiscovery.InsufficientScope`), in every dialect's error shape; where MCP serves
protected resource metadata the challenge names it, with the scopes its tokens need, so an OAuth
client steps up. Any other exception of the hook stays a ``401``."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from flask_tooldiscovery import Identity, InsufficientScope, ToolDiscovery

from .conformance.drivers import DRIVERS
from .test_identity import KeyServer, build, issuer, whoami_tools  # noqa: F401 - the JWKS fixture
from .test_identity_access_tokens import INITIALIZE, MCP_RESOURCE, bearer, mcp_oauth_config, signed

DIALECTS = sorted(DRIVERS)


def read_only_hook() -> ToolDiscovery:
    d = ToolDiscovery()
    whoami_tools(d)

    @d.identity
    def signed_in(request: Any) -> Identity | None:
        user = request.headers.get("X-User")
        if user == "reader":
            raise InsufficientScope(scopes=["tools:call"], reason="reader is read-only: secret detail")
        return Identity(subject=user) if user else None

    return d


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_hook_refuses_a_known_caller_with_403_and_the_scope(dialect: str, caplog) -> None:
    driver, client = DRIVERS[dialect], build(dialect, read_only_hook()).test_client()
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        r = driver.call(client, "whoami", {}, headers={"X-User": "reader"})
    assert r.status_code == 403
    assert r.headers["WWW-Authenticate"] == 'Bearer realm="tools", error="insufficient_scope", scope="tools:call"'
    assert "secret detail" not in r.get_data(as_text=True)
    assert "reader is read-only: secret detail" in caplog.text  # the log says why
    assert driver.call(client, "whoami", {}).status_code == 401  # nobody signed in: still 401
    ok = driver.result(driver.call(client, "whoami", {}, headers={"X-User": "writer"}))
    assert ok.kind == "ok" and ok.value["user_id"] == "writer"


def test_without_a_reason_the_log_names_the_missing_scopes(caplog) -> None:
    d = ToolDiscovery()
    whoami_tools(d)
    d.identity(lambda request: (_ for _ in ()).throw(InsufficientScope(scopes=["a", "b"])))
    r = build("tdp", d).test_client().post("/api/v1/tools/execute", json={"tool_name": "whoami"})
    assert r.status_code == 403 and r.headers["WWW-Authenticate"].endswith('scope="a b"')
    assert "identity hook: the caller lacks scope(s) a b" in caplog.text


def test_where_mcp_serves_resource_metadata_the_403_names_it(issuer: KeyServer) -> None:  # noqa: F811
    client = build("mcp", read_only_hook(), **mcp_oauth_config(issuer, TOOLDISCOVERY_MCP_SCOPES=["mcp:tools"])
                   ).test_client()
    r = client.post("/mcp", json=INITIALIZE, headers={"X-User": "reader"})
    assert r.status_code == 403
    assert r.headers["WWW-Authenticate"] == (
        'Bearer error="insufficient_scope", '
        'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp", scope="mcp:tools tools:call"')
    assert r.get_json()["error"]["message"] == "Forbidden: the access token lacks a required scope."
    token = signed(issuer, {"typ": "at+jwt"}, aud=MCP_RESOURCE, scope="mcp:tools")
    assert client.post("/mcp", json=INITIALIZE, headers=bearer(token)).status_code == 200  # the token still lets in


def test_any_other_exception_of_the_hook_stays_a_401() -> None:
    d = ToolDiscovery()
    whoami_tools(d)

    @d.identity
    def broken(request: Any) -> Identity:
        raise PermissionError("no")

    r = build("tdp", d).test_client().post("/api/v1/tools/execute", json={"tool_name": "whoami"})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == 'Bearer realm="tools"'


def test_authlibs_own_insufficient_scope_error_is_a_403_too(issuer: KeyServer, caplog) -> None:  # noqa: F811
    """A hook that leaves Authlib's ``InsufficientScopeError`` uncaught: 403 ``insufficient_scope``
    (without a scope: Authlib's error names none), MCP's resource metadata named where served."""
    from authlib.integrations.flask_oauth2 import ResourceProtector
    from authlib.oauth2.rfc6749 import TokenMixin
    from authlib.oauth2.rfc6750 import BearerTokenValidator

    class Token(TokenMixin):
        def get_scope(self) -> str:
            return "profile"

        def get_expires_in(self) -> int:
            return 60

        def is_expired(self) -> bool:
            return False

        def is_revoked(self) -> bool:
            return False

        def check_client(self, client: Any) -> bool:
            return True

    class Validator(BearerTokenValidator):
        def authenticate_token(self, token_string: str) -> Token | None:
            return Token() if token_string == "tok-profile" else None

    protector = ResourceProtector()
    protector.register_token_validator(Validator())

    def discovery() -> ToolDiscovery:
        d = ToolDiscovery()
        whoami_tools(d)
        d.identity(lambda request: Identity(subject=str(protector.acquire_token(["tools"]))))
        return d

    r = DRIVERS["opal"].call(build("opal", discovery()).test_client(), "whoami", {}, headers=bearer("tok-profile"))
    assert r.status_code == 403 and r.headers["WWW-Authenticate"] == 'Bearer realm="tools", error="insufficient_scope"'
    assert "identity hook: InsufficientScopeError (insufficient_scope)" in caplog.text
    mcp = build("mcp", discovery(), **mcp_oauth_config(issuer)).test_client()
    r = mcp.post("/mcp", json=INITIALIZE, headers=bearer("tok-profile"))
    assert r.status_code == 403 and r.headers["WWW-Authenticate"] == (
        'Bearer error="insufficient_scope", '
        'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"')
    assert mcp.post("/mcp", json=INITIALIZE, headers=bearer("tok-none")).status_code == 401


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_the_explorers_auth_hook_may_answer_403_too(flavour: str, caplog) -> None:
    """The auth hook (asked around the call) refuses a known caller with 403 as the identity hook does."""
    import contextlib

    d = ToolDiscovery()
    whoami_tools(d)

    def refuse(request: Any) -> None:
        if request.headers.get("X-Staff") != "yes":
            raise InsufficientScope(scopes=["staff"], reason="not staff")

    @contextlib.contextmanager
    def sync_hook(request: Any) -> Any:
        refuse(request)
        yield

    @contextlib.asynccontextmanager
    async def async_hook(request: Any) -> Any:
        refuse(request)
        yield

    d.auth_hook(sync_hook if flavour == "sync" else async_hook)
    client = build("explorer", d).test_client()
    driver = DRIVERS["explorer"]
    r = driver.call(client, "whoami", {})
    assert r.status_code == 403
    assert r.headers["WWW-Authenticate"] == 'Bearer realm="explorer", error="insufficient_scope", scope="staff"'
    assert "not staff" in caplog.text and "not staff" not in r.get_data(as_text=True)
    assert driver.result(driver.call(client, "whoami", {}, headers={"X-Staff": "yes"})).kind == "ok"
