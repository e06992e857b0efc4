"""The Celery broker's visibility timeout, checked against how long a task may run.

A Redis (or SQS) broker delivers a message again when its worker has not acknowledged it within
the transport's ``visibility_timeout`` (``broker_transport_options``; Celery's default for Redis is
an hour), whether that worker died or is still running the task (tasks are acknowledged late). A
run holds its task's lease (:mod:`.runner`), so such a delivery is dropped rather than run twice
or taken for a dead run; but each takes a worker for a moment, and the broker learns nothing from
it. ``init_app`` says so once (:func:`check`) when a task may run longer than the timeout.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..observe.logs import log
from ..settings import key
from ..tools.model import Tool

#: Brokers that deliver an unacknowledged message again after a visibility timeout, by URL scheme,
#: and kombu's default for it (seconds).
DEFAULTS = {"redis": 3600.0, "rediss": 3600.0, "redis+socket": 3600.0, "sentinel": 3600.0, "sqs": 1800.0}


def visibility_timeout(celery_app: Any) -> float | None:
    """The broker's visibility timeout (seconds), or ``None`` for a broker that has none."""
    conf = getattr(celery_app, "conf", None)
    url = str(getattr(conf, "broker_url", None) or "")
    default = DEFAULTS.get(url.partition("://")[0].lower()) if "://" in url else None
    if default is None:
        return None
    options = getattr(conf, "broker_transport_options", None) or {}
    try:
        return float(options.get("visibility_timeout", default))
    except (TypeError, ValueError):
        return default


def task_deadline(tools: Iterable[Tool], default_timeout: float) -> float | None:
    """How long a task's call may run: the longest of the tools' deadlines (a tool's ``timeout``,
    else ``default_timeout``); ``None`` when one of them has none."""
    longest = float(default_timeout) or None
    for tool in tools:
        deadline = tool.timeout or default_timeout
        if not deadline:
            return None
        longest = max(longest or 0.0, float(deadline))
    return longest


def check(celery_app: Any, tools: Iterable[Tool], default_timeout: float, lease: float) -> str | None:
    """Warn (and answer the warning) when a task may run longer than the broker's visibility timeout."""
    timeout = visibility_timeout(celery_app)
    if timeout is None:
        return None
    deadline = task_deadline(tools, default_timeout)
    if deadline is not None and deadline <= timeout:
        return None
    runs = "have no deadline" if deadline is None else f"may run {deadline:g} s"
    warning = (f"flask-tooldiscovery: tasks {runs} (a tool's timeout, else {key('DEFAULT_TIMEOUT')}), longer than "
               f"the Celery broker's visibility_timeout of {timeout:g} s: the broker delivers such a task again "
               f"while it still runs. Its run holds a lease ({key('TASK_LEASE')}, {lease:g} s), so that delivery "
               "is dropped, never run twice; set broker_transport_options={'visibility_timeout': ...} above the "
               "longest task to spare it")
    log.warning(warning)
    return warning


__all__ = ["DEFAULTS", "check", "task_deadline", "visibility_timeout"]
