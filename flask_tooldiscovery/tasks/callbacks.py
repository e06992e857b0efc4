"""Results POSTed to a URL a client named when its task ends (a callback), sent by a sender of
their own so that a slow or hostile receiver never holds the task engine's slots.

Where the URL may point and how the connection is made (checked addresses, pinned, no proxy, no
redirect) is :mod:`..calls.outbound`. Here, delivery:

* :func:`attempt`: one POST, with a short connect timeout and a read timeout; a connection error,
  a timeout, a 5xx or a 429 is worth another attempt. :func:`backoff_for`: the wait before it
  (doubling, with jitter, at most :data:`MAX_BACKOFF`).
* :class:`CallbackSender`: the attempts of every ended task's finisher (Opal's
  ``deliver_result``), in a small pool of threads of its own (``TOOLDISCOVERY_TASK_CALLBACK_WORKERS``),
  at most ``TOOLDISCOVERY_TASK_CALLBACK_HOST_LIMIT`` at once to one host, the others waiting their
  turn. A host whose attempts fail ``TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_FAILURES`` times in a row
  gets none for ``TOOLDISCOVERY_TASK_CALLBACK_CIRCUIT_OPEN`` seconds (its circuit is open): the
  callbacks due to it meanwhile are postponed, not given up (they wait in the due list, holding no
  thread, no attempt counted); then one attempt probes the host (half-open): if it is answered the
  postponed callbacks go out, a few at once as ever, else they wait for the next probe. A postponed
  callback is given up only when its retry window would end before the next probe (the window its
  call named: ``meta["callback"]["retry_window"]`` seconds after the task ended, else
  :data:`DEFAULT_WINDOW`), or when ``TOOLDISCOVERY_TASK_CALLBACK_HOST_BACKLOG`` callbacks already
  wait for that host in this process (the newest is given up). What became of a task's callback is
  written on its record (``meta["delivery"]``: ``postponed`` while it waits for its host's probe).
* The callbacks waiting for an attempt are kept in the state store (:mod:`.callback_queue`): with
  Redis, a callback this process did not send (it stopped, it died) is sent by any other process
  that runs tasks.

Log lines name the URL without its query (which may hold a signature), never headers.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ..calls.outbound import checked, post, refused, resolve
from ..observe.logs import log
from .callback_queue import CallbackQueue, Entry
from .records import Task, TaskStore

#: The longest wait between two attempts, in seconds.
MAX_BACKOFF = 60.0
#: Callbacks the dispatcher looks at at once, at least (those whose host is full wait again).
BATCH = 64
#: Delivery states after which nothing more is sent.
OVER = frozenset({"delivered", "given_up", "finished"})
#: Seconds after its task ended a callback whose call named no retry window is still offered.
DEFAULT_WINDOW = 3600.0
#: Seconds after its due time a postponed callback still counts as waiting for its host here (it is
#: taken again by then, by this process or, with Redis, another).
HELD_FOR = 30.0


class Attempted(NamedTuple):
    """What one attempt came to: delivered, worth another attempt, and why not (``None``: delivered)."""

    delivered: bool
    retry: bool
    reason: str | None


def shown_url(url: str) -> str:
    """``url`` without its query (which may hold a signature), as log lines name it."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def host_of(url: str) -> str:
    """The ``host:port`` a URL names (what the limits and the circuits are kept by)."""
    try:
        parts = urlsplit(url)
        return f"{(parts.hostname or '').rstrip('.')}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    except ValueError:
        return url


