"""The tasks package's contracts: a task's result and the job an engine carries are typed, with a
wire dict of their own. A record or a message written by the previous release still reads; a job
of a version this release does not know is refused with a message saying so; cancellation is a
field of the result, never read from its text."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery, ToolError
from flask_tooldiscovery.runtime.invoke import CANCELLED
from flask_tooldiscovery.tasks.jobs import CallJob, FinishJob, _JobVersionError, job_from_wire
from flask_tooldiscovery.tasks.records import Task, TaskResult
from flask_tooldiscovery.tasks.runner import tasks_of
from flask_tooldiscovery.tasks.sealing import Sealer

from .test_mcp_tasks import ended, modern, until

#: A job as the previous release put it on the broker (and in the outbox): a dict with no version.
PREVIOUS_JOB = {
    "task": "t-previous", "dialect": "mcp", "tool": "whoami", "version": "1.0.0", "arguments": {"n": 2},
    "call_id": "t-previous", "trace_id": "0af7651916cd43dd8448eb211c80319c", "user_id": "alice", "then": None,
    "charged": True, "secrets": {"API": "s"}, "authorization": {}, "extra": {"k": 1},
    "headers": {"X-Request-Tag": "tag-1"}, "remote_addr": "127.0.0.9",
    "identity": {"subject": "alice", "scopes": ["read"], "claims": {"sub": "alice"}, "method": "api_key"},
}
#: A record as the previous release kept it, its result a dict of string keys.
PREVIOUS_RECORD = {
    "id": "t-old", "tool": "whoami", "version": "1.0.0", "dialect": "mcp", "caller": "alice", "digest": "d",
    "state": "completed", "created": 1.0, "updated": 2.0, "ttl": 60.0, "message": None,
    "result": {"status": "success", "value": {"n": 2}, "rich": True}, "meta": {"then": None},
}


def app_with_whoami() -> tuple[Flask, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def whoami(n: int, ctx: ToolContext = None) -> dict:  # type: ignore[assignment]
        """Say who called."""
        seen.append({"subject": ctx.identity.subject if ctx.identity else None, "user_id": ctx.user_id,
                     "secrets": dict(ctx.secrets), "tag": ctx.request.headers.get("X-Request-Tag")
                     if ctx.request is not None else None, "call_id": ctx.call_id})
        return {"n": n}

    app = Flask("contracts")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    discovery.init_app(app)
    return app, seen


def test_a_job_queued_by_the_previous_release_still_runs() -> None:
    app, seen = app_with_whoami()
    tasks = tasks_of(app)
    tasks.store.put(Task(id="t-previous", tool="whoami", version="1.0.0", dialect="mcp", caller="alice", digest="d"))
    job = job_from_wire(json.loads(json.dumps(PREVIOUS_JOB)), None)
    assert isinstance(job, CallJob) and job.identity is not None and job.identity["subject"] == "alice"
    tasks.run(job)
    task = tasks.store.get("t-previous")
    assert task is not None and task.state == "completed" and task.result == TaskResult("success", value={"n": 2})
    assert seen == [{"subject": "alice", "user_id": "alice", "secrets": {"API": "s"}, "tag": "tag-1",
                     "call_id": "t-previous"}]
    # this release's own wire dict says its version and reads back as the same job
    sealer = Sealer("a secret key")
    assert job.to_wire(sealer)["v"] == 2 and job_from_wire(job.to_wire(sealer), sealer) == job
    finish = FinishJob(task="t-previous", dialect="mcp", attempt=3)
    assert job_from_wire(finish.to_wire(), None) == finish and finish.job_id == "t-previous:then:3"


def test_a_job_of_a_newer_release_is_refused_with_a_message_saying_so() -> None:
    with pytest.raises(_JobVersionError, match=r"wire version 7.*cannot read.*upgrade the workers"):
        job_from_wire({**PREVIOUS_JOB, "v": 7}, None)
    with pytest.raises(ValueError, match="no task id"):
        job_from_wire({"kind": "call"}, None)


def test_a_record_kept_by_the_previous_release_still_reads_and_keeps_its_shape() -> None:
    task = Task.from_json(json.dumps(PREVIOUS_RECORD))
    assert task.result == TaskResult("success", value={"n": 2}, rich=True)
    assert json.loads(task.to_json()) == PREVIOUS_RECORD
    cancelled = Task.from_json(json.dumps({**PREVIOUS_RECORD, "state": "cancelled",
                                           "result": {"status": "cancelled", "error": "Stopped."}}))
    assert cancelled.result is not None and cancelled.result.cancelled


def test_cancellation_is_a_field_of_the_result_not_its_text() -> None:
    """A tool whose own error reads like a cancel is a failure; a task cancelled by its caller says
    cancelled in its result's field."""
    discovery = ToolDiscovery()
    started = threading.Event()

    @discovery.tool(long_running=True)
    def worded() -> dict:
        """Fail with the words of a cancel."""
        raise ToolError(CANCELLED)

    @discovery.tool(long_running=True)
    async def waits() -> dict:
        """Wait until cancelled."""
        import asyncio

        started.set()
        await asyncio.sleep(30)
        return {}

    app = Flask("cancel_field")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    discovery.init_app(app)
    c = app.test_client()
    store = tasks_of(app).store
    _, body = modern(c, "tools/call", {"name": "worded", "arguments": {}})
    until(c, body["result"]["taskId"], ended)
    task = store.get(body["result"]["taskId"])
    assert task is not None and task.state == "failed" and task.result is not None
    assert not task.result.cancelled and task.result.error == CANCELLED
    _, body = modern(c, "tools/call", {"name": "waits", "arguments": {}})
    assert started.wait(30)
    task_id = body["result"]["taskId"]
    assert tasks_of(app).cancel(task_id)
    deadline = time.monotonic() + 30
    while (task := store.get(task_id)) is None or not task.terminal:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert task.state == "cancelled" and task.result is not None and task.result.cancelled
