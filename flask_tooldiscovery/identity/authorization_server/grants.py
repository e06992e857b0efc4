"""Authlib's grants, made this server's: the authorization code grant with PKCE (S256 only, for
every client), resource indicators (RFC 8707) and refresh tokens that rotate, each used once.

The grants read and write through :class:`~.records.Records` (``server.records``) and ask the
server which resources it serves (``server.resources()``)."""

from __future__ import annotations

import time
from typing import Any

from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError, InvalidScopeError, OAuth2Error
from authlib.oauth2.rfc7636 import CodeChallenge

from ...errors import ToolDiscoveryError
from .models import Client, Code, Token, User
from .records import Records, new_family

TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]


class InvalidTargetError(OAuth2Error, ToolDiscoveryError):  # type: ignore[misc]
    """RFC 8707 section 2: the resource asked for is not one this server issues tokens for."""

    error = "invalid_target"


def requested_resource(request: Any) -> str | None:
    """The one ``resource`` parameter of ``request`` (``None`` when absent); several are refused."""
    values = request.payload.datalist.get("resource", [])
    if len(values) > 1:
        raise InvalidTargetError("Only one 'resource' may be asked for.")
    return values[0] if values else None


class S256Challenge(CodeChallenge):  # type: ignore[misc]
    """PKCE required of every client, S256 only: a request without ``code_challenge``, or with
    ``plain`` (or no method, which means plain), is refused (RFC 9700 section 2.1.1)."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: Any) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge with code_challenge_method=S256.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256.")
        super().validate_code_challenge(grant, redirect_uri)

    def validate_code_verifier(self, grant: Any, result: Any) -> None:
        if not grant.request.form.get("code_verifier"):
            raise InvalidRequestError("Missing 'code_verifier'.")
        super().validate_code_verifier(grant, result)


class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS
    server: Any  # the Server of .server (which imports this module)

    def validate_authorization_request(self) -> str:
        redirect_uri: str = super().validate_authorization_request()
        try:
            self.request.scope = self.server.granted_scope(self.request.payload.scope, self.request.client)
            self.request.resource = self.server.check_resource(requested_resource(self.request))
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        self.server.records.save_code(code, Code(
            client_id=request.client.get_client_id(), user_id=request.user.get_user_id(),
            redirect_uri=request.payload.redirect_uri, scope=request.scope,
            code_challenge=data["code_challenge"], code_challenge_method=data["code_challenge_method"],
            resource=request.resource, family=new_family(), issued_at=time.time()))

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        records: Records = self.server.records
        return records.take_code(code, client)

    def delete_authorization_code(self, authorization_code: Code) -> None:
        """Taken already, when it was read."""

    def authenticate_user(self, authorization_code: Code) -> User:
        return User(authorization_code.user_id)

    def validate_token_request(self) -> None:
        super().validate_token_request()
        asked = requested_resource(self.request)
        code: Code = self.request.authorization_code
        if asked is None or asked == code.resource:
            return
        if code.resource == self.server.issuer():  # authorized for the whole app: a part of it may be asked
            code.resource = self.server.check_resource(asked)
            return
        raise InvalidTargetError("The resource differs from the one authorized.")


class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True
    server: Any  # the Server of .server (which imports this module)

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        records: Records = self.server.records
        token = records.token(refresh_token, "refresh")
        if token is None or not token.check_client(self.request.client):
            return None
        if not records.spend_refresh(token):
            return None
        asked = requested_resource(self.request)
        if asked is not None and asked != token.resource:
            raise InvalidTargetError("The resource differs from the one authorized.")
        return token

    def _validate_token_scope(self, token: Token) -> None:
        scope = self.request.payload.scope
        if scope and not set(scope.split()) <= set(token.scope.split()):
            raise InvalidScopeError("The scope asked for is wider than the one granted.")

    def authenticate_user(self, refresh_token: Token) -> User:
        return User(refresh_token.user_id)

    def revoke_old_credential(self, refresh_token: Token) -> None:
        """Spent already, when it was read (a second use revokes the grant)."""


__all__ = ["CodeGrant", "InvalidTargetError", "RefreshGrant", "S256Challenge", "requested_resource"]
