"""The Celery engine's outbox: an accepted call is answered once its record and its job are in Redis.

Publishing a task to Celery's broker costs a second round trip and Celery's own work (kombu,
the message); neither needs to hold the caller. :meth:`Outbox.keep` writes the task's record and
its job in one script call (the record as the task store keeps it, the job in the outbox, due
``grace`` seconds from now), and the request is answered. This process's publisher thread then
sends the job to the broker and takes it out of the outbox.

Nothing lost: a job whose publish failed (the broker down for a moment) or never happened (the web
worker killed between its answer and the publish) stays in the outbox; once due, the publisher of
any process that runs tasks (a web worker, a Celery worker) takes it and sends it. Taking a job
moves its due time ``grace`` seconds on, in one script call, so two publishers never take it
together; a job is sent twice only when a publisher stalls for ``grace`` seconds between sending
it and taking it out (and a redelivered task is never run twice: see :mod:`.runner`).
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import weakref
from typing import Any

from ..observe.logs import log
from .engines import CeleryEngine
from .jobs import READABLE
from .records import COMPACT, PUT_LINES, REDIS_PREFIX, Task

OUTBOX = f"{REDIS_PREFIX}outbox"
JOBS = f"{REDIS_PREFIX}outbox:jobs"
#: Jobs a publisher takes from the outbox at once.
BATCH = 50
#: Jobs waiting in this process for its publisher, at most; past that (the broker slow or down) a
#: job waits in Redis only, and is sent once due.
WAITING = 1000

#: The task store's put (KEYS[1], KEYS[2]; ARGV[1..5]), then the job in the outbox (KEYS[3] the
#: due times, KEYS[4] the jobs; ARGV[6] the due time, ARGV[7] the job).
_KEEP = PUT_LINES + """
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[4])
redis.call('HSET', KEYS[4], ARGV[4], ARGV[7])
return 1
"""
#: Take the due jobs (at most ARGV[3]): their due time moves to ARGV[2]; [id, job, id, job...].
_TAKE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local out = {}
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], ARGV[2], id)
  local job = redis.call('HGET', KEYS[2], id)
  if job then table.insert(out, id); table.insert(out, job) else redis.call('ZREM', KEYS[1], id) end
end
return out
"""
#: Take one job this process kept (ARGV[1]) if it is still in the outbox: its due time moves to ARGV[2].
_TAKE_ONE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
return 0
"""


class Outbox:
    """Jobs kept in Redis until this or another process has sent them to ``engine``."""

    def __init__(self, redis: Any, engine: CeleryEngine, grace: float) -> None:
        self._redis = redis
        self._engine = engine
        self.grace = grace
        self._keep = redis.register_script(_KEEP)
        self._take = redis.register_script(_TAKE)
        self._take_one = redis.register_script(_TAKE_ONE)
        self._queue: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._unreachable = False  # said once per outage, not at every look

    def keep(self, task: Task, job: dict[str, Any]) -> None:
        """Write ``task``'s record and its job (its wire dict, sealed) in one round trip; the
        publisher sends it soon."""
        text = COMPACT.encode(job)
        ttl = max(int(task.ttl), 1)
        now = time.time()
        self._keep(keys=[REDIS_PREFIX + task.id, f"{REDIS_PREFIX}caller:{task.caller or ''}", OUTBOX, JOBS],
                   args=[task.to_json(), ttl, repr(task.created), task.id, repr(now - ttl), repr(now + self.grace),
                         text])
        self.start()
        if self._queue.qsize() < WAITING:
            self._queue.put(job)

    def start(self) -> None:
        """Start this process's publisher (once per process: a forked worker starts its own): it
        also sends the due jobs other processes left."""
        with self._lock:
            if self._thread is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._queue = queue.SimpleQueue()
                self._thread = threading.Thread(target=_publish_while_kept, args=(weakref.ref(self),),
                                                name="tooldiscovery-task-outbox", daemon=True)
                self._thread.start()

    def publish_next(self) -> None:
        """Send the next job this process kept (waiting a while for one), else the due ones."""
        try:
            job = self._queue.get(timeout=max(self.grace / 3, 0.2))
        except queue.Empty:
            self.send_due()
            return
        try:
            if self._take_one(keys=[OUTBOX], args=[job["task"], repr(time.time() + self.grace)]):
                self._send(job)
        except Exception:  # Redis unreachable for a moment: the job stays due, any publisher sends it
            log.warning("flask-tooldiscovery: task %s stays in the outbox for now", job["task"], exc_info=True)

    def send_due(self) -> int:
        """Send the jobs whose due time has passed (left by a publish that failed or never happened);
        how many were sent."""
        sent = 0
        try:
            now = time.time()
            taken = self._take(keys=[OUTBOX, JOBS], args=[repr(now), repr(now + self.grace), BATCH])
        except Exception as exc:
            if not self._unreachable:
                log.warning("flask-tooldiscovery: the task outbox cannot be read now (%s); trying again every %.0f s",
                            type(exc).__name__, max(self.grace / 3, 0.2))
            self._unreachable = True
            return 0
        if self._unreachable:
            log.info("flask-tooldiscovery: the task outbox is readable again")
            self._unreachable = False
        for i in range(0, len(taken), 2):
            task_id = taken[i].decode() if isinstance(taken[i], bytes) else str(taken[i])
            log.warning("flask-tooldiscovery: task %s was accepted but not yet sent to the task engine; sending it "
                        "now", task_id)
            job = json.loads(taken[i + 1])
            if not isinstance(job, dict) or job.get("v", 0) not in READABLE:  # left for a release that reads it
                log.error("flask-tooldiscovery: task %s in the outbox is of a job version this release cannot read",
                          task_id)
                continue
            sent += self._send(job)
        return sent

    def _send(self, job: dict[str, Any]) -> int:
        try:
            self._engine.send(job)
        except Exception:  # the broker is down: the job stays due and is sent again later
            log.warning("flask-tooldiscovery: could not send task %s to the task engine; it stays in the outbox",
                        job["task"], exc_info=True)
            return 0
        pipe = self._redis.pipeline(transaction=False)
        pipe.zrem(OUTBOX, job["task"])
        pipe.hdel(JOBS, job["task"])
        pipe.execute()
        return 1


def _publish_while_kept(ref: weakref.ref[Outbox]) -> None:
    """The publisher thread: runs while its outbox is still referenced (its app alive)."""
    while (outbox := ref()) is not None:
        outbox.publish_next()
        del outbox


__all__ = ["BATCH", "JOBS", "OUTBOX", "WAITING", "Outbox"]
