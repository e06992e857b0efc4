"""Who is calling: :class:`Identity`, the built-in verifiers (bearer token, API key, HS256 JWT,
JWKS-verified JWT, OAuth 2.1 resource server) combined per dialect by an :class:`Authenticator`,
and the explorer's auth hook.

Comparisons of secrets are constant-time; no secret is ever logged."""

from __future__ import annotations

import hmac
import inspect
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from flask import Request

from ..errors import InsufficientScope, ToolDiscoveryError
from ..tools.async_bridge import await_sync, run_sync_serving_this_thread


class AuthError(ToolDiscoveryError):
    """Credentials are missing or wrong. ``reason`` is for the log, never for the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ScopeError(AuthError):
    """A valid token that lacks a required scope: refused with 403, not 401. ``challenge`` is the
    ``WWW-Authenticate`` value (``error="insufficient_scope"``), ``scopes`` the ones required."""

    def __init__(self, reason: str, *, challenge: str, scopes: Iterable[str]) -> None:
        super().__init__(reason)
        self.challenge = challenge
        self.scopes = tuple(scopes)


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
    require_exp: bool = True,
    claims: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Verify an HS256 JWT and return its claims; raise :class:`AuthError` otherwise.

    Only HS256 is accepted (``alg: none`` and every other algorithm are refused). ``exp`` is
    required unless ``require_exp`` is false; ``aud`` must match ``audience`` when given; each of
    ``claims`` must be present with exactly that value.
    """
    try:
        import jwt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "JWT authentication needs PyJWT: pip install 'flask-tooldiscovery[jwt]'"
        ) from exc
    options: Any = {"require": ["exp"] if require_exp else [], "verify_aud": audience is not None}
    aud: Any = audience
    if audience is not None and not isinstance(audience, str):
        aud = list(audience)
    try:
        payload = jwt.decode(token, secret, algorithms=["HS256"], audience=aud, options=options)
    except jwt.ExpiredSignatureError:
        raise AuthError("token expired") from None
    except jwt.MissingRequiredClaimError as exc:
        raise AuthError(f"token lacks claim {exc.claim}") from None
    except jwt.InvalidAudienceError:
        raise AuthError("token audience not accepted") from None
    except jwt.InvalidAlgorithmError:
        raise AuthError("token algorithm not accepted") from None
    except jwt.PyJWTError as exc:
        raise AuthError(f"invalid token: {type(exc).__name__}") from None
    for name, value in (claims or {}).items():
        if payload.get(name) != value:
            raise AuthError(f"claim {name} missing or not accepted")
    return payload


@dataclass(frozen=True)
class Identity:
    """Who is calling, as a verifier established it."""

    subject: str | None = None
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)
    #: How: "bearer", "api_key", "jwt", "hook"...
    method: str = ""


class Verifier:
    """Checks one kind of credential. ``verify`` returns an :class:`Identity` when the request
    carries a valid credential of its kind, ``None`` when it carries none, and raises
    :class:`AuthError` when it carries a wrong one."""

    #: The ``WWW-Authenticate`` scheme and realm this verifier asks for.
    scheme = "Bearer"
    #: Whose challenge an :class:`Authenticator` sends: the highest, the last one of those.
    challenge_priority = 0

    def __init__(self, realm: str) -> None:
        self.realm = realm

    def verify(self, request: Request) -> Identity | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def challenge(self, request: Request) -> str:
        """The ``WWW-Authenticate`` value to answer with when the request is refused."""
        return f'{self.scheme} realm="{self.realm}"'


class BearerVerifier(Verifier):
    """A static bearer token (constant-time comparison)."""

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

    def verify(self, request: Request) -> Identity | None:
        presented = request.headers.get(self.header)
        if presented is None:
            return None
        if not secrets_equal(presented, self._key):
            raise AuthError("API key wrong")
        return Identity(method="api_key")


