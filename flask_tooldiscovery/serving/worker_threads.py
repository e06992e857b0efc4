"""How many requests the WSGI server's worker process serves at once, and how many worker
processes it runs, as the server or the app's config says so; and the number of call slots
(``TOOLDISCOVERY_MAX_CONCURRENT_CALLS``) that leaves one of its threads free.

Two documented sources, the first that says wins:

* the settings ``TOOLDISCOVERY_SERVER_THREADS`` and ``TOOLDISCOVERY_SERVER_WORKERS`` (any server);
* gunicorn's ``post_fork`` server hook, :func:`post_fork` (``deploy/gunicorn.conf.py`` names it):
  gunicorn calls it in each new worker process with the worker, whose ``cfg`` is gunicorn's
  configuration as resolved from every source (command line, ``GUNICORN_CMD_ARGS``, config file).
  It runs before the worker loads the app; with ``--preload`` the app was loaded before, in the
  master, and the cores built then are told in the worker (:func:`listen`).

Neither: the conservative default (:data:`UNKNOWN_SERVER_SLOTS`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SettingsError
from ..observe.logs import log

#: Call slots per worker when the server does not say how many threads its worker has: with
#: three threads or more (waitress 4, cheroot 10, mod_wsgi 15, the development server one per
#: request) one is still free for discovery and health while two slow calls run.
UNKNOWN_SERVER_SLOTS = 2

_SYNC = ("sync", "gunicorn.workers.sync.SyncWorker", "egg:gunicorn#sync")
_THREADS = ("gthread", "gunicorn.workers.gthread.ThreadWorker", "egg:gunicorn#gthread")


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


def gunicorn_worker(worker: Any) -> Worker:
    """What a gunicorn worker object (as its server hooks receive it) says of itself: its class
    (a subclass of gunicorn's sync or threaded worker serves as its base does) and its ``cfg``."""
    cfg = worker.cfg
    names = _names(type(worker))
    name = next((n for n in names if n in _SYNC + _THREADS), names[0])
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


_lock = threading.Lock()
#: What gunicorn's hook said in this process (``None``: nothing).
_told: Worker | None = None
#: Told again when the hook runs after they were built (``--preload``).
_listeners: list[weakref.WeakMethod[Callable[[Worker], None]]] = []


def post_fork(server: Any, worker: Any) -> None:
    """gunicorn's ``post_fork`` server hook: tells this package how many threads the new worker
    process has and how many workers gunicorn runs. Name it in the gunicorn config file
    (``from flask_tooldiscovery.serving.worker_threads import post_fork``), or call it from a
    ``post_fork`` of your own with the same arguments."""
    global _told
    said = gunicorn_worker(worker)
    with _lock:  # each core built before is told once; later ones read told()
        _told = said
        listeners = [ref() for ref in _listeners]
        _listeners.clear()
    for listener in listeners:
        if listener is not None:
            listener(said)


def told() -> Worker | None:
    """What gunicorn's :func:`post_fork` hook said in this process, if it ran."""
    return _told


def listen(method: Callable[[Worker], None]) -> None:
    """Call the bound ``method`` when gunicorn's hook runs later in this process (an app loaded
    before the worker forked, with ``--preload``); held weakly."""
    with _lock:
        _listeners.append(weakref.WeakMethod(method))


def from_settings(threads: int | None, processes: int | None) -> Worker | None:
    """What the settings ``TOOLDISCOVERY_SERVER_THREADS`` and ``TOOLDISCOVERY_SERVER_WORKERS`` say
    (``None`` when neither is set)."""
    if threads is None and processes is None:
        return None
    kind = f"server of TOOLDISCOVERY_SERVER_THREADS={threads}" if threads is not None else "server"
    return Worker(kind, threads, processes)


def refuse_unshared_once(worker: Worker | None, state_storage_uri: str | None, once_only: Sequence[str], *,
                         per_process: bool) -> None:
    """Refuse to start (:class:`~flask_tooldiscovery.errors.SettingsError`) when the server is known to
    run several worker processes, they share no state store, and something must happen once
    (``once_only``: ``"epi-hmac nonces"``...): each process would remember it alone, so a request
    replayed to another worker would be taken again. ``per_process`` (``TOOLDISCOVERY_STATE_PER_PROCESS``)
    accepts that (:func:`warn_unshared_state` still warns)."""
    if per_process or state_storage_uri or not once_only or worker is None or worker.processes is None \
            or worker.processes < 2:
        return
    what = f"{', '.join(once_only[:-1])} and {once_only[-1]}" if len(once_only) > 1 else once_only[0]
    said = f"the server runs {worker.processes} worker processes and TOOLDISCOVERY_STATE_STORAGE_URI is unset"
    raise SettingsError(f"{said}: {what} would be remembered by each process alone, so a request replayed to "
                        f"another worker would be taken again. Set TOOLDISCOVERY_STATE_STORAGE_URI to a redis:// "
                        f"URL every worker shares, run one worker, or set TOOLDISCOVERY_STATE_PER_PROCESS=true "
                        f"to accept once per process")


def warn_unshared_state(worker: Worker | None, state_storage_uri: str | None, *, oauth: bool = False) -> None:
    """Warn when the server runs several worker processes and they share no state store
    (``oauth``: the app is its own OAuth authorization server, whose records are state too)."""
    if state_storage_uri or worker is None or worker.processes is None or worker.processes < 2:
        return
    log.warning("flask-tooldiscovery: the server runs %s worker processes and TOOLDISCOVERY_STATE_STORAGE_URI "
                "is unset: each process keeps its own state, so an epi-hmac nonce, a sealed approval or a "
                "rollback can be taken once in each of them, an MCP approval answer reaching another worker is "
                "lost, %sand a task's record can only be read on the worker that accepted it; set it to a "
                "redis:// URL every worker shares",
                worker.processes, "an OAuth code or token issued by one worker is unknown to the others, "
                if oauth else "")


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
    why_not = (f"the {worker.kind} has no thread count" if worker is not None
               else "the server did not say its threads")
    log.info("flask-tooldiscovery: at most %s tools run at once per worker process (%s); set %s to change it",
             UNKNOWN_SERVER_SLOTS, why_not, key)
    return UNKNOWN_SERVER_SLOTS


__all__ = ["UNKNOWN_SERVER_SLOTS", "Worker", "call_slots", "from_settings", "gunicorn_worker", "listen",
           "post_fork", "refuse_unshared_once", "told", "warn_unshared_state"]
