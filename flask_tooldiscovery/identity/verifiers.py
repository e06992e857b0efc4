"""The built-in credential verifiers, each one kind of identity source of
:mod:`~flask_tooldiscovery.identity.sources`: a static bearer token, a static API key, an HS256
JWT, a JWT verified with a JWKS, and an OAuth 2.1 resource server's access tokens.

Comparisons of secrets are constant-time; no secret is ever logged."""

from __future__ import annotations

import hmac
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from flask import Request

from ..settings import PUBLIC_KEY_ALGORITHMS
from ..tools.model import Identity
from .sources import AuthError, ScopeError, Verifier
from .tokens import refuse_other_kinds, required


def secrets_equal(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented secret with the configured one."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or ``None``."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def verify_jwt(
    token: str,
    secret: str,
    *,
    audience: str | Iterable[str] | None = None,
    issuer: str | None = None,
    require_exp: bool = True,
    claims: Mapping[str, Any] | None = None,
    required_claims: Iterable[str] = (),
) -> dict[str, Any]:
    """Verify an HS256 JWT and return its claims; raise :class:`AuthError` otherwise.

    Only HS256 is accepted (``alg: none`` and every other algorithm are refused). ``exp`` is
    required unless ``require_exp`` is false, and each of ``required_claims`` always; ``iss`` must
    be ``issuer`` when given; ``aud`` must match ``audience`` when given, and a token that names an
    audience is refused when no ``audience`` is (RFC 7519 section 4.1.3: it was meant for someone
    else); each of ``claims`` must be present with exactly that value; and the token must be an
    access token (:func:`~.tokens.refuse_other_kinds`: a refresh token signed with the same secret
    is refused).
    """
    jwt = require_jwt()
    options: Any = {"require": required(required_claims, *(["exp"] if require_exp else []))}
    aud: Any = audience
    if audience is not None and not isinstance(audience, str):
        aud = list(audience)
    with refusing():
        complete = jwt.decode_complete(token, secret, algorithms=["HS256"], audience=aud, issuer=issuer,
                                       options=options)
        payload: dict[str, Any] = complete["payload"]
        refuse_other_kinds(complete["header"], payload)
    for name, value in (claims or {}).items():
        if payload.get(name) != value:
            raise AuthError(f"claim {name} missing or not accepted")
    return payload


@contextmanager
def refusing() -> Iterator[None]:
    """Verify a token inside: whatever makes it fail is the client's, an :class:`AuthError` (a
    401), never a 500. PyJWT raises its own errors for most bad tokens, but a ``TypeError`` or
    ``ValueError`` when the key a token points to does not fit its ``alg`` (an RS256 token naming
    an EC key of the JWKS) or when its parts are not what it expects."""
    import jwt

    try:
        yield
    except AuthError:
        raise
    except jwt.ExpiredSignatureError:
        raise AuthError("token expired") from None
    except jwt.MissingRequiredClaimError as exc:
        raise AuthError(f"token lacks claim {exc.claim}") from None
    except jwt.InvalidAudienceError:
        raise AuthError("token audience not accepted") from None
    except jwt.InvalidIssuerError:
        raise AuthError("token issuer not accepted") from None
    except jwt.InvalidAlgorithmError:
        raise AuthError("token algorithm not accepted") from None
    except jwt.PyJWKClientConnectionError:
        raise AuthError("the JWKS could not be fetched") from None
    except jwt.PyJWTError as exc:
        raise AuthError(f"invalid token: {type(exc).__name__}") from None
    except Exception as exc:  # a token no key can verify is refused, whatever broke
        raise AuthError(f"token could not be verified: {type(exc).__name__}") from None


#: What a verifier of an ``Authorization: Bearer`` token reads (see :attr:`Verifier.reads`).
AUTHORIZATION = ("HTTP_AUTHORIZATION",)


class BearerVerifier(Verifier):
    """A static bearer token (constant-time comparison)."""

    reads = AUTHORIZATION

    def __init__(self, token: str, realm: str) -> None:
        super().__init__(realm)
        self._token = token

    def verify(self, request: Request) -> Identity | None:
        token = bearer_token(request)
        if token is None:
            return None
        if not secrets_equal(token, self._token):
            raise AuthError("wrong bearer token")
        return Identity(method="bearer")

    def challenge(self, request: Request) -> str:
        value = super().challenge(request)
        return value + (', error="invalid_token"' if request.headers.get("Authorization") else "")


class ApiKeyVerifier(Verifier):
    """A static API key in a header (OXP's ``OXP-API-Key``)."""

    def __init__(self, key: str, header: str, realm: str) -> None:
        super().__init__(realm)
        self._key = key
        self.header = header
        self.scheme = header
        self.reads = ("HTTP_" + header.upper().replace("-", "_"),)

    def verify(self, request: Request) -> Identity | None:
        presented = request.headers.get(self.header)
        if presented is None:
            return None
        if not secrets_equal(presented, self._key):
            raise AuthError("API key wrong")
        return Identity(method="api_key")


class JwtVerifier(Verifier):
    """An HS256 JWT as a bearer token (see :func:`verify_jwt`)."""

    reads = AUTHORIZATION
    verifies_jwts = True

    def __init__(self, secret: str, realm: str, *, audience: str | Iterable[str] | None = None,
                 issuer: str | None = None, require_exp: bool = True,
                 claims: Mapping[str, Any] | None = None, required_claims: Iterable[str] = ()) -> None:
        super().__init__(realm)
        require_jwt()
        self._secret = secret
        self.audience = audience
        self.issuer = issuer
        self.require_exp = require_exp
        self.claims = dict(claims or {})
        self.required_claims = tuple(required_claims)

    def verify(self, request: Request) -> Identity | None:
        token = bearer_token(request)
        if token is None:
            return None
        payload = verify_jwt(token, self._secret, audience=self.audience, issuer=self.issuer,
                             require_exp=self.require_exp, claims=self.claims or None,
                             required_claims=self.required_claims)
        return identity_from_claims(payload, "jwt")

    def challenge(self, request: Request) -> str:
        value = super().challenge(request)
        return value + (', error="invalid_token"' if bearer_token(request) is not None else "")


class JwksVerifier(Verifier):
    """A bearer JWT signed by a key of a JWKS (RS256/ES256...): ``iss``, ``aud`` and ``exp``
    checked (a token naming an audience is refused when none is configured). Only public-key
    algorithms are taken: an HMAC one would verify a token signed with a public key as its secret.
    Keys are fetched and cached by PyJWT's ``PyJWKClient``; a token with a key id not seen yet
    makes it fetch the set once more (key rotation). ``url`` may be a callable that finds the JWKS
    URL when the first token arrives (an authorization server's metadata). Each of
    ``required_claims`` must be present, and the token must be an access token
    (:func:`~.tokens.refuse_other_kinds`)."""

    reads = AUTHORIZATION
    verifies_jwts = True

    def __init__(self, url: str | Callable[[], str], realm: str, *, issuer: str | None,
                 audience: Iterable[str] | None, algorithms: Iterable[str], cooldown: float = 30.0,
                 required_claims: Iterable[str] = ()) -> None:
        super().__init__(realm)
        require_jwt()
        self._url = url
        self.required_claims = tuple(required_claims)
        self._cooldown = cooldown
        self._client: Any = None
        self._lock = threading.Lock()
        self.issuer = issuer
        self.audience = list(audience) if audience else None
        self.algorithms = list(algorithms)
        if others := [name for name in self.algorithms if name not in PUBLIC_KEY_ALGORITHMS]:
            raise ValueError(f"{', '.join(others)}: not a public-key algorithm, refused for keys of a JWKS")

    def _keys(self) -> Any:
        with self._lock:
            if self._client is None:
                import jwt

                url = self._url if isinstance(self._url, str) else self._url()
                self._client = jwt.PyJWKClient(url, cache_keys=True, lifespan=3600, cooldown_duration=self._cooldown)
            return self._client

    def verify(self, request: Request) -> Identity | None:
        token = bearer_token(request)
        if token is None:
            return None
        return identity_from_claims(self.decode(token, self.audience), "jwks")

    def decode(self, token: str, audience: list[str] | None) -> dict[str, Any]:
        """The verified claims of ``token``: ``aud`` one of ``audience``; none when ``None``."""
        jwt = require_jwt()
        with refusing():
            key = self._keys().get_signing_key_from_jwt(token).key
            complete = jwt.decode_complete(token, key, algorithms=self.algorithms, audience=audience,
                                           issuer=self.issuer, options={"require": required(self.required_claims,
                                                                                              "exp")})
            payload: dict[str, Any] = complete["payload"]
            refuse_other_kinds(complete["header"], payload)
        return payload

    def challenge(self, request: Request) -> str:
        value = super().challenge(request)
        return value + (', error="invalid_token"' if bearer_token(request) is not None else "")


def identity_from_claims(claims: Mapping[str, Any], method: str) -> Identity:
    """An :class:`Identity` from token claims: ``sub``, and ``scope`` (space-separated) or ``scp``."""
    scope = claims.get("scope", claims.get("scp"))
    scopes = tuple(scope.split()) if isinstance(scope, str) else tuple(scope) if isinstance(scope, list) else ()
    subject = claims.get("sub")
    return Identity(subject=str(subject) if subject is not None else None, scopes=scopes, claims=dict(claims),
                    method=method)


def metadata_urls(issuer: str) -> list[str]:
    """Where an authorization server's metadata is: RFC 8414's well-known URL (path inserted after
    the host), then OpenID discovery's two forms."""
    parts = urlsplit(issuer)
    base, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [f"{base}/.well-known/oauth-authorization-server{path}", f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration"]
    return list(dict.fromkeys(urls))


def discover_jwks_uri(issuer: str, timeout: float = 5.0) -> str:
    """The ``jwks_uri`` of the authorization server ``issuer`` (its metadata must name exactly that
    issuer, RFC 8414 section 3.3); ``ValueError`` (or ``OSError``) when it cannot be found."""
    problems = []
    for url in metadata_urls(issuer):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}),
                                        timeout=timeout) as response:
                document = json.loads(response.read(1 << 20))
        except urllib.error.HTTPError as exc:
            problems.append(f"{url}: HTTP {exc.code}")
            continue
        except (OSError, ValueError) as exc:
            problems.append(f"{url}: {type(exc).__name__}")
            continue
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            named = document.get("issuer") if isinstance(document, dict) else None
            raise ValueError(f"{url} names issuer {named!r}, not {issuer!r}")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri:
            raise ValueError(f"{url} names no jwks_uri")
        return jwks_uri
    raise ValueError(f"no metadata for authorization server {issuer} ({'; '.join(problems)})")


