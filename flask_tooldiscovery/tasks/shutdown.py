"""A graceful stop loses nothing a process accepted: its tasks end, or are left to their lease;
their callbacks are sent, or left in the state store for another process.

A web worker that stops gracefully (gunicorn's ``kill -HUP`` reload, ``kill -TERM``, a worker
recycled by ``max_requests``) calls :func:`worker_exit`, gunicorn's hook of that name, which the
shipped ``deploy/gunicorn.conf.py`` sets; a Celery worker's pool process does the same through
Celery's ``worker_process_shutdown`` signal. For each app of the process (:func:`stop_all`):

1. its task engine takes no new task (a call arriving now is answered 503, to be tried again on
   another worker), and the tasks it accepted run on until they end or the time allowed runs out;
2. the callback of each ended task is sent meanwhile, by the callback sender's own threads; then
   the sender, and the Celery engine's outbox publisher, stop looking at the state store (a job
   the outbox has not sent stays due there for any other process's publisher);
3. what is left is logged: tasks still running (their records hold a lease, which lapses once this
   process is gone: any worker then reads them ``interrupted``), and callbacks not yet sent: kept in
   Redis (``TOOLDISCOVERY_STATE_STORAGE_URI``) for another process to send, or lost with this
   process when the task records live in it.

The time allowed is gunicorn's, less two seconds: the shorter of ``graceful_timeout`` (after which
the master kills a stopping worker) and ``timeout``.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Protocol

from ..observe.logs import log
from .callbacks import CallbackSender
from .engines import Engine
from .outbox import Outbox
from .records import TaskStore


class Tasks(Protocol):
    """What a stop needs of an app's tasks (:class:`~.runner.Tasks`)."""

    engine: Engine
    callbacks: CallbackSender
    store: TaskStore
    #: The Celery engine's outbox (``None`` with the thread engine).
    outbox: Outbox | None
    #: Whether the records (and the callbacks waiting) are shared by every worker and host.
    shared: bool


_LIVE: weakref.WeakSet[Tasks] = weakref.WeakSet()
_LOCK = threading.Lock()
#: Seconds a Celery pool process gives its callbacks when it stops (they are in Redis anyway).
CELERY_STOP = 10.0


def register(tasks: Tasks) -> None:
    """Stop ``tasks`` with the others of this process (:func:`stop_all`)."""
    with _LOCK:
        _LIVE.add(tasks)


def _shown(ids: list[str] | set[str], most: int = 20) -> str:
    ids = sorted(ids)
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def stop(tasks: Tasks, timeout: float) -> None:
    """Stop one app's tasks gracefully, within ``timeout`` seconds (see the module's text)."""
    started = time.monotonic()
    deadline = started + max(timeout, 0.0)
    accepted = tasks.engine.accepted()
    sender = tasks.callbacks
    sent_before = sender.sent
    if accepted or sender.pending():
        log.info("flask-tooldiscovery: stopping: %d task(s) accepted here still running or waiting (%s), "
                 "%d callback(s) to send; waiting up to %.0f s", len(accepted), _shown(accepted),
                 len(sender.pending()), timeout)
    left = tasks.engine.stop(deadline)
    sender.drain(deadline, lambda: True)
    sender.stop(deadline)
    if tasks.outbox is not None:  # its jobs not yet sent stay due in the state store for another process
        tasks.outbox.stop()
    unsent = sender.pending()
    ended = len(set(accepted) - set(left))
    if accepted or unsent or sender.sent > sent_before:
        log.info("flask-tooldiscovery: stopped in %.1f s: %d task(s) ended, %d callback(s) sent while stopping",
                 time.monotonic() - started, ended, sender.sent - sent_before)
    if left:
        log.warning("flask-tooldiscovery: %d task(s) still running or waiting when the worker stopped are left to "
                    "their lease (read as interrupted once it lapses): %s", len(left), _shown(left))
    if unsent and tasks.shared:
        log.warning("flask-tooldiscovery: %d callback(s) not yet sent are left in the state store; another process "
                    "sends them: %s", len(unsent), _shown(unsent))
    elif unsent:
        log.warning("flask-tooldiscovery: %d callback(s) not yet sent are lost with this worker (its task records are "
                    "kept in it; set TOOLDISCOVERY_STATE_STORAGE_URI to a Redis URL to keep them): %s",
                    len(unsent), _shown(unsent))


def stop_all(timeout: float) -> None:
    """Stop every app's tasks in this process gracefully, within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    with _LOCK:
        live = list(_LIVE)
    for tasks in live:
        try:
            stop(tasks, deadline - time.monotonic())
        except Exception:  # never in the way of the worker's exit
            log.exception("flask-tooldiscovery: stopping the tasks failed")


def worker_exit(server: Any, worker: Any) -> None:
    """gunicorn's ``worker_exit`` hook: a worker that stops gracefully stops its apps' tasks (the
    time allowed: the shorter of ``graceful_timeout`` and ``timeout``, less two seconds). A
    ``worker_exit`` of your own calls it with the same two arguments."""
    cfg = getattr(worker, "cfg", None)
    graceful = float(getattr(cfg, "graceful_timeout", 30) or 30)
    hard = float(getattr(cfg, "timeout", 0) or 0) or graceful  # 0: no timeout
    stop_all(max(min(graceful, hard) - 2.0, 1.0))


def on_celery_process_shutdown(**_: Any) -> None:
    """Celery's ``worker_process_shutdown`` signal: a pool process that stops stops its apps' tasks."""
    stop_all(CELERY_STOP)


__all__ = ["CELERY_STOP", "on_celery_process_shutdown", "register", "stop", "stop_all", "worker_exit"]
