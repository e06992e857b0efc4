"""What the serving layer learns about one request while it answers it, kept in one place.

Every value the guard, the identity check, the body reader and the views share for a request is
a field of :class:`RequestState`, held in ``flask.g`` under one name: the trace id, the caller's
identity, the body (raw and parsed), the headers to add to the response, and the discovery
document the fast path may learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flask import g, has_app_context

if TYPE_CHECKING:  # pragma: no cover
    from ..tools.model import Identity
    from ..tools.registry import ToolSet
    from .cache import Document

#: The ``flask.g`` attribute that holds a request's :class:`RequestState`.
G_KEY = "_tooldiscovery"
#: A body not read yet (``None`` is an empty body).
UNREAD: Any = object()


class RequestState:
    """One request's state (see the module's text)."""

    __slots__ = ("body", "document", "headers", "identity", "listed", "raw", "toolsets", "trace_id", "unadmitted")

    def __init__(self) -> None:
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


def current() -> RequestState:
    """The current request's (or app context's) state, made on first use."""
    store = g._get_current_object()
    state: RequestState | None = getattr(store, G_KEY, None)
    if state is None:
        state = RequestState()
        setattr(store, G_KEY, state)
    return state


def peek() -> RequestState | None:
    """The current state when there is an app context and it was made, else ``None``."""
    if not has_app_context():
        return None
    state: RequestState | None = getattr(g._get_current_object(), G_KEY, None)
    return state


__all__ = ["G_KEY", "UNREAD", "RequestState", "current", "peek"]
