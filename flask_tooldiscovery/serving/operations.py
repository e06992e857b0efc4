"""What happens around every tool call a dialect makes, once, in the core: the rate limit, the
signals, the OpenTelemetry span, the Prometheus metrics and the call log line of a refusal.

``init_app`` builds one :class:`Operations` per app from its settings (so a wrong limit, a storage
URI without its driver or a missing extra fails at start); the pipeline runs each call through
:func:`observe_call`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from flask import Flask, current_app

from .. import signals
from ..calls.limits import RateLimits
from ..errors import CoreError
from ..runtime.call_log import log_call
from ..runtime.invoke import Outcome
from ..settings import Settings, SettingsError, key
from ..tools.model import Tool, ToolContext

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request

    from ..observe.metrics import CallMetrics
    from ..observe.tracing import Tracer
    from ..tools.model import Identity

class Operations:
    """One app's rate limits, tracer and metrics (``None`` when their setting is off)."""

    def __init__(self, settings: Settings) -> None:
        self.limits = RateLimits(settings)
        #: False when no setting limits any call (a tool's own ``rate_limit_per_minute`` still does).
        self.any_limits = bool(self.limits.default or self.limits.dialects or self.limits.tools)
        self.tracer: Tracer | None = None
        self.metrics: CallMetrics | None = None
        if settings.metrics_path and not settings.metrics:
            raise SettingsError(f"{key('METRICS_PATH')} serves metrics only with {key('METRICS')} on")
        if settings.otel:
            from ..observe import tracing

            tracing.require()
            self.tracer = tracing.Tracer()
        if settings.metrics:
            from ..observe import metrics

            metrics.require()
            self.metrics = metrics.call_metrics()


def _error_type(outcome: Outcome) -> str:
    if outcome.status == "invalid":
        return "invalid_arguments"
    return "ToolError" if outcome.failure is not None and outcome.failure.expected else "_OTHER"


#: The signals of a call, each sent by :func:`observe_call` with the current app as sender.
_SIGNALS = (signals.tool_called, signals.tool_succeeded, signals.tool_failed, signals.tool_refused)


def unobserved(ops: Operations, tool: Tool, check_limits: bool = True) -> bool:
    """True when nothing observes a call of ``tool`` (no span, metric, limit, nor receiver of its
    signals from the current app): :func:`observe_call` then only runs it, and logs a refusal."""
    if ops.tracer is not None or ops.metrics is not None or (check_limits and (
            ops.any_limits or "rate_limit_per_minute" in tool.metadata)):
        return False
    if not (signals.tool_called.receivers or signals.tool_succeeded.receivers
            or signals.tool_failed.receivers or signals.tool_refused.receivers):
        return True
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    for signal in _SIGNALS:  # receivers of another app's signals only (several apps in one process)
        for _ in signal.receivers_for(app):
            return False
    return True


def observe_call(ops: Operations, dialect: str, identity: Identity | None, tool: Tool, context: ToolContext,
                 call: Callable[[], Outcome], *, check_limits: bool = True, origin: Request | None = None) -> Outcome:
    """``call()`` (which runs the tool in a call slot) made through ``dialect`` by ``identity``,
    within the caller's rate limit, between the signals, inside the call's span, counted in the
    metrics. ``origin`` is the request the call came on (``None``: none), as the caller's request
    state holds it (never ``flask.request``): its address keys the rate limit of a caller without
    an identity, its ``traceparent`` may parent the span. Core errors (refusals) are re-raised for
    the dialect's ``error_response``; the outcome is returned as it is. A call :func:`unobserved`
    does not come here: its caller (``Pipeline.invoke``) runs it and logs its refusal itself."""
    app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    fields: dict[str, Any] = {"tool": tool, "dialect": dialect, "call_id": context.call_id,
                              "trace_id": context.trace_id, "identity": identity}
    if signals.tool_called.receivers:  # sending to no one still costs; ask first
        signals.tool_called.send(app, duration_ms=0.0, **fields)
    started = time.perf_counter()
    metrics = ops.metrics
    if metrics is not None:
        metrics.started(tool.name, dialect)
    ran, label = False, "error"
    tracer = ops.tracer
    try:
        with tracer.span(tool, context, dialect, origin.headers if origin is not None else None) \
                if tracer is not None else nullcontext() as span:
            try:
                limits = (ops.limits.limits_for(tool, dialect) if check_limits and (
                    ops.any_limits or "rate_limit_per_minute" in tool.metadata) else None)
                if limits:  # whom to count only when something counts
                    ops.limits.check(tool, limits, RateLimits.caller(identity, origin.remote_addr if origin else None))
                ran = True
                outcome = call()
            except CoreError as exc:
                ran, label = False, "refused"
                duration_ms = (time.perf_counter() - started) * 1000.0
                if span is not None and tracer is not None:
                    tracer.failed(span, type(exc).__name__, exc.message)
                log_call(tool, context, "refused", duration_ms, status=exc.status)
                signals.tool_refused.send(app, duration_ms=duration_ms, error=exc, **fields)
                raise
            except Exception as exc:
                signals.tool_failed.send(app, duration_ms=(time.perf_counter() - started) * 1000.0,
                                         outcome=None, error=exc, **fields)
                raise
            label = outcome.status
            if span is not None and tracer is not None and label != "success":
                tracer.failed(span, _error_type(outcome), outcome.error_message)
    finally:
        if metrics is not None:
            metrics.finished(tool.name, dialect, label, time.perf_counter() - started if ran else None)
    sent = signals.tool_succeeded if label == "success" else signals.tool_failed
    if sent.receivers:
        sent.send(app, duration_ms=outcome.duration_ms, outcome=outcome, **fields)
    return outcome


__all__ = ["Operations", "observe_call", "unobserved"]
