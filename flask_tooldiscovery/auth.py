"""Who is calling: :class:`Identity`, the built-in verifiers (bearer token, API key, HS256 JWT)
combined per dialect by an :class:`Authenticator`, and the explorer's auth hook.

Comparisons of secrets are constant-time; no secret is ever logged."""

from __future__ import annotations

import hmac
import inspect
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from flask import Request

from .async_bridge import await_sync, run_sync


class AuthError(Exception):
    """Credentials are missing or wrong. ``reason`` is for the log, never for the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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


def require_bearer(request: Request, expected: str) -> None:
    """Raise :class:`AuthError` unless the request carries ``Bearer <expected>``."""
    token = bearer_token(request)
    if token is None:
        raise AuthError("missing bearer token")
    if not secrets_equal(token, expected):
        raise AuthError("wrong bearer token")


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
    seen yet makes it fetch the set once more (key rotation)."""

    def __init__(self, url: str, realm: str, *, issuer: str | None, audience: Iterable[str] | None,
                 algorithms: Iterable[str], cooldown: float = 30.0) -> None:
        super().__init__(realm)
        require_jwt()
        import jwt

        self._client = jwt.PyJWKClient(url, cache_keys=True, lifespan=3600, cooldown_duration=cooldown)
        self.issuer = issuer
        self.audience = list(audience) if audience else None
        self.algorithms = list(algorithms)

    def verify(self, request: Request) -> Identity | None:
        import jwt

        token = bearer_token(request)
        if token is None:
            return None
        try:
            key = self._client.get_signing_key_from_jwt(token).key
            payload = jwt.decode(token, key, algorithms=self.algorithms, audience=self.audience, issuer=self.issuer,
                                 options={"require": ["exp"], "verify_aud": self.audience is not None})
        except jwt.PyJWKClientConnectionError:
            raise AuthError("the JWKS could not be fetched") from None
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid token: {type(exc).__name__}") from None
        return identity_from_claims(payload, "jwks")

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
        """The caller's :class:`Identity`; :class:`AuthError` with every reason otherwise."""
        reasons = []
        for verifier in self.verifiers:
            try:
                identity = verifier.verify(request)
            except AuthError as exc:
                reasons.append(exc.reason)
                continue
            if identity is not None:
                return identity
            reasons.append(f"no {verifier.scheme} credential")
        raise AuthError("; ".join(reasons) or "no credentials")

    def including(self, verifiers: Iterable[Verifier], *, protect_discovery: bool = False) -> Authenticator:
        """This authenticator with more ways in (the identity layer's, shared by every dialect)."""
        return Authenticator((*self.verifiers, *verifiers), self.protect_discovery or protect_discovery)

    def challenge(self, request: Request) -> str:
        """What to put in ``WWW-Authenticate``: the last verifier's (JWT before API key)."""
        return self.verifiers[-1].challenge(request)


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
                return run_sync(guarded)
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
