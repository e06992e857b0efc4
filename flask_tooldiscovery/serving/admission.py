"""Who may come in: a request to one dialect's routes guarded and identified.

Every request to a call route passes the guard's call checks (origin, content type); then the
dialect's :class:`~flask_tooldiscovery.identity.sources.Authenticator` says who the caller is, or refuses with
:class:`~flask_tooldiscovery.errors.Unauthorized` and its challenge. Discovery asks for
credentials only when the dialect protects it (an anonymous caller of open discovery who says
who it is sees its own tools). A source asked *around* the call (the explorer's auth hook, whose
manager wraps reading the body and the call) decides in :meth:`Admission.admitted`, so that its
refusal is still a 401 of the same shape.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

from flask import Request, request

from ..errors import InsufficientScope, Unauthorized
from ..identity.sources import Authenticator, AuthError, ScopeError
from ..tools.model import Identity
from . import request_state
from .guard import Guard, RouteKind
from .request_state import RequestState

T = TypeVar("T")


class Admission:
    """One dialect's admission: the app's ``guard`` and the dialect's ``authenticator`` (``None``: open)."""

    def __init__(self, guard: Guard, authenticator: Authenticator | None) -> None:
        self.guard = guard
        self.authenticator = authenticator
        #: The authenticator when one of its sources is asked around the call.
        self.around_call = authenticator if authenticator is not None and authenticator.asks_around_call else None

    @property
    def open_discovery(self) -> bool:
        """True when discovery lets in a caller without credentials (it sees what no identity may see)."""
        return self.authenticator is None or not self.authenticator.protect_discovery

    def admit(self, kind: RouteKind, req: Request | None = None, state: RequestState | None = None) -> Identity | None:
        """Guard and identify a request (``req``, else the current one; ``state``: its state) to a
        route of ``kind``; the identity (or ``None``)."""
        if req is None:
            req = request._get_current_object()  # type: ignore[attr-defined]
        if kind == "call":
            self.guard.check_call(req)
        identity = None
        auth = self.authenticator
        if state is None:
            state = request_state.current()
        if auth is not None and (kind == "call" or (kind == "discovery" and not self.open_discovery)):
            try:
                identity = auth.authenticate(req)
            except AuthError as exc:
                if kind != "call" or self.around_call is None:
                    raise Unauthorized(challenge=auth.challenge(req), reason=exc.reason) from None
                state.unadmitted = exc.reason or "no credential"  # the source asked around the call decides
        elif auth is not None and kind == "discovery":  # open discovery: a caller who says who it is sees its tools
            with contextlib.suppress(AuthError):
                identity = auth.authenticate(req)
        state.identity = identity
        return identity

    def admitted(self, run: Callable[[], T]) -> T:
        """``run()`` (which reads the body and runs the call) for an admitted caller: at once when
        :meth:`admit` let the request in, else inside the source asked around the call, whose
        refusal is :class:`~flask_tooldiscovery.errors.Unauthorized` as any other source's."""
        state = request_state.ACTIVE.get() or request_state.current()
        reason = state.unadmitted
        if reason is None or self.authenticator is None:
            return run()
        req = request._get_current_object()  # type: ignore[attr-defined]

        def inside() -> T:
            state.unadmitted = None
            return run()

        try:
            return self.authenticator.around(req, inside)
        except ScopeError as exc:
            raise InsufficientScope(challenge=exc.challenge or self.authenticator.scope_challenge(req, exc.scopes),
                                    scopes=exc.scopes, reason="; ".join(r for r in (reason, exc.reason) if r)) from None
        except AuthError as exc:
            raise Unauthorized(challenge=self.authenticator.challenge(req),
                               reason="; ".join(r for r in (reason, exc.reason) if r)) from None

    @staticmethod
    def awaits() -> bool:
        """True while this request's caller waits for the source asked around the call."""
        state = request_state.peek()
        return state is not None and state.unadmitted is not None

    def refuse_unadmitted(self) -> None:
        """Refuse a call about to run without the source asked around it (a dialect's view that
        did not run it through :meth:`admitted`)."""
        if self.around_call is not None and self.awaits():
            raise Unauthorized(challenge=self.around_call.challenge(request),
                               reason="the call was not run through the identity source asked around it")


__all__ = ["Admission"]
