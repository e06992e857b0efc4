"""The state store every worker and host shares.

``TOOLDISCOVERY_STATE_STORAGE_URI`` (``redis://host:6379/0``, needs redis-py) names it. Whatever
keeps state there (the rendezvous of :mod:`.rendezvous`, the spent approvals of
:mod:`.single_use`) goes through :func:`redis_client`: one client, with its connection pool, per
URI and process. Unset, each worker process keeps its own state, which is only right when it is
the only one (``init_app`` warns when the server says it runs several:
:func:`flask_tooldiscovery.serving.worker_threads.warn_unshared_state`).
"""

from __future__ import annotations

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


__all__ = ["redis_client"]
