"""Who is calling: the identity layer every dialect's requests go through.

An :class:`Authenticator` holds a dialect's identity sources (:class:`Verifier`), any one of
which lets a request in: the built-in credential verifiers (:mod:`.verifiers`), the application's
identity hook (:class:`HookVerifier`) and the explorer's auth hook (:class:`AuthHookVerifier`,
F4), the one source asked *around* a call rather than when the request arrives. The pipeline asks
it; its refusal is the pipeline's ``401`` with the authenticator's challenge, whatever the source.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from flask import Request

from ..errors import AuthError as AuthError
from ..errors import CoreError, InsufficientScope
from ..errors import ScopeError as ScopeError
from ..runtime.async_bridge import await_sync, run_sync_serving_this_thread
from ..tools.model import Identity

T = TypeVar("T")


class Verifier:
    """One identity source. ``verify`` returns an :class:`Identity` when the request carries a
    valid credential of its kind, ``None`` when it carries none, and raises :class:`AuthError`
    when it carries a wrong one."""

    #: The ``WWW-Authenticate`` scheme and realm this verifier asks for.
    scheme = "Bearer"
    #: Whose challenge an :class:`Authenticator` sends: the highest, the last one of those.
    challenge_priority = 0
    #: The WSGI environ keys of what it reads when a request arrives (``()``: nothing), or ``None``
    #: when that cannot be told (an application's hook reads what it likes). The fast path answers
    #: a discovery request again only when it carries none of these.
    reads: tuple[str, ...] | None = None
    #: Asked around the call (:meth:`around`) rather than when the request arrives.
    around_call = False
    #: Verifies JWTs by the rules of :mod:`~flask_tooldiscovery.identity.tokens` (access tokens
    #: only, ``TOOLDISCOVERY_JWT_REQUIRED_CLAIMS``).
    verifies_jwts = False

    def __init__(self, realm: str) -> None:
        self.realm = realm

    def verify(self, request: Request) -> Identity | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def around(self, request: Request, call: Callable[[], T]) -> T:  # pragma: no cover - abstract
        """``call()`` inside this source's admission (sources with :attr:`around_call` only)."""
        raise NotImplementedError

    def challenge(self, request: Request) -> str:
        """The ``WWW-Authenticate`` value to answer with when the request is refused."""
        return f'{self.scheme} realm="{self.realm}"'

    def scope_challenge(self, request: Request, scopes: Iterable[str]) -> str:
        """The ``WWW-Authenticate`` value of a ``403`` for a caller who lacks ``scopes`` (RFC 6750
        section 3.1: a Bearer challenge, whatever this source's own scheme)."""
        parts = [f'realm="{self.realm}"', 'error="insufficient_scope"']
        if wanted := " ".join(scopes):
            parts.append(f'scope="{wanted}"')
        return "Bearer " + ", ".join(parts)


IdentityHook = Callable[[Request], Any]


def refusal(exc: Exception, source: str, verb: str = "refused") -> AuthError:
    """What an application's hook (``source``) raising ``exc`` means: a known caller who lacks a
    scope (:class:`ScopeError`, a ``403``) for :class:`~flask_tooldiscovery.errors.InsufficientScope`
    or an OAuth library's RFC 6750 ``insufficient_scope`` error (Authlib's, naming no scope), else a
    refusal (``401``) whose reason names the exception's type, never its text."""
    if isinstance(exc, InsufficientScope):
        return ScopeError(exc.reason or f"{source}: the caller lacks scope(s) {' '.join(exc.scopes)}",
                          challenge=exc.challenge, scopes=exc.scopes)
    if getattr(exc, "error", None) == "insufficient_scope":
        return ScopeError(f"{source}: {type(exc).__name__} (insufficient_scope)", scopes=())
    return AuthError(f"{source} {verb} the request ({type(exc).__name__})")


class HookVerifier(Verifier):
    """The application's identity hook: ``hook(request)`` returns an :class:`Identity` (or a subject
    string), sync or async; ``None`` or an exception refuses the request (``401``), and
    :class:`~flask_tooldiscovery.errors.InsufficientScope` refuses a known caller with ``403``, as
    does an OAuth library's RFC 6750 error whose ``error`` is ``insufficient_scope`` (Authlib's
    ``InsufficientScopeError``), which names no scope."""

    def __init__(self, hook: IdentityHook, realm: str) -> None:
        super().__init__(realm)
        self.hook = hook

    def verify(self, request: Request) -> Identity | None:
        try:
            result = self.hook(request)
            if inspect.isawaitable(result):
                result = await_sync(result)
        except Exception as exc:
            raise refusal(exc, "identity hook") from None
        if result is None or isinstance(result, Identity):
            return result
        if isinstance(result, str):
            return Identity(subject=result, method="hook")
        raise AuthError(f"identity hook returned {type(result).__name__}, not an Identity")


AuthHook = Callable[[Request], Any]


class _Raised:
    """A core error raised inside an auth hook's manager, carried out of it as a value."""

    __slots__ = ("error",)

    def __init__(self, error: CoreError) -> None:
        self.error = error