class JwtVerifier(Verifier):
    """An HS256 JWT as a bearer token (see :func:`verify_jwt`)."""

    def __init__(self, secret: str, realm: str, *, audience: str | Iterable[str] | None = None,
                 require_exp: bool = True, claims: Mapping[str, Any] | None = None) -> None:
        super().__init__(realm)
        require_jwt()
        self._secret = secret
        self.audience = audience
        self.require_exp = require_exp
        self.claims = dict(claims or {})

    def verify(self, request: Request) -> Identity | None:
        token = bearer_token(request)
        if token is None:
            return None
        payload = verify_jwt(token, self._secret, audience=self.audience, require_exp=self.require_exp,
                             claims=self.claims or None)
        return identity_from_claims(payload, "jwt")

    def challenge(self, request: Request) -> str:
        value = super().challenge(request)
        return value + (', error="invalid_token"' if bearer_token(request) is not None else "")


class JwksVerifier(Verifier):
    """A bearer JWT signed by a key of a JWKS (RS256/ES256...): ``iss``, ``aud`` and ``exp``
    checked. Keys are fetched and cached by PyJWT's ``PyJWKClient``; a token with a key id not
    seen yet makes it fetch the set once more (key rotation). ``url`` may be a callable that
    finds the JWKS URL when the first token arrives (an authorization server's metadata)."""

    def __init__(self, url: str | Callable[[], str], realm: str, *, issuer: str | None,
                 audience: Iterable[str] | None, algorithms: Iterable[str], cooldown: float = 30.0) -> None:
        super().__init__(realm)
        require_jwt()
        self._url = url
        self._cooldown = cooldown
        self._client: Any = None
        self._lock = threading.Lock()
        self.issuer = issuer
        self.audience = list(audience) if audience else None
        self.algorithms = list(algorithms)

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
        """The verified claims of ``token`` (``aud`` checked against ``audience`` unless ``None``)."""
        import jwt

        try:
            key = self._keys().get_signing_key_from_jwt(token).key
            payload: dict[str, Any] = jwt.decode(
                token, key, algorithms=self.algorithms, audience=audience, issuer=self.issuer,
                options={"require": ["exp"], "verify_aud": audience is not None})
        except jwt.PyJWKClientConnectionError:
            raise AuthError("the JWKS could not be fetched") from None
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid token: {type(exc).__name__}") from None
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

    def __init__(self, issuers: Iterable[str], realm: str, *, resource: Callable[[Request], str],
                 metadata_url: Callable[[Request], str], scopes: Iterable[str] = (), jwks_url: str | None = None,
                 algorithms: Iterable[str] = ("RS256", "ES256"), cooldown: float = 30.0) -> None:
        super().__init__(realm)
        self.resource = resource
        self.metadata_url = metadata_url
        self.scopes = tuple(scopes)
        self._issuers = {issuer: JwksVerifier(jwks_url or JwksDiscovery(issuer, cooldown), realm, issuer=issuer,
                                              audience=None, algorithms=algorithms, cooldown=cooldown)
                         for issuer in issuers}

    def verify(self, request: Request) -> Identity | None:
        import jwt

        token = bearer_token(request)
        if token is None:
            return None
        try:
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid token: {type(exc).__name__}") from None
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

    def _challenge(self, request: Request, error: str | None) -> str:
        parts = [f'error="{error}"'] if error else []
        parts.append(f'resource_metadata="{self.metadata_url(request)}"')
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        return "Bearer " + ", ".join(parts)


IdentityHook = Callable[[Request], Any]


class HookVerifier(Verifier):
    """The application's identity hook: ``hook(request)`` returns an :class:`Identity` (or a subject
    string), sync or async; ``None`` or an exception refuses the request."""

    def __init__(self, hook: IdentityHook, realm: str) -> None:
        super().__init__(realm)
        self.hook = hook

    def verify(self, request: Request) -> Identity | None:
        try:
            result = self.hook(request)
            if inspect.isawaitable(result):
                result = await_sync(result)
        except Exception as exc:
            raise AuthError(f"identity hook refused the request ({type(exc).__name__})") from None
        if result is None or isinstance(result, Identity):
            return result
        if isinstance(result, str):
            return Identity(subject=result, method="hook")
        raise AuthError(f"identity hook returned {type(result).__name__}, not an Identity")


