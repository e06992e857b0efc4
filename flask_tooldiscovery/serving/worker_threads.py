"""How many requests the WSGI server's worker process serves at once, when the server says so, and
the number of call slots (``TOOLDISCOVERY_MAX_CONCURRENT_CALLS``) that leaves one of them free.

gunicorn says so while it loads the app: the app is imported inside a method of gunicorn's worker
(or of its application object, with ``--preload``), and that object holds gunicorn's configuration
as gunicorn resolved it from every source (command line, ``GUNICORN_CMD_ARGS``, config file, a
custom application's options). :func:`loading_worker` finds it on the call stack of ``init_app``.
gunicorn has no other way to tell an application its settings, so an app set up anywhere else
(another server, the development server, a test client) gets the conservative default.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ..observe.logs import log

#: Call slots per worker when the server does not say how many threads its worker has: with
#: three threads or more (waitress 4, cheroot 10, mod_wsgi 15, the development server one per
#: request) one is still free for discovery and health while two slow calls run.
UNKNOWN_SERVER_SLOTS = 2

_SYNC = ("sync", "gunicorn.workers.sync.SyncWorker", "egg:gunicorn#sync")
_THREADS = ("gthread", "gunicorn.workers.gthread.ThreadWorker", "egg:gunicorn#gthread")
#: gunicorn's classes, by name (nothing of gunicorn is imported here): a worker, the objects that
#: load the app (a worker, or with --preload the application and the arbiter) and the configuration.
_WORKER = "gunicorn.workers.base.Worker"
_OWNERS = frozenset((_WORKER, "gunicorn.app.base.BaseApplication", "gunicorn.arbiter.Arbiter"))
_CONFIG = "gunicorn.config.Config"


@dataclass(frozen=True)
class Worker:
    """What the server said of the worker process that loads the app."""

    #: For people: ``"gunicorn gthread worker"``.
    kind: str
    #: Requests it serves at once; ``None`` when it does not run them on threads (gevent, eventlet...).
    threads: int | None
    #: How many worker processes the server runs (each with its own memory); ``None``: not said.
    processes: int | None = None


def _names(kind: type) -> list[str]:
    """``module.Name`` of ``kind`` and of each of its bases."""
    return [f"{base.__module__}.{base.__qualname__}" for base in kind.__mro__]


def _gunicorn_worker(owner: Any, cfg: Any) -> Worker:
    names = _names(type(owner))
    if _WORKER in names:  # loading in the worker process: its class is the one in use
        # a subclass of gunicorn's own sync or threaded worker serves as its base does
        name: Any = next((n for n in names if n in _SYNC + _THREADS), names[0])
    else:  # --preload: loading in the master, from the configuration
        name = cfg.worker_class_str
        if isinstance(name, type):
            name = next((n for n in _names(name) if n in _SYNC + _THREADS), _names(name)[0])
    name = str(name)
    threads = int(cfg.threads)
    processes = int(cfg.workers) if isinstance(getattr(cfg, "workers", None), int) else None
    if name in _SYNC and threads > 1:  # gunicorn runs sync with --threads above 1 as gthread
        name = "gthread"
    if name in _SYNC:
        return Worker("gunicorn sync worker", 1, processes)
    if name in _THREADS:
        return Worker(f"gunicorn gthread worker with {threads} thread{'s' if threads != 1 else ''}", threads,
                      processes)
    return Worker(f"gunicorn {name.rpartition('.')[2] or name} worker", None, processes)


def loading_worker(frame: FrameType | None = None) -> Worker | None:
    """The gunicorn worker (or master, with ``--preload``) loading the app, from the call stack
    above ``frame`` (default: the caller's); ``None`` when gunicorn is not loading it."""
    if "gunicorn" not in sys.modules:
        return None
    frame = frame or sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        # type(), never the object's own attributes, until it is known to be gunicorn's (a proxy
        # object on the stack must not be asked for anything)
        if owner is not None and _OWNERS.intersection(_names(type(owner))):
            cfg = vars(owner).get("cfg")
            if cfg is not None and _CONFIG in _names(type(cfg)):
                return _gunicorn_worker(owner, cfg)
        frame = frame.f_back
    return None


def call_slots(configured: int | None, worker: Worker | None) -> int:
    """The number of call slots per worker process: ``configured`` when set, else the worker's
    threads less one (at least one), else :data:`UNKNOWN_SERVER_SLOTS`. Logs the choice (INFO),
    and warns when a configured number leaves no thread free."""
    key = "TOOLDISCOVERY_MAX_CONCURRENT_CALLS"
    threads = worker.threads if worker is not None else None
    if configured is not None:
        if configured:
            log.info("flask-tooldiscovery: at most %s tool%s at once per worker process (%s)",
                     configured, " runs" if configured == 1 else "s run", key)
        else:
            log.info("flask-tooldiscovery: any number of tools run at once per worker process (%s=0)", key)
        if threads is not None and threads > 1 and (configured == 0 or configured >= threads):
            log.warning("flask-tooldiscovery: %s=%s leaves none of the %s threads free for discovery and health "
                        "while slow tools run; set it below %s", key, configured, threads, threads)
        return configured
    if worker is not None and threads is not None:
        limit = max(1, threads - 1)
        why = ("it serves one request at a time, so while a call runs the other workers answer discovery"
               if threads == 1 else "one thread kept for discovery and health")
        log.info("flask-tooldiscovery: at most %s tool%s at once per worker process (%s: %s); set %s to change it",
                 limit, " runs" if limit == 1 else "s run", worker.kind, why, key)
        return limit
    told = f"the {worker.kind} has no thread count" if worker is not None else "the server did not say its threads"
    log.info("flask-tooldiscovery: at most %s tools run at once per worker process (%s); set %s to change it",
             UNKNOWN_SERVER_SLOTS, told, key)
    return UNKNOWN_SERVER_SLOTS


__all__ = ["UNKNOWN_SERVER_SLOTS", "Worker", "call_slots", "loading_worker"]