class AuthHookVerifier(Verifier):
    """The explorer's auth hook (F4): ``hook(request)`` returns a context manager (sync or async, or
    an awaitable of one) that the call runs inside; raising, in the hook or on entering, refuses
    the request (``401``; :class:`~flask_tooldiscovery.errors.InsufficientScope`: ``403``, as for the
    identity hook). It is asked around the call (after the dialect found the tool, before the body is
    read), so it reads nothing when a request arrives, and it says nothing about who calls."""

    around_call = True
    reads = ()
    challenge_priority = -1  # a credential verifier beside it says better what to send

    def __init__(self, hook: AuthHook, realm: str) -> None:
        super().__init__(realm)
        self.hook = hook

    def verify(self, request: Request) -> Identity | None:
        return None  # asked around the call only

    def around(self, request: Request, call: Callable[[], T]) -> T:
        """``call()`` inside the hook's manager; :class:`AuthError` when the hook refuses. A core
        error raised by ``call`` (the body's 400, a busy worker's 503) leaves the manager as a
        normal exit, as a failed tool does, and is raised after it."""

        def inside() -> T | _Raised:
            try:
                return call()
            except CoreError as exc:
                return _Raised(exc)

        result: T | _Raised = self._run(request, inside)
        if isinstance(result, _Raised):
            raise result.error
        return result

    def _run(self, request: Request, call: Callable[[], Any]) -> Any:
        try:
            manager = self.hook(request)
            if inspect.isawaitable(manager):
                manager = await_sync(manager)
        except Exception as exc:
            raise refusal(exc, "auth hook", "rejected") from None
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
                    raise refusal(exc, "auth hook", "rejected") from None
                raise
        if isinstance(manager, AbstractContextManager) or hasattr(manager, "__enter__"):
            try:
                manager.__enter__()
            except Exception as exc:
                raise refusal(exc, "auth hook", "rejected") from None
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


@dataclass(frozen=True)
class Authenticator:
    """A dialect's identity sources: any one of ``verifiers`` lets the request in.

    ``protect_discovery``: discovery routes need credentials too (OXP's list does).
    """

    verifiers: tuple[Verifier, ...]
    protect_discovery: bool = False

    def authenticate(self, request: Request) -> Identity:
        """The caller's :class:`Identity` from the credentials the request carries (the sources
        asked around the call are not asked here); :class:`AuthError` with every reason otherwise,
        or :class:`~.errors.InsufficientScope` when a valid token lacked a scope and nothing else
        let the request in."""
        reasons = []
        short: ScopeError | None = None
        for verifier in self.verifiers:
            if verifier.around_call:
                continue
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
            raise InsufficientScope(challenge=short.challenge or self.scope_challenge(request, short.scopes),
                                    scopes=short.scopes, reason="; ".join(reasons))
        raise AuthError("; ".join(reasons) or "no credentials")

    @property
    def asks_around_call(self) -> bool:
        """True when a source is asked around the call: a call refused by the others may still be let in."""
        return any(verifier.around_call for verifier in self.verifiers)

    def around(self, request: Request, call: Callable[[], T]) -> T:
        """``call()`` inside the first source asked around the call that admits it;
        :class:`AuthError` with every reason when none does (:class:`ScopeError` when one refused
        a known caller for a scope)."""
        reasons = []
        short: ScopeError | None = None
        for verifier in self.verifiers:
            if verifier.around_call:
                try:
                    return verifier.around(request, call)
                except AuthError as exc:
                    reasons.append(exc.reason)
                    short = short or (exc if isinstance(exc, ScopeError) else None)
        if short is not None:
            raise ScopeError("; ".join(reasons), challenge=short.challenge, scopes=short.scopes)
        raise AuthError("; ".join(reasons) or "no credentials")

    @property
    def reads(self) -> tuple[str, ...] | None:
        """The WSGI environ keys every source reads when a request arrives (``None``: cannot be told)."""
        keys: set[str] = set()
        for verifier in self.verifiers:
            if verifier.reads is None:
                return None
            keys.update(verifier.reads)
        return tuple(sorted(keys))

    def including(self, verifiers: Iterable[Verifier], *, protect_discovery: bool = False) -> Authenticator:
        """This authenticator with more ways in (the identity layer's, shared by every dialect)."""
        return Authenticator((*self.verifiers, *verifiers), self.protect_discovery or protect_discovery)

    def challenge(self, request: Request) -> str:
        """What to put in ``WWW-Authenticate``: the last verifier's (JWT before API key), unless one
        has a higher ``challenge_priority`` (the OAuth resource server's names its metadata)."""
        return self._challenger.challenge(request)

    def scope_challenge(self, request: Request, scopes: Iterable[str]) -> str:
        """What to put in ``WWW-Authenticate`` when a known caller lacks ``scopes`` (``403``): the
        same verifier's as :meth:`challenge` (the OAuth resource server's names its metadata)."""
        return self._challenger.scope_challenge(request, scopes)

    @property
    def _challenger(self) -> Verifier:
        return max(reversed(self.verifiers), key=lambda verifier: verifier.challenge_priority)


__all__ = ["AuthError", "AuthHook", "AuthHookVerifier", "Authenticator", "HookVerifier", "Identity", "IdentityHook",
           "ScopeError", "Verifier"]