@dataclass(frozen=True)
class Authenticator:
    """A dialect's credentials: any one of ``verifiers`` lets the request in.

    ``protect_discovery``: discovery routes need credentials too (OXP's list does).
    """

    verifiers: tuple[Verifier, ...]
    protect_discovery: bool = False

    def authenticate(self, request: Request) -> Identity:
        """The caller's :class:`Identity`; :class:`AuthError` with every reason otherwise, or
        :class:`~.errors.InsufficientScope` when a valid token lacked a scope and nothing else let
        the request in."""
        reasons = []
        short: ScopeError | None = None
        for verifier in self.verifiers:
            try:
                identity = verifier.verify(request)
            except AuthError as exc:
                reasons.append(exc.reason)
                short = short or (exc if isinstance(exc, ScopeError) else None)
                continue
            if identity is not None:
                return identity
            reasons.append(f"no {verifier.scheme} credential")
        if short is not None:
            raise InsufficientScope(challenge=short.challenge, scopes=short.scopes, reason="; ".join(reasons))
        raise AuthError("; ".join(reasons) or "no credentials")

    def including(self, verifiers: Iterable[Verifier], *, protect_discovery: bool = False) -> Authenticator:
        """This authenticator with more ways in (the identity layer's, shared by every dialect)."""
        return Authenticator((*self.verifiers, *verifiers), self.protect_discovery or protect_discovery)

    def challenge(self, request: Request) -> str:
        """What to put in ``WWW-Authenticate``: the last verifier's (JWT before API key), unless one
        has a higher ``challenge_priority`` (the OAuth resource server's names its metadata)."""
        return max(reversed(self.verifiers), key=lambda verifier: verifier.challenge_priority).challenge(request)


def require_jwt() -> None:
    """Fail now, with the install line, when PyJWT is missing."""
    try:
        import jwt  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "JWT authentication needs PyJWT: pip install 'flask-tooldiscovery[jwt]'"
        ) from None


AuthHook = Callable[[Request], Any]


class HookCall:
    """Runs a call inside an auth hook's context manager (sync or async), as F4 specifies.

    The hook is given the request and returns a context manager (or an async one, or an
    awaitable of one); raising, on entry or in the hook itself, rejects the request.
    """

    def __init__(self, hook: AuthHook, request: Request) -> None:
        self.hook = hook
        self.request = request

    def run(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` inside the hook's context manager; raise :class:`AuthError` if the hook refuses."""
        try:
            manager = self.hook(self.request)
            if inspect.isawaitable(manager):
                manager = await_sync(manager)
        except Exception as exc:
            raise AuthError(f"auth hook rejected the request ({type(exc).__name__})") from None
        if isinstance(manager, AbstractAsyncContextManager) or hasattr(manager, "__aenter__"):
            # One event loop for enter, call and exit; the call itself runs back in this thread
            # (asgiref's thread-sensitive sync_to_async), so Flask's request context holds.
            entered = False

            async def guarded() -> Any:
                nonlocal entered
                async with manager:
                    entered = True
                    return await sync_to_async(call, thread_sensitive=True)()

            try:
                return run_sync_serving_this_thread(guarded)
            except Exception as exc:
                if not entered:
                    raise AuthError(f"auth hook rejected the request ({type(exc).__name__})") from None
                raise
        if isinstance(manager, AbstractContextManager) or hasattr(manager, "__enter__"):
            try:
                manager.__enter__()
            except Exception as exc:
                raise AuthError(f"auth hook rejected the request ({type(exc).__name__})") from None
            try:
                result = call()
            except BaseException as exc:
                if not manager.__exit__(type(exc), exc, exc.__traceback__):
                    raise
                return None
            manager.__exit__(None, None, None)
            return result
        # A hook that returned nothing and did not raise accepts the request.
        return call()
