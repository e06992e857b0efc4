"""A running task is never taken for a dead one. With a real Celery worker and a real Redis whose
broker ``visibility_timeout`` (2 s) is shorter than the task: the broker delivers the task again
while it runs, and that delivery is dropped (the run holds its lease, renewed while it runs), so
the task completes once, its result is read, its side effect happened once, whether or not the
tool is idempotent. A worker killed with ``kill -9`` after that (the broker has forgotten its
message by then) is still recovered once its lease lapses: the outbox sends the task again, which
ends ``interrupted`` (not idempotent) or runs again to completion (idempotent)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.tasks.outbox import OUTBOX, RUNNING
from flask_tooldiscovery.tasks.records import lease_key
from flask_tooldiscovery.tasks.runner import INTERRUPTED, tasks_of

from .celery_side import CelerySide, celery_side, effects, wait_for  # noqa: F401  (celery_side: a fixture)
from .test_opal_async import Receiver
from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)
from .test_tasks import call, receiver  # noqa: F401  (receiver: a fixture)

pytestmark = pytest.mark.slow
DROPPED = "was delivered again while its run is still alive"


@pytest.fixture
def short_visibility(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The broker delivers an unacknowledged task again after 2 s (swept every 2 s); a run's lease
    is 3 s (renewed every second); the outbox looks for due jobs every second (read by the web
    side and the workers a test makes)."""
    monkeypatch.setenv("TD_VISIBILITY_TIMEOUT", "2")
    monkeypatch.setenv("TD_TASK_LEASE", "3")
    monkeypatch.setenv("TD_OUTBOX_GRACE", "3")
    yield


def dropped(log: Path) -> bool:
    return DROPPED in log.read_text()


def nothing_left(redis_url: str, task_id: str) -> bool:  # noqa: F811
    import redis

    client = redis.Redis.from_url(redis_url)
    member = task_id + RUNNING
    return client.zscore(OUTBOX, member) is None and client.hget(f"{OUTBOX}:values", member) is None \
        and not client.exists(lease_key(task_id))


@pytest.mark.parametrize("tool", ["refund", "recount"])
def test_a_task_longer_than_the_visibility_timeout_completes_once(
        short_visibility: None, celery_side: CelerySide, receiver: Receiver, redis_url: str,  # noqa: F811
        tool: str) -> None:
    app, folder = celery_side.web(), celery_side.folder
    workers = [celery_side.worker(), celery_side.worker()]
    url = receiver.url()
    name = f"L{tool}"
    task_id = call(app, tool, {"order" if tool == "refund" else "name": name}, url)
    wait_for(lambda: effects(folder, f"{tool}-{name}") == 1)  # running on one worker, waiting for its gate
    # the broker delivers it again to the other worker, which drops it: the run is alive
    wait_for(lambda: any(dropped(w.log) for w in workers), 40)
    assert receiver.received(url) == []  # nothing ended it meanwhile
    task = tasks_of(app).read(task_id)
    assert task is not None and task.state == "working"
    (folder / f"gate-{name}").touch()
    [(_, body)] = receiver.wait(url)
    key = "refunded" if tool == "refund" else "recounted"
    assert json.loads(body) == {"content": {key: name}, "content_type": "application/json"}
    task = tasks_of(app).read(task_id)
    assert task is not None and task.state == "completed" and task.result is not None
    assert task.result.to_wire() == {"status": "success", "value": {key: name}}
    wait_for(lambda: nothing_left(redis_url, task_id), 10)  # its lease and its kept job went with the run
    assert effects(folder, f"{tool}-{name}") == 1 and len(receiver.received(url)) == 1


@pytest.mark.parametrize("tool", ["refund", "recount"])
def test_a_killed_worker_is_recovered_once_its_lease_lapses(
        short_visibility: None, celery_side: CelerySide, receiver: Receiver, tool: str) -> None:  # noqa: F811
    """The broker's own copy was delivered again and dropped while the run was alive (so the
    broker forgot the message): only the lease tells that the run died."""
    app, folder = celery_side.web(), celery_side.folder
    first = celery_side.worker()
    url = receiver.url()
    name = f"K{tool}"
    task_id = call(app, tool, {"order" if tool == "refund" else "name": name}, url)
    wait_for(lambda: effects(folder, f"{tool}-{name}") == 1)
    second = celery_side.worker()
    wait_for(lambda: dropped(second.log), 40)
    first.kill()
    if tool == "refund":
        [(_, body)] = receiver.wait(url)
        problem = json.loads(body)
        assert problem["error"]["error_code"] == "INTERRUPTED" and problem["message"] == INTERRUPTED
        (folder / f"gate-{name}").touch()
        state = "interrupted"
        assert effects(folder, f"{tool}-{name}") == 1  # never a second refund
    else:
        wait_for(lambda: effects(folder, f"{tool}-{name}") == 2)  # sent again and run again
        (folder / f"gate-{name}").touch()
        [(_, body)] = receiver.wait(url)
        assert json.loads(body) == {"content": {"recounted": name}, "content_type": "application/json"}
        state = "completed"
    task = tasks_of(app).read(task_id)
    assert task is not None and task.state == state and len(receiver.received(url)) == 1


# -- the settings check at start ---------------------------------------------------------------------


def celery_app_with(redis_url: str, timeout: float | None, **config: Any) -> Flask:  # noqa: F811
    """An app on the Celery engine whose broker's visibility timeout is ``timeout`` (``None``:
    Celery's default), with a tool of ``config['tool_timeout']`` seconds (if given)."""
    from celery import Celery

    tool_timeout = config.pop("tool_timeout", None)
    broker = config.pop("broker", redis_url)
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True, timeout=tool_timeout)
    def report(n: int) -> int:
        """Make a report."""
        return n

    app = Flask("visibility")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_TASK_ENGINE="celery",
                      TOOLDISCOVERY_STATE_STORAGE_URI=redis_url, SECRET_KEY="s3cret-for-sealing", **config)
    celery_app = Celery(app.name, broker=broker, set_as_current=False)
    if timeout is not None:
        celery_app.conf.broker_transport_options = {"visibility_timeout": timeout}
    app.extensions["celery"] = celery_app
    discovery.init_app(app)
    return app


def test_init_app_warns_when_a_task_may_outlast_the_brokers_visibility_timeout(
        celery_side: CelerySide, redis_url: str, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    def warned(timeout: float | None, **config: Any) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
            celery_side.web(celery_app_with(redis_url, timeout, **config))  # its tasks stopped after
        return [r.getMessage() for r in caplog.records if "visibility_timeout" in r.getMessage()]

    # the default deadline (TOOLDISCOVERY_DEFAULT_TIMEOUT, 25 s) past a 10 s visibility timeout
    [warning] = warned(10)
    assert "tasks may run 25 s" in warning and "visibility_timeout of 10 s" in warning
    assert "TOOLDISCOVERY_TASK_LEASE" in warning and "never run twice" in warning
    # a tool's own timeout past Celery's default for Redis (an hour)
    [warning] = warned(None, tool_timeout=7200)
    assert "tasks may run 7200 s" in warning and "visibility_timeout of 3600 s" in warning
    # no deadline at all
    [warning] = warned(600, TOOLDISCOVERY_DEFAULT_TIMEOUT=0)
    assert "tasks have no deadline" in warning
    # every task ends before the broker delivers it again, or a broker without a visibility timeout
    assert warned(30) == [] and warned(None) == [] and warned(60, tool_timeout=50) == []
    assert warned(None, broker="amqp://guest@127.0.0.1:9//", TOOLDISCOVERY_DEFAULT_TIMEOUT=0) == []
