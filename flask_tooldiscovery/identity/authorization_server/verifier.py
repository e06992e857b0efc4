"""This server's access tokens, verified for the identity layer (no Authlib needed here: the
records are read straight from the state store).

A token is good while its record and its grant's record live (it expires, or is revoked with its
grant); it names its grant, so both are read at once (one Redis round trip, ``MGET``), for the
resources ``accepts`` allows: every dialect takes a token issued for this app (its issuer, or a
URL under it); MCP only one for its own endpoint or the app as a whole (RFC 8707). The caller is
the user who granted it (``ctx.user_id``), with the scopes granted."""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Iterable

from flask import Request

from ...errors import StoreError
from ...tools.model import Identity
from ..sources import AuthError, ScopeError, Verifier
from ..verifiers import AUTHORIZATION, bearer_token
from .settings import OAuthServerSettings
from .storage import Store, digest, for_uri, named_grant


def issuer_of(options: OAuthServerSettings, url_root: str) -> str:
    """The issuer URL: ``OAUTH_ISSUER``, else the request's scheme, host and script root (its
    ``url_root``, passed) with no final slash."""
    return options.issuer.rstrip("/") if options.issuer else url_root.rstrip("/")


def under(resource: str, base: str) -> bool:
    """``resource`` is ``base`` or a URL below it."""
    resource, base = resource.rstrip("/"), base.rstrip("/")
    return resource == base or resource.startswith(base + "/")


class ServerTokenVerifier(Verifier):
    """Access tokens this app's authorization server issued (see the module's docstring).
    ``accepts(resource, request)``: the token's resource may be used here. ``metadata_url``: the
    protected resource metadata its challenges name (MCP's), which then take precedence."""

    reads = AUTHORIZATION

    def __init__(self, options: OAuthServerSettings, state_uri: str | None, realm: str, *,
                 accepts: Callable[[str, Request], bool] | None = None,
                 metadata_url: Callable[[Request], str] | None = None, scopes: Iterable[str] = ()) -> None:
        super().__init__(realm)
        self.options = options
        self.store: Store = for_uri(state_uri)
        self.accepts = accepts or (lambda resource, req: under(resource, issuer_of(options, req.url_root)))
        self.metadata_url = metadata_url
        self.scopes = tuple(scopes)
        if metadata_url is not None:
            self.challenge_priority = 1

    def verify(self, request: Request) -> Identity | None:
        token = bearer_token(request)
        if token is None:
            return None
        try:
            family = named_grant(token)
            if family is not None:  # one round trip: the token's record and its grant's
                record, grant = self.store.get_many("access:" + digest(token), "grant:" + family)
                if record is not None and str(record.get("family")) != family:
                    raise AuthError("token unknown, expired or revoked")
            else:  # issued before tokens named their grant
                record = self.store.get("access:" + digest(token))
                grant = None if record is None else self.store.get("grant:" + str(record.get("family")))
            if record is None:
                raise AuthError("token unknown, expired or revoked")
            if float(record.get("expires_at", 0)) <= time.time():
                raise AuthError("token expired")
        except StoreError as exc:
            raise AuthError(f"token cannot be checked: {exc}") from None
        if grant is None or not hmac.compare_digest(str(grant.get("user_id")), str(record.get("user_id"))):
            raise AuthError("token's grant was revoked")
        resource = str(record.get("resource", ""))
        if not self.accepts(resource, request):
            raise AuthError("token was issued for another resource")
        scopes = tuple(str(record.get("scope", "")).split())
        claims = {"iss": issuer_of(self.options, request.url_root), "sub": record["user_id"], "aud": resource,
                  "client_id": record.get("client_id"), "scope": " ".join(scopes), "exp": int(record["expires_at"])}
        identity = Identity(subject=str(record["user_id"]), scopes=scopes, claims=claims, method="oauth")
        if missing := [s for s in self.scopes if s not in scopes]:
            raise ScopeError(f"token lacks scope(s) {' '.join(missing)}", scopes=self.scopes,
                             challenge=self._challenge(request, "insufficient_scope"))
        return identity

    def challenge(self, request: Request) -> str:
        return self._challenge(request, "invalid_token" if bearer_token(request) is not None else None)

    def _challenge(self, request: Request, error: str | None) -> str:
        parts = [f'realm="{self.realm}"'] if self.metadata_url is None else []
        if error:
            parts.append(f'error="{error}"')
        if self.metadata_url is not None:
            parts.append(f'resource_metadata="{self.metadata_url(request)}"')
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        return "Bearer " + ", ".join(parts)


__all__ = ["ServerTokenVerifier", "issuer_of", "under"]
