"""What the serving layer learns about one request while it answers it, kept in one place.

Every value the guard, the identity check, the body reader and the views share for a request is
a field of :class:`RequestState`, held in ``flask.g`` under one name: the trace id, the caller's
identity, the body (raw and parsed), the headers to add to the response, and the discovery
document the fast path may learn. While a guarded view runs (:func:`begin` to :func:`end`), the
state is also the value of a context variable, :data:`ACTIVE`, which the call path reads directly
instead of resolving ``flask.g`` each time; outside it (a streamed answer's generator, an error
handler, the CLI) :func:`current` finds it in ``flask.g``.

The call path learns what it knows of its caller here, never from ``flask.request``: the identity,
and the request the call came on (:attr:`RequestState.request`: its address keys a rate limit, its
``X-Tool-Approval`` carries an approval, its ``traceparent`` parents a span, and the tool sees it
as ``ctx.request``). A call made outside a request (:mod:`.outside`: a task, ``flask tools call``)
runs with a state of its own made :data:`ACTIVE` (never kept in ``flask.g``), whose request is a
detached one rebuilt from what the call carried, or ``None``.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from flask import g, has_app_context

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request

    from ..tools.model import Identity
    from ..tools.registry import ToolSet
    from .cache import Document

#: The ``flask.g`` attribute that holds a request's :class:`RequestState`.
G_KEY = "_tooldiscovery"
#: A body not read yet (``None`` is an empty body).
UNREAD: Any = object()


class RequestState:
    """One request's state (see the module's text)."""

    __slots__ = ("body", "document", "headers", "identity", "listed", "raw", "request", "toolsets", "trace_id",
                 "unadmitted")

    def __init__(self, request: Request | None = None) -> None:
        #: The request the call came on: Flask's own while a view runs (read instead of its proxy);
        #: for a call made outside a request, a detached one (never pushed) rebuilt from what it
        #: carried (headers, address); ``None`` when there is none.
        self.request = request
        self.trace_id = ""
        self.identity: Identity | None = None
        #: Why the caller was not let in yet, while a source asked around the call decides.
        self.unadmitted: str | None = None
        #: The body parsed as JSON (``UNREAD`` until read, ``None`` when empty), and its bytes.
        self.body: Any = UNREAD
        self.raw: bytes | None = None
        #: Response headers a view asked for (``Retry-After``...), ``None`` while there are none.
        self.headers: dict[str, str] | None = None
        #: The discovery document this request was answered with, and the tool set it was built from.
        self.document: tuple[Document, ToolSet] | None = None
        #: Tool sets resolved for this request, by the core that resolved them.
        self.toolsets: dict[int, ToolSet] | None = None
        #: The tool set a dialect's lists show this request's caller: (the pipeline, the identity
        #: it was worked out for, the set), the last one asked.
        self.listed: tuple[object, Identity | None, ToolSet] | None = None


#: The state of the request whose guarded view runs now (``None`` outside one).
ACTIVE: ContextVar[RequestState | None] = ContextVar("tooldiscovery_request_state", default=None)


def begin(request: Request) -> tuple[RequestState, Token[RequestState | None]]:
    """A new state for the request whose guarded view starts now (``request``), kept in
    ``flask.g`` and made :data:`ACTIVE`; pass the token to :func:`end` when the view is done."""
    state = RequestState(request)
    setattr(g._get_current_object(), G_KEY, state)
    return state, ACTIVE.set(state)


def end(token: Token[RequestState | None]) -> None:
    """The guarded view is done: its state is found in ``flask.g`` from now on."""
    ACTIVE.reset(token)


def current() -> RequestState:
    """The current request's (or app context's) state, made on first use."""
    state = ACTIVE.get()
    if state is not None:
        return state
    store = g._get_current_object()
    kept: RequestState | None = getattr(store, G_KEY, None)
    if kept is None:
        kept = RequestState()
        setattr(store, G_KEY, kept)
    return kept


def peek() -> RequestState | None:
    """The current state when there is an app context and it was made, else ``None``."""
    state = ACTIVE.get()
    if state is not None:
        return state
    if not has_app_context():
        return None
    kept: RequestState | None = getattr(g._get_current_object(), G_KEY, None)
    return kept


__all__ = ["ACTIVE", "G_KEY", "UNREAD", "RequestState", "begin", "current", "end", "peek"]
