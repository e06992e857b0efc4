"""Prometheus metrics of tool calls (the ``metrics`` extra: ``prometheus_client``).

``TOOLDISCOVERY_METRICS`` turns them on; ``TOOLDISCOVERY_METRICS_PATH`` also serves them (e.g.
at ``/metrics``). The metrics are made once per process, in prometheus_client's default registry:

- ``tooldiscovery_tool_calls_total{tool, dialect, outcome}``: every call, by outcome
  (``success``, ``invalid``, ``failure``, ``refused``, ``error``);
- ``tooldiscovery_tool_failures_total{tool, dialect}``: calls whose tool ran and failed;
- ``tooldiscovery_tool_call_duration_seconds{tool, dialect}``: how long calls that ran took;
- ``tooldiscovery_tool_calls_in_flight{tool, dialect}``: calls running now.

Under gunicorn, set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the server starts
and every worker's values are added up on ``/metrics`` (in-flight calls too); put
``from flask_tooldiscovery.metrics import child_exit`` in the gunicorn config file so that a dead
worker's in-flight calls stop counting.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from flask import Blueprint, Response, current_app, request
from werkzeug.sansio.utils import host_is_trusted

from ..settings import Settings, SettingsError, host_allow_list, key
from .logs import log

INSTALL = 'pip install "flask-tooldiscovery[metrics]"'
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, float("inf"))

_lock = threading.Lock()
_metrics: CallMetrics | None = None


def require() -> None:
    """:class:`~.settings.SettingsError` with the install line when prometheus_client is missing."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise SettingsError(f"{key('METRICS')} needs prometheus_client: {INSTALL}") from None


class CallMetrics:
    """The four metrics of tool calls (made once per process: see :func:`call_metrics`)."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        labels = ("tool", "dialect")
        self.calls = Counter("tooldiscovery_tool_calls", "Tool calls, by outcome.", (*labels, "outcome"))
        self.failures = Counter("tooldiscovery_tool_failures", "Tool calls whose tool ran and failed.", labels)
        self.duration = Histogram("tooldiscovery_tool_call_duration_seconds", "Duration of tool calls that ran.",
                                  labels, buckets=BUCKETS)
        self.in_flight = Gauge("tooldiscovery_tool_calls_in_flight", "Tool calls running now.", labels,
                               multiprocess_mode="livesum")

    def started(self, tool: str, dialect: str) -> None:
        self.in_flight.labels(tool, dialect).inc()

    def finished(self, tool: str, dialect: str, outcome: str, seconds: float | None) -> None:
        self.in_flight.labels(tool, dialect).dec()
        self.calls.labels(tool, dialect, outcome).inc()
        if outcome == "failure":
            self.failures.labels(tool, dialect).inc()
        if seconds is not None:
            self.duration.labels(tool, dialect).observe(seconds)


def call_metrics() -> CallMetrics:
    """This process's :class:`CallMetrics` (every app of the process shares them)."""
    global _metrics
    with _lock:
        if _metrics is None:
            _metrics = CallMetrics()
        return _metrics


def exposition() -> tuple[bytes, str]:
    """The text exposition format of the default registry, or of every worker's files when
    ``PROMETHEUS_MULTIPROC_DIR`` is set; and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

    registry: Any = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry), CONTENT_TYPE_LATEST


def blueprint(settings: Settings, trusted_hosts: Any = None) -> Blueprint:
    """``GET <METRICS_PATH>``: the metrics, for the same host names as the dialects (421 otherwise)."""
    bp = Blueprint("tooldiscovery_metrics", __name__)
    hosts = host_allow_list(settings, trusted_hosts)

    @bp.get(settings.metrics_path or "/metrics")
    def metrics() -> Response:
        if hosts is not None and not host_is_trusted(request.host, hosts):
            # The answer names the setting, never the host; the log names both (repr: one line).
            log.warning("metrics: host %r is not in TOOLDISCOVERY_ALLOWED_HOSTS; answered 421", request.host[:200])
            message = "Misdirected request: this host name is not in TOOLDISCOVERY_ALLOWED_HOSTS."
            answer = current_app.response_class(current_app.json.dumps({"error": {"code": 421, "message": message}}),
                                                421, mimetype="application/json")
            return answer
        body, content_type = exposition()
        return current_app.response_class(body, 200, content_type=content_type,
                                          headers={"Cache-Control": "no-store"})

    return bp


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn's ``child_exit`` hook: forget a dead worker's live gauges (multiprocess mode)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


__all__ = ["CallMetrics", "blueprint", "call_metrics", "child_exit", "exposition", "require"]
