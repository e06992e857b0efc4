"""Calls made from outside a request, through a dialect's pipeline all the same: ``flask tools
call`` (the operator as the caller) and tasks (the caller who asked for them, where the task runs),
and the rate limit a task's call is charged when it is accepted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import current_app, request

from ..calls.approvals import Approval
from ..runtime.invoke import Outcome
from ..tools.model import Identity, Tool, ToolContext
from . import request_state
from .guard import new_trace_id
from .pipeline import Pipeline


def call_as(pipe: Pipeline, identity: Identity | None, tool: Tool, arguments: Any, *,
            approval: Approval | None = None, coerce: bool | None = None, charged: bool = False,
            headers: Mapping[str, str] | None = None, remote_addr: str | None = None,
            context_hook: Callable[[ToolContext], None] | None = None, **fields: Any) -> Outcome:
    """Run ``tool`` for ``identity`` through ``pipe.invoke`` in a request context of its own, so
    rate limits (unless ``charged`` already), call slots, approvals, signals, tracing and metrics
    apply as to a call over HTTP, and refusals raise as there. ``fields`` are the context's
    (``call_id``, ``trace_id``, ``extra``...); ``context_hook`` sees the context before the call.
    The tool's ``ctx.request`` is a request with ``headers`` (a task's: those it arrived with,
    credentials aside), or ``None`` without them."""
    environ = {"REMOTE_ADDR": remote_addr} if remote_addr else None
    with current_app.test_request_context(pipe.prefix or "/", method="POST", headers=dict(headers or {}),
                                          environ_base=environ):
        state, token = request_state.begin()  # its own state, even when called during a request
        try:
            state.identity, state.trace_id = identity, fields.pop("trace_id", None) or new_trace_id()
            context = pipe.context(**fields)
            if headers is None:
                context.request = None
            if context_hook is not None:
                context_hook(context)
            return pipe.invoke(tool, arguments, context, approval=approval, coerce=coerce, charged=charged)
        finally:
            request_state.end(token)


def charge(pipe: Pipeline, tool: Tool) -> None:
    """Count a call of ``tool`` against the current request's caller's rate limit now (a task's,
    before it is accepted): :class:`~flask_tooldiscovery.errors.RateLimited` when over it. The
    task's run then passes ``charged``."""
    limits = pipe.core.operations.limits
    if found := limits.limits_for(tool, pipe.name):
        limits.check(tool, found, limits.caller(pipe.identity, request.remote_addr))


__all__ = ["call_as", "charge"]
