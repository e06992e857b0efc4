"""The state store every worker and host shares, and what it takes to know a process needs one.

``TOOLDISCOVERY_STATE_STORAGE_URI`` (``redis://host:6379/0``, needs redis-py) names it. Whatever
keeps state there (the rendezvous of :mod:`.rendezvous`, the spent approvals of
:mod:`.single_use`) goes through :func:`redis_client`: one client, with its connection pool, per
URI and process. Unset, each worker process keeps its own state, which is only right when it is
the only one: :func:`gunicorn_workers` tells how many processes gunicorn runs beside this one.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


def redis_client(uri: str) -> Any:
    """The Redis client of ``uri``: one per URI and process (redis-py's clients are thread-safe,
    each blocking call takes a connection of the pool)."""
    with _LOCK:
        client = _CLIENTS.get(uri)
        if client is None:
            import redis

            client = _CLIENTS[uri] = redis.Redis.from_url(uri)
        return client


def gunicorn_workers() -> int | None:
    """How many worker processes the gunicorn serving this process runs, or ``None`` when gunicorn
    does not serve it.

    Read from gunicorn's arbiter (its ``num_workers``), which is on the call stack while gunicorn
    loads the app: in the worker it forked, or in the master with ``--preload``. Called outside that
    (an app built on the first request), the count is unknown: ``0``.
    """
    arbiter_module = sys.modules.get("gunicorn.arbiter")
    if arbiter_module is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, arbiter_module.Arbiter):
            workers = getattr(candidate, "num_workers", None)
            return workers if isinstance(workers, int) and workers > 0 else 0
        frame = frame.f_back  # type: ignore[assignment]
    return 0


__all__ = ["gunicorn_workers", "redis_client"]
