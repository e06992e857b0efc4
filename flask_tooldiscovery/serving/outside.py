"""Calls made from outside a request, through a dialect's pipeline all the same: ``flask tools
call`` (the operator as the caller) and tasks (the caller who asked for them, where the task runs),
and the rate limit a task's call is charged when it is accepted.

No request context is pushed for them: the call path reads what it knows of its caller (identity,
address, headers) from the request state (:mod:`.request_state`), never from ``flask.request``, so
inside the tool ``flask.has_request_context()`` is False, as it is for any code run outside a
request. An app context is needed, and enough: the tool, the call signals (sent by the app) and
the approvals (the app's ``SECRET_KEY``) read ``current_app``; the task runner pushes one for each
job, ``flask tools`` runs inside the one Flask's CLI pushes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import Request, current_app
from werkzeug.test import EnvironBuilder

from ..calls.approvals import Approval
from ..runtime.invoke import Outcome
from ..tools.model import Identity, Tool, ToolContext
from . import request_state
from .guard import new_trace_id
from .pipeline import Pipeline
from .request_state import ACTIVE, RequestState
from .root import configured_base


def detached_request(pipe: Pipeline, headers: Mapping[str, str], remote_addr: str | None) -> Request:
    """What a call made outside a request knows of the request it came from, as a ``Request`` that
    is never pushed (``flask.request`` stays unbound): ``headers`` and ``remote_addr`` (``None``
    when not known); its URL is the dialect's mount on the app's ``SERVER_NAME`` (else
    ``localhost``), with no body."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    builder = EnvironBuilder(pipe.prefix or "/", base_url=configured_base(), method="POST",
                             headers=list(headers.items()))
    try:
        environ = builder.get_environ()
    finally:
        builder.close()
    if remote_addr:
        environ["REMOTE_ADDR"] = remote_addr
    else:  # not the test client's 127.0.0.1: no address is known
        environ.pop("REMOTE_ADDR", None)
    made: Request = app.request_class(environ)
    return made


def call_as(pipe: Pipeline, identity: Identity | None, tool: Tool, arguments: Any, *,
            approval: Approval | None = None, coerce: bool | None = None, charged: bool = False,
            headers: Mapping[str, str] | None = None, remote_addr: str | None = None,
            context_hook: Callable[[ToolContext], None] | None = None, **fields: Any) -> Outcome:
    """Run ``tool`` for ``identity`` through ``pipe.invoke`` with a request state of its own (no
    request context: see the module's text), so rate limits (unless ``charged`` already, keyed by
    ``identity``, else ``remote_addr``), call slots, approvals (``approval``: none is read from
    anywhere else), signals, tracing and metrics apply as to a call over HTTP, and refusals raise
    as there. ``fields`` are the context's (``call_id``, ``trace_id``, ``extra``...);
    ``context_hook`` sees the context before the call. The tool's ``ctx.request`` is
    :func:`detached_request` with ``headers`` (a task's: those it arrived with, credentials
    aside), or ``None`` without them."""
    origin = None if headers is None and not remote_addr else detached_request(pipe, headers or {}, remote_addr)
    state = RequestState(origin)  # its own state, even when called during a request; never in flask.g
    state.identity, state.trace_id = identity, fields.pop("trace_id", None) or new_trace_id()
    token = ACTIVE.set(state)
    try:
        context = pipe.context(**fields)
        if headers is None:
            context.request = None
        if context_hook is not None:
            context_hook(context)
        return pipe.invoke(tool, arguments, context, approval=approval, coerce=coerce, charged=charged)
    finally:
        ACTIVE.reset(token)


def charge(pipe: Pipeline, tool: Tool) -> None:
    """Count a call of ``tool`` against the current request's caller's rate limit now (a task's,
    before it is accepted): :class:`~flask_tooldiscovery.errors.RateLimited` when over it. The
    task's run then passes ``charged``."""
    limits = pipe.core.operations.limits
    if found := limits.limits_for(tool, pipe.name):
        state = request_state.peek()
        origin = state.request if state is not None else None
        limits.check(tool, found, limits.caller(pipe.identity, origin.remote_addr if origin is not None else None))


__all__ = ["call_as", "charge", "detached_request"]