def attempt(url: str, body: Any, headers: Mapping[str, str], *, timeout: float, hosts: tuple[str, ...],
            setting: str, ids: str, number: int, of: int | None = None,
            connect_timeout: float | None = None) -> Attempted:
    """One attempt to POST ``body`` as JSON to ``url`` (``connect_timeout`` seconds to connect,
    ``timeout`` for each read); a failed attempt is logged at WARNING naming ``ids`` (``number`` of
    ``of``, when the attempts are counted)."""
    reason, addresses = checked(url, hosts, setting)  # its addresses may have changed
    retry = False
    if reason is None:
        try:
            if addresses is None:  # a listed host: resolved here, once
                addresses = resolve(url)
            status = post(url, addresses, json.dumps(body).encode(), headers, timeout=timeout,
                          connect_timeout=connect_timeout)
            if 200 <= status < 300:
                return Attempted(True, False, None)
            reason, retry = f"HTTP {status}", status >= 500 or status == 429  # a 3xx is not followed
        except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, timeouts, TLS, bad answers
            reason, retry = f"{type(exc).__name__}: {exc}", True
    log.warning("flask-tooldiscovery: callback to %s failed, attempt %d%s: %s (%s)",
                shown_url(url), number, f" of {of}" if of else "", reason, ids)
    return Attempted(False, retry, reason)


def backoff_for(number: int, first: float = 0.5) -> float:
    """Seconds to wait after failed attempt ``number``: ``first``, doubling, at most
    :data:`MAX_BACKOFF`, plus up to half as much again at random (so that callbacks failed together
    are not tried again together)."""
    base = min(first * 2 ** (number - 1), MAX_BACKOFF)
    return float(base + random.uniform(0, base / 2))


def gave_up(url: str, attempts: int, ids: str, why: str = "") -> None:
    """Log (ERROR) that delivering to ``url`` stopped after ``attempts``."""
    log.error("flask-tooldiscovery: gave up delivering a result to %s after %d attempt(s)%s (%s)",
              shown_url(url), attempts, f": {why}" if why else "", ids)


def deliver(url: str, body: Any, headers: Mapping[str, str], *, attempts: int, timeout: float,
            hosts: tuple[str, ...], setting: str, ids: str, backoff: float = 0.5) -> bool:
    """POST ``body`` as JSON to ``url`` here and now, at most ``attempts`` times, waiting between
    them (:func:`backoff_for`); giving up is logged at ERROR."""
    number = 1
    for number in range(1, attempts + 1):
        delivered, retry, _ = attempt(url, body, headers, timeout=timeout, hosts=hosts, setting=setting, ids=ids,
                                      number=number, of=attempts)
        if delivered:
            return True
        if not retry or number == attempts:
            break
        time.sleep(backoff_for(number, backoff))
    gave_up(url, number, ids)
    return False


@dataclass(frozen=True)
class SenderOptions:
    """How callbacks are sent (the ``TOOLDISCOVERY_TASK_CALLBACK_*`` settings)."""

    workers: int = 8
    host_limit: int = 2
    connect_timeout: float = 3.0
    circuit_failures: int = 5
    circuit_open: float = 60.0
    host_backlog: int = 1000


class _Circuit:
    """One host's failures in a row, until when it gets no attempt (``time.monotonic()``), and the
    callbacks this process postponed for it (task id: when each is due again, epoch seconds)."""

    def __init__(self) -> None:
        self.failures = 0
        self.open_until = 0.0
        self.probing = False
        self.held: dict[str, float] = {}

    def waiting(self, now: float) -> int:
        """How many callbacks wait for this host here (forgetting those another process took)."""
        for task_id in [t for t, due in self.held.items() if due < now - HELD_FOR]:
            del self.held[task_id]
        return len(self.held)


#: A task's finisher as the sender runs it: the wait before the next attempt, or ``None``.
Finish = Callable[[Task, int], "float | None"]