class JwksDiscovery:
    """``discover_jwks_uri(issuer)`` when first needed, for :class:`JwksVerifier`; after a failure
    it is not tried again for ``cooldown`` seconds (every token would otherwise fetch)."""

    def __init__(self, issuer: str, cooldown: float = 30.0) -> None:
        self.issuer = issuer
        self.cooldown = cooldown
        self._failed_at: float | None = None

    def __call__(self) -> str:
        now = time.monotonic()
        if self._failed_at is not None and now - self._failed_at < self.cooldown:
            raise AuthError(f"authorization server {self.issuer}: metadata unavailable (retried later)")
        try:
            return discover_jwks_uri(self.issuer)
        except (OSError, ValueError) as exc:
            self._failed_at = now
            raise AuthError(f"authorization server {self.issuer}: {exc}") from None


class OAuthResourceVerifier(Verifier):
    """An OAuth 2.1 resource server's bearer tokens (MCP authorization; RFC 9068 JWT access tokens):
    issued by one of ``issuers`` (``iss``, exactly), signed by a key of that issuer's JWKS
    (``jwks_url``, else the ``jwks_uri`` of its metadata, fetched on the first token), ``aud`` the
    resource ``resource(request)`` (RFC 8707), not expired, and carrying every scope of ``scopes``:
    a valid token without them raises :class:`ScopeError`. Its challenges name the protected
    resource metadata ``metadata_url(request)`` (RFC 9728), and take precedence."""

    challenge_priority = 1
    reads = AUTHORIZATION
    verifies_jwts = True

    def __init__(self, issuers: Iterable[str], realm: str, *, resource: Callable[[Request], str],
                 metadata_url: Callable[[Request], str], scopes: Iterable[str] = (), jwks_url: str | None = None,
                 algorithms: Iterable[str] = ("RS256", "ES256"), cooldown: float = 30.0,
                 required_claims: Iterable[str] = ()) -> None:
        super().__init__(realm)
        self.resource = resource
        self.metadata_url = metadata_url
        self.scopes = tuple(scopes)
        self._issuers = {issuer: JwksVerifier(jwks_url or JwksDiscovery(issuer, cooldown), realm, issuer=issuer,
                                              audience=None, algorithms=algorithms, cooldown=cooldown,
                                              required_claims=required_claims)
                         for issuer in issuers}

    def verify(self, request: Request) -> Identity | None:
        import jwt

        token = bearer_token(request)
        if token is None:
            return None
        with refusing():
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        keys = self._issuers.get(issuer) if isinstance(issuer, str) else None
        if keys is None:
            raise AuthError("token issuer not accepted")
        identity = identity_from_claims(keys.decode(token, [self.resource(request)]), "oauth")
        missing = [scope for scope in self.scopes if scope not in identity.scopes]
        if missing:
            raise ScopeError(f"token lacks scope(s) {' '.join(missing)}", scopes=self.scopes,
                             challenge=self._challenge(request, "insufficient_scope"))
        return identity

    def challenge(self, request: Request) -> str:
        return self._challenge(request, "invalid_token" if bearer_token(request) is not None else None)

    def scope_challenge(self, request: Request, scopes: Iterable[str]) -> str:
        """Names the metadata, and the scopes its tokens need beside ``scopes`` (a client steps up to all)."""
        return self._challenge(request, "insufficient_scope", scopes)

    def _challenge(self, request: Request, error: str | None, scopes: Iterable[str] = ()) -> str:
        parts = [f'error="{error}"'] if error else []
        parts.append(f'resource_metadata="{self.metadata_url(request)}"')
        if wanted := " ".join(dict.fromkeys((*self.scopes, *scopes))):
            parts.append(f'scope="{wanted}"')
        return "Bearer " + ", ".join(parts)


def require_jwt() -> ModuleType:
    """PyJWT; fails with the install line when it is missing."""
    try:
        import jwt
    except ImportError:
        raise RuntimeError(
            "JWT authentication needs PyJWT: pip install 'flask-tooldiscovery[jwt]'"
        ) from None
    return jwt


__all__ = ["ApiKeyVerifier", "BearerVerifier", "JwksDiscovery", "JwksVerifier", "JwtVerifier", "OAuthResourceVerifier",
           "bearer_token", "discover_jwks_uri", "identity_from_claims", "metadata_urls", "refusing", "require_jwt",
           "secrets_equal", "verify_jwt"]
