"""What a verified JWT must be to open a call: an access token, never a refresh token or an ID
token signed with the same key, carrying every claim the app requires.

Every JWT verifier applies these rules after the signature, ``exp``, ``iss`` and ``aud`` checks
(``TOOLDISCOVERY_JWT_SECRET``, ``TOOLDISCOVERY_JWT_JWKS_URL``, ``TOOLDISCOVERY_OXP_JWT_SECRET``
and the tokens of ``TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS``):

* the header's ``typ`` (RFC 7515 section 4.1.9, compared case-insensitively, an ``application/``
  prefix dropped) is absent, ``JWT`` or ``at+jwt`` (RFC 9068's access token); any other type
  (``refresh+jwt``, ``id+jwt``, ``logout+jwt``, ``dpop+jwt``...) is another kind of token;
* the claims that name a token's kind, when present, name an access token: ``type`` is ``access``
  (Flask-JWT-Extended's refresh tokens say ``refresh``), ``token_use`` is ``access`` (Amazon
  Cognito's ID tokens say ``id``), and ``typ`` is ``Bearer`` (Keycloak's refresh and ID tokens say
  ``Refresh`` and ``ID``), ``JWT`` or ``at+jwt``;
* every claim named in ``TOOLDISCOVERY_JWT_REQUIRED_CLAIMS`` is present (PyJWT checks it).

A refused token is the caller's mistake, an :class:`~.sources.AuthError`: a ``401`` whose reason
(the log's) names the rule, while the client is told only that the token is invalid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..settings import Settings, SettingsError, key
from .sources import Authenticator, AuthError

#: The header ``typ`` values of a token that may be an access token (lower case, no ``application/``).
ACCESS_TYPES = frozenset({"jwt", "at+jwt"})
#: Claims that name a token's kind, and the values an access token's carry (compared case-insensitively).
KIND_CLAIMS: Mapping[str, frozenset[str]] = {
    "type": frozenset({"access"}),
    "token_use": frozenset({"access"}),
    "typ": frozenset({"bearer", "jwt", "at+jwt"}),
}


def media_type(value: str) -> str:
    """A ``typ`` value as RFC 7515 compares it: lower case, without the ``application/`` prefix."""
    value = value.strip().lower()
    return value.removeprefix("application/")


def refuse_other_kinds(header: Mapping[str, Any], claims: Mapping[str, Any]) -> None:
    """Raise :class:`~.sources.AuthError` unless the verified token (its ``header`` and ``claims``)
    is an access token by the rules of this module."""
    typ = header.get("typ")
    if typ is not None and (not isinstance(typ, str) or media_type(typ) not in ACCESS_TYPES):
        raise AuthError(f"not an access token: header typ {str(typ)[:40]!r}")
    for name, accepted in KIND_CLAIMS.items():
        value = claims.get(name)
        if value is not None and (not isinstance(value, str) or media_type(value) not in accepted):
            raise AuthError(f"not an access token: claim {name} is {str(value)[:40]!r}")


def required(claims: Iterable[str], *also: str) -> list[str]:
    """PyJWT's ``require`` option: ``also`` (``exp``...) then ``claims``, each once."""
    return list(dict.fromkeys((*also, *claims)))


def check_required_claims(settings: Settings, authenticators: Iterable[Authenticator | None]) -> None:
    """Refuse ``TOOLDISCOVERY_JWT_REQUIRED_CLAIMS`` set where no dialect verifies a JWT: it would
    change nothing, and whoever set it meant every token to carry those claims."""
    if not settings.jwt_required_claims:
        return
    if any(v.verifies_jwts for auth in authenticators if auth is not None for v in auth.verifiers):
        return
    raise SettingsError(f"{key('JWT_REQUIRED_CLAIMS')} only applies where JWTs are verified: set "
                        f"{key('JWT_SECRET')} or {key('JWT_JWKS_URL')} (or {key('OXP_JWT_SECRET')}, "
                        f"{key('MCP_AUTHORIZATION_SERVERS')} with their dialect mounted)")


__all__ = ["ACCESS_TYPES", "KIND_CLAIMS", "check_required_claims", "media_type", "refuse_other_kinds", "required"]