class CallbackSender:
    """The callbacks of one app's ended tasks (see the module's text). ``finish`` runs one attempt
    of a task's finisher; ``store`` holds the records the outcome is written on."""

    def __init__(self, store: TaskStore, queue: CallbackQueue, finish: Finish, options: SenderOptions,
                 poll: float = 1.0) -> None:
        self.store, self.queue, self.options = store, queue, options
        self._finish = finish
        self._poll = poll
        self._lock = threading.Condition()
        self._busy: dict[str, int] = {}  # attempts running, by host
        self._running = 0
        self._dispatching = False  # the dispatcher holds callbacks it took and has not yet begun or put back
        self._circuits: dict[str, _Circuit] = {}
        self._mine: set[str] = set()  # the callbacks this process scheduled and has not yet seen to
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._stopping = False
        #: Attempts made and callbacks delivered since this process started (shown when it stops).
        self.sent = 0

    # -- scheduling ---------------------------------------------------------------------------

    def schedule(self, task_id: str, dialect: str, attempt_number: int, delay: float = 0.0, *,
                 keep: bool = False) -> None:
        """Attempt ``attempt_number`` of task ``task_id``'s finisher, ``delay`` seconds from now;
        ``keep``: unless one is waiting already."""
        self.queue.add(Entry(task_id, dialect, attempt_number), time.time() + max(delay, 0.0), keep=keep)
        self.start()
        with self._lock:
            self._mine.add(task_id)
            self._lock.notify_all()

    def start(self) -> None:
        """Start this process's dispatcher (once per process: a forked worker starts its own)."""
        if self._pid != os.getpid() and self._thread is not None:
            # forked from a process whose dispatcher ran (gunicorn --preload, Celery's pool): its lock
            # may have been held at the fork, and its threads and the attempts it was making are not here
            self._lock, self._mine = threading.Condition(), set()
        with self._lock:
            if self._thread is not None and self._pid == os.getpid():
                return
            self._pid, self._busy, self._running, self._stopping = os.getpid(), {}, 0, False
            self._dispatching = False
            self._pool = ThreadPoolExecutor(self.options.workers, thread_name_prefix="tooldiscovery-callback")
            self._thread = threading.Thread(target=_dispatch_while_kept, args=(weakref.ref(self),),
                                            name="tooldiscovery-callback-dispatch", daemon=True)
            self._thread.start()

    def dispatch(self) -> None:
        """Start the due attempts the pool has room for (waiting a while when there are none)."""
        with self._lock:
            room = 0 if self._stopping else self.options.workers - self._running
            if room <= 0:
                self._lock.wait(self._poll)
                return
            self._dispatching = True
        try:
            taken = self.queue.take(time.time(), max(room, BATCH))  # more than room: some hosts may be full
            begun = sum(self._begin(entry) for entry in taken)
        finally:
            with self._lock:
                self._dispatching = False
                self._lock.notify_all()
        if taken and not begun:  # all waiting for their hosts: a moment before looking again
            with self._lock:
                self._lock.wait(0.05)
        elif not taken:
            due = self.queue.next_due()
            with self._lock:
                wait = self._poll if due is None else min(max(due - time.time(), 0.01), self._poll)
                self._lock.wait(wait)

    def _begin(self, entry: Entry) -> bool:
        """Start ``entry``'s attempt, or give it up, or put it back until its host has room; whether
        it was seen to (started or given up)."""
        task = self.store.get(entry.task_id)
        if task is None or not task.terminal or (task.meta.get("delivery") or {}).get("state") in OVER:
            self._seen(entry.task_id)
            return True
        host = host_of(str((task.meta.get("callback") or {}).get("url") or f"task:{task.dialect}"))
        probing, turn = False, 0.0
        with self._lock:
            circuit = self._circuits.setdefault(host, _Circuit())
            shut = circuit.open_until - time.monotonic()
            if shut <= 0:
                if self._running >= self.options.workers or self._stopping:  # the pool is full: soon
                    self.queue.add(entry, time.time() + random.uniform(0.05, 0.1))
                    return False
                # its turn comes (after the probe's answer, when its host's circuit is half-open); spread
                # out, so that many waiting for one host are not looked at again all together
                probing, turn = circuit.probing, random.uniform(0.5, 2.5)
                if not probing and self._busy.get(host, 0) >= self.options.host_limit:
                    if entry.task_id in circuit.held:  # postponed, its host answers again: still waiting here
                        circuit.held[entry.task_id] = time.time() + turn
                    self.queue.add(entry, time.time() + turn)
                    return False
                if not probing:
                    circuit.probing = bool(circuit.open_until)  # the first attempt after the circuit was open
                    circuit.held.pop(entry.task_id, None)
                    self._busy[host] = self._busy.get(host, 0) + 1
                    self._running += 1
        if shut > 0 or probing:
            self._postpone(task, entry, host, turn if probing else shut, probing)
            return True
        assert self._pool is not None
        self._pool.submit(self._one, task, entry, host)
        return True

    def _one(self, task: Task, entry: Entry, host: str) -> None:
        wait: float | None = None
        try:
            try:
                wait = self._finish(task, entry.attempt)
            except Exception:
                log.exception("flask-tooldiscovery: finishing task %s failed", task.id)
            # put back or dropped before the attempt counts as ended: a stop waits for that
            if wait is not None:
                self.queue.add(Entry(task.id, entry.dialect, entry.attempt + 1), time.time() + wait)
            else:
                self.note(task.id, {"state": "finished"}, only_if_open=True)
                self._seen(task.id)
        finally:
            with self._lock:
                self._busy[host] -= 1
                if not self._busy[host]:
                    del self._busy[host]
                self._running -= 1
                circuit = self._circuits.get(host)
                if circuit is not None:
                    circuit.probing = False
                    if not circuit.failures and not circuit.waiting(time.time()) and host not in self._busy:
                        del self._circuits[host]  # a host that answers: nothing to keep
                self._lock.notify_all()

    def _seen(self, task_id: str) -> None:
        self.queue.done(task_id)
        with self._lock:
            self._mine.discard(task_id)
            self._lock.notify_all()

    def _postpone(self, task: Task, entry: Entry, host: str, wait: float, probing: bool = False) -> None:
        """Keep ``entry`` waiting for its host's probe: ``wait`` seconds from now the circuit is
        half-open (``probing``: the probe is under way, look again then); or give it up: when its retry
        window ends before then, or too many wait for the host."""
        callback = task.meta.get("callback") or {}
        now, attempts = time.time(), entry.attempt - 1
        window = callback.get("retry_window")
        window = float(window) if isinstance(window, (int, float)) else DEFAULT_WINDOW
        # after the probe (the first one taken once the circuit is half-open), spread out
        due = now + wait + (0.0 if probing else random.uniform(0.05, 0.05 + min(self.options.circuit_open / 4, 5.0)))
        why = (f"its host {host} failed {self.options.circuit_failures} attempts in a row and " + (
            "one attempt probes it now (its circuit is half-open)" if probing else
            f"gets none for {self.options.circuit_open:g} s (its circuit is open)"))
        with self._lock:
            circuit = self._circuits.setdefault(host, _Circuit())
            full = entry.task_id not in circuit.held and circuit.waiting(now) >= self.options.host_backlog
            late = due > task.updated + window
            if not full and not late:
                circuit.held[entry.task_id] = due
        if late or full:
            why = (f"{why}, and {self.options.host_backlog} callbacks already wait for it "
                   "(TOOLDISCOVERY_TASK_CALLBACK_HOST_BACKLOG)" if full else
                   f"{why}, and its retry window ({window:g} s after the task ended) ends before its next attempt")
            url = str(callback.get("url") or host)
            gave_up(url, attempts, f"call_id={task.id} trace_id={task.meta.get('trace_id')}", why)
            self.note(task.id, {"state": "given_up", "attempts": attempts, "error": why})
            self._seen(task.id)
            return
        self.queue.add(entry, due)
        self.note(task.id, {"state": "postponed", "attempts": attempts, "error": why, "until": round(due, 3)})

    # -- what a finisher calls ------------------------------------------------------------------

    def refused(self, url: str, hosts: tuple[str, ...], setting: str) -> str | None:
        """Why no callback may go to ``url`` (``None``: it may); see :func:`..calls.outbound.refused`."""
        return refused(url, hosts, setting)

    def post(self, task: Task, url: str, body: Any, headers: Mapping[str, str], *, timeout: float,
             hosts: tuple[str, ...], setting: str, ids: str, number: int, of: int | None = None) -> Attempted:
        """Attempt ``number`` to POST task ``task``'s callback (:func:`attempt`, with this sender's
        connect timeout): its host's circuit learns of it, and the task's record says how it went."""
        result = attempt(url, body, headers, timeout=timeout, hosts=hosts, setting=setting, ids=ids, number=number,
                         of=of, connect_timeout=min(self.options.connect_timeout, timeout))
        host = host_of(url)
        with self._lock:
            circuit = self._circuits.setdefault(host, _Circuit())
            circuit.probing = False
            if result.delivered or not result.retry:  # the host answered
                circuit.failures, circuit.open_until = 0, 0.0
            else:
                circuit.failures += 1
                if circuit.failures >= self.options.circuit_failures:
                    if not circuit.open_until or circuit.open_until <= time.monotonic():
                        log.warning("flask-tooldiscovery: callbacks to %s failed %d times in a row; the callbacks due "
                                    "to it wait %g s, then one attempt probes it", host, circuit.failures,
                                    self.options.circuit_open)
                    circuit.open_until = time.monotonic() + self.options.circuit_open
        if result.delivered:
            self.sent += 1
            self.note(task.id, {"state": "delivered", "attempts": number})
        else:
            self.note(task.id, {"state": "failing", "attempts": number, "error": result.reason})
        return result

    def give_up(self, task: Task, url: str, attempts: int, ids: str, why: str) -> None:
        """Stop delivering task ``task``'s callback: logged (ERROR) and written on its record."""
        gave_up(url, attempts, ids)
        self.note(task.id, {"state": "given_up", "attempts": attempts, "error": why})

    def note(self, task_id: str, delivery: dict[str, Any], only_if_open: bool = False) -> None:
        """Write ``delivery`` on task ``task_id``'s record (``meta["delivery"]``, with the time);
        ``only_if_open``: unless its delivery already ended."""
        def change(task: Task) -> Task | None:
            if only_if_open and (task.meta.get("delivery") or {}).get("state") in OVER:
                return None
            return replace(task, meta={**task.meta, "delivery": {**delivery, "at": round(time.time(), 3)}})

        try:
            self.store.update(task_id, change, ended=True)
        except Exception:  # the store unreachable: the log has said what happened
            log.warning("flask-tooldiscovery: could not note the callback of task %s on its record", task_id,
                        exc_info=True)

    # -- stopping --------------------------------------------------------------------------------

    def pending(self) -> set[str]:
        """The callbacks this process scheduled and has not yet seen to."""
        with self._lock:
            return set(self._mine)

    def drain(self, deadline: float, until_idle: Callable[[], bool]) -> None:
        """Keep sending until ``until_idle()`` says no more will come and nothing this process
        scheduled is due before ``deadline`` (``time.monotonic()``), or until then."""
        while time.monotonic() < deadline:
            with self._lock:
                running = self._running
            due = self.queue.next_due(self.pending())
            if until_idle() and running == 0 and (due is None or due - time.time() > deadline - time.monotonic()):
                return
            with self._lock:
                self._lock.wait(0.1)

    def stop(self, deadline: float) -> int:
        """Take no more attempts; wait until ``deadline`` (``time.monotonic()``) for those running and
        for the dispatcher to put back what it took (else those would wait out their lease); how many
        attempts were still running then."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
            while (self._running or self._dispatching) and time.monotonic() < deadline:
                self._lock.wait(min(0.1, max(deadline - time.monotonic(), 0.0)))
            return self._running


def _dispatch_while_kept(ref: weakref.ref[CallbackSender]) -> None:
    """The dispatcher thread: runs while its sender is still referenced (its app alive)."""
    unreachable = False  # said once per outage, not at every look
    while (sender := ref()) is not None:
        try:
            sender.dispatch()
            if unreachable:
                log.info("flask-tooldiscovery: the callbacks waiting in the state store are readable again")
            unreachable = False
        except Exception as exc:  # the store unreachable for a moment: the callbacks wait there
            if not unreachable:
                log.warning("flask-tooldiscovery: the callbacks waiting in the state store cannot be read now (%s); "
                            "trying again every second", type(exc).__name__)
            unreachable = True
            time.sleep(1.0)
        del sender


__all__ = ["DEFAULT_WINDOW", "HELD_FOR", "MAX_BACKOFF", "OVER", "Attempted", "CallbackSender", "Finish",
           "SenderOptions", "attempt", "backoff_for", "deliver", "gave_up", "host_of", "shown_url"]
