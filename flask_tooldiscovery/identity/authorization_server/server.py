"""The authorization server: Authlib's Flask ``AuthorizationServer`` with this package's grants,
client registration, revocation and records, for one app.

The issuer is the app's external base URL (``OAUTH_ISSUER``, else the request's scheme, host and
script root); the resources it issues tokens for are the app: the issuer itself, or a URL under it
(the MCP endpoint's, its protected resource). A request without ``resource`` is for the issuer.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidScopeError
from authlib.oauth2.rfc9207 import IssuerParameter
from flask import request

from .cimd import Documents, is_document_url, url_problem
from .grants import CodeGrant, InvalidTargetError, RefreshGrant, S256Challenge
from .models import Client
from .records import Grant, Records
from .settings import OAuthServerSettings
from .storage import naming_grant
from .verifier import issuer_of, under


class Issuer(IssuerParameter):  # type: ignore[misc]
    """RFC 9207: ``iss`` in every authorization response, errors included (mix-up defence)."""

    def __init__(self, issuer: Callable[[], str]) -> None:
        self._issuer = issuer

    def get_issuer(self) -> str:
        return self._issuer()


class Server(AuthorizationServer):  # type: ignore[misc]
    """One app's authorization server (see the module's docstring)."""

    def __init__(self, options: OAuthServerSettings, records: Records, documents: Documents) -> None:
        super().__init__()
        self.options = options
        self.records = records
        self.documents = documents
        self.scopes_supported = list(options.scopes)
        self.register_token_generator("default", self._generate_token)
        self.register_grant(CodeGrant, [S256Challenge(required=True)])
        self.register_grant(RefreshGrant)
        self.register_extension(Issuer(self.issuer))

    # -- this server's identity -----------------------------------------------------------------

    def issuer(self) -> str:
        """The issuer URL, without a final slash."""
        return issuer_of(self.options, request.url_root)

    def check_resource(self, asked: str | None) -> str:
        """The resource a token is bound to (RFC 8707): ``asked`` when it is this app (the issuer or
        a URL under it, such as the MCP endpoint), ``invalid_target`` otherwise; none asked: the app."""
        issuer = self.issuer()
        if asked is None:
            return issuer
        if "#" in asked or not under(asked, issuer):
            raise InvalidTargetError("This server issues no tokens for that resource.")
        return asked

    def granted_scope(self, asked: str | None, client: Client) -> str:
        """The scopes granted for ``asked``: those this server knows (others, such as
        ``offline_access``, are left out); none asked for: every scope the client may have."""
        known = [s for s in self.options.scopes if client.scope is None or s in client.scope.split()]
        if not asked:
            return " ".join(known)
        granted = [s for s in dict.fromkeys(asked.split()) if s in known]
        if not granted:
            raise InvalidScopeError("None of the scopes asked for is known here.")
        return " ".join(granted)

    def validate_requested_scope(self, scope: Any) -> None:
        """Left to :meth:`granted_scope`, which knows the client."""

    # -- Authlib's hooks ------------------------------------------------------------------------

    def query_client(self, client_id: str) -> Client | None:
        if not isinstance(client_id, str) or not client_id or len(client_id) > 2000:
            return None
        allow_http = self.options.cimd_allow_loopback
        if self.options.client_metadata_documents and is_document_url(client_id, allow_http=allow_http) \
                and url_problem(client_id) is None:
            return self.documents.client(client_id)
        return self.records.client(client_id)

    def save_token(self, token: dict[str, Any], req: Any) -> None:
        if req.authorization_code is not None:
            code = req.authorization_code
            self.records.open_grant(code.family, user_id=code.user_id, client=req.client, scope=code.scope,
                                    resource=code.resource)
            grant = self.records.grant(code.family)
        else:
            grant = self.records.grant(req.refresh_token.family)
        if grant is None:  # revoked between the check and now
            raise InvalidGrantError("The grant was revoked.")
        token["access_token"] = naming_grant(token["access_token"], grant.id)  # the response's token
        if not self.records.issue(token, grant, token.get("scope") or grant.scope):
            raise InvalidGrantError("The grant was revoked.")

    def _generate_token(self, grant_type: str, client: Client, user: Any = None, scope: str | None = None,
                        expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:
        token: dict[str, Any] = {"token_type": "Bearer", "access_token": secrets.token_urlsafe(32),
                                 "expires_in": self.options.access_token_ttl}
        if scope:
            token["scope"] = scope
        if include_refresh_token:
            token["refresh_token"] = secrets.token_urlsafe(32)
        return token

    def grants_of(self, user_id: str) -> list[Grant]:
        return self.records.grants_of(user_id)


__all__ = ["Issuer", "Server"]
