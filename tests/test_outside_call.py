"""A call made outside a request runs with no request context: a task (the thread engine here,
Celery with real workers and a real Redis below), ``flask tools call`` and ``ToolDiscovery.call``.
Inside the tool ``flask.has_request_context()`` is False (True over HTTP), and the tool still gets
what it got before: its caller's identity, the headers its task carries and the caller's address
(``ctx.request``, a detached request), ``url_for`` with ``SERVER_NAME``; rate limits still count
its caller, its span is a child of the traceparent it came with, and an approval it carries is
still checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask, has_request_context, request, url_for

from flask_tooldiscovery import Identity, ToolContext, ToolDiscovery
from flask_tooldiscovery.errors import ApprovalRequired
from flask_tooldiscovery.serving.outside import call_as
from flask_tooldiscovery.tasks.jobs import CallJob
from flask_tooldiscovery.tasks.records import Task
from flask_tooldiscovery.tasks.runner import tasks_of

from .celery_side import CelerySide, celery_side  # noqa: F401  (a fixture)
from .test_opal_async import Receiver
from .test_operating import PARENT_ID, TRACE_ID, TRACEPARENT, exporter, spans  # noqa: F401  (fixtures)
from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)
from .test_task_sealing import CREDENTIALS
from .test_tasks import receiver, wait_for  # noqa: F401  (receiver: a fixture)

TENANT = {"X-Tenant-Key": "tenant-7", "X-User": "alice"}


def seen_by(ctx: ToolContext) -> dict[str, Any]:
    """What a tool can tell of where it runs and who called it."""
    try:
        bound = request.path  # flask.request: only inside a request context
    except RuntimeError:
        bound = None
    req = ctx.request
    return {"in_request": has_request_context(), "flask_request": bound,
            "subject": ctx.identity.subject if ctx.identity is not None else None, "user_id": ctx.user_id,
            "tenant": req.headers.get("X-Tenant-Key") if req is not None else None,
            "user_header": req is not None and "X-User" in req.headers,
            "remote_addr": req.remote_addr if req is not None else None,
            "link": url_for("order", number=7, _external=True)}


def build(seen: list[dict[str, Any]], *, identify: bool = True, **config: Any) -> tuple[Flask, ToolDiscovery]:
    discovery = ToolDiscovery()

    def from_header(req: Any) -> Identity | None:
        user = req.headers.get("X-User")
        return Identity(subject=user, scopes=("tools.read",)) if user else None

    if identify:  # else every caller is anonymous, known by its address
        discovery.identity(from_header)

    @discovery.tool(long_running=True)
    def where(n: int, ctx: ToolContext = None) -> dict:  # type: ignore[assignment]
        """Say where the call runs and what it knows of its caller."""
        seen.append(seen_by(ctx))
        return {"n": n}

    @discovery.tool(long_running=True, rate_limit_per_minute=2)
    def limited(n: int) -> dict:
        """Twice a minute per caller."""
        return {"n": n}

    @discovery.tool(long_running=True, requires_approval=True)
    def wipe(n: int, ctx: ToolContext = None) -> dict:  # type: ignore[assignment]
        """Wipe (a person approves each call)."""
        seen.append(seen_by(ctx))
        return {"wiped": n}

    app = Flask("outside")
    app.config.update({"TESTING": True, "SECRET_KEY": "outside-call-key", "SERVER_NAME": "tools.example",
                       "TOOLDISCOVERY_DIALECTS": ["opal"], "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                       "TOOLDISCOVERY_WARN_UNAUTHENTICATED": False, "TOOLDISCOVERY_OPAL_CALLBACK_HOSTS": ["127.0.0.1"],
                       "TOOLDISCOVERY_TASK_HEADERS": ["X-Tenant-Key"], "TOOLDISCOVERY_ALLOWED_HOSTS": ["tools.example"],
                       **config})

    @app.get("/orders/<int:number>")
    def order(number: int) -> dict[str, int]:
        return {"number": number}

    discovery.init_app(app)
    return app, discovery


def opal_call(app: Flask, tool: str, url: str | None, address: str = "10.0.0.1",
              headers: dict[str, str] | None = None) -> Any:
    body: dict[str, Any] = {"parameters": {"n": 1}}
    if url is not None:
        body["async_callback"] = {"url": url, "tool_call_id": "tc-1"}
    return app.test_client().post(f"/opal/tools/{tool}", json=body, headers=headers or TENANT,
                                  environ_base={"REMOTE_ADDR": address})


def ended(app: Flask, task_id: str) -> Any:
    store = tasks_of(app).store
    wait_for(lambda: (task := store.get(task_id)) is not None and task.terminal, 30)
    return store.get(task_id)


def test_a_task_on_the_thread_engine_runs_outside_any_request_with_what_its_call_carried(
        receiver: Receiver) -> None:  # noqa: F811
    seen: list[dict[str, Any]] = []
    app, _ = build(seen)
    over_http = opal_call(app, "where", None)  # no callback: answered in the request
    assert over_http.status_code == 200, over_http.data
    answer = opal_call(app, "where", receiver.url())
    assert answer.status_code == 202, answer.data
    task = ended(app, answer.get_json()["task_id"])
    assert task.state == "completed", task
    link = "http://tools.example/orders/7"
    assert seen == [
        {"in_request": True, "flask_request": "/opal/tools/where", "subject": "alice", "user_id": "alice",
         "tenant": "tenant-7", "user_header": True, "remote_addr": "10.0.0.1", "link": link},
        # the task: no request context, the same caller, the headers it carries (X-User is not one), its address
        {"in_request": False, "flask_request": None, "subject": "alice", "user_id": "alice",
         "tenant": "tenant-7", "user_header": False, "remote_addr": "10.0.0.1", "link": link}]


def test_a_tasks_span_is_a_child_of_the_traceparent_its_call_came_with(receiver: Receiver,  # noqa: F811
                                                                      spans: Any) -> None:  # noqa: F811
    app, _ = build([], TOOLDISCOVERY_OTEL=True)
    answer = opal_call(app, "where", receiver.url(), headers={**TENANT, "traceparent": TRACEPARENT})
    assert answer.status_code == 202, answer.data
    assert ended(app, answer.get_json()["task_id"]).state == "completed"
    (span,) = [s for s in spans() if s.name == "execute_tool where"]  # the task's, run outside the request
    assert span.context.trace_id == int(TRACE_ID, 16)
    assert span.parent is not None and span.parent.span_id == int(PARENT_ID, 16) and span.parent.is_remote


def test_a_task_still_counts_against_its_callers_rate_limit(receiver: Receiver) -> None:  # noqa: F811
    app, _ = build([], identify=False)
    url = receiver.url()
    assert [opal_call(app, "limited", url, "10.0.0.1").status_code for _ in range(3)] == [202, 202, 429]
    assert opal_call(app, "limited", url, "10.0.0.2").status_code == 202  # another caller
    # a job not charged when it was accepted (the previous release's) is counted where it runs, by
    # the address it carries
    tasks = tasks_of(app)
    states = []
    for number, address in enumerate(["10.0.0.3", "10.0.0.3", "10.0.0.3", "10.0.0.4"]):
        job = CallJob(task=f"t-limited-{number}", dialect="opal", tool="limited", version="1.0.0", arguments={"n": 1},
                      call_id=f"t-limited-{number}", trace_id=None, user_id=None, then=None, charged=False,
                      secrets={}, authorization={}, extra={}, headers={}, remote_addr=address, identity=None)
        tasks.store.put(Task(id=job.task, tool="limited", version="1.0.0", dialect="opal", caller=None, digest="d"))
        tasks.run(job)
        states.append(ended(app, job.task).state)
    assert states == ["completed", "completed", "failed", "completed"]


def test_an_approval_a_task_carries_is_checked_where_it_runs() -> None:
    seen: list[dict[str, Any]] = []
    app, discovery = build(seen, TOOLDISCOVERY_TASK_HEADERS=["X-Tool-Approval"])
    tasks, alice = tasks_of(app), {"subject": "alice", "scopes": ["tools.read"], "claims": {}, "method": "hook"}
    with app.app_context():
        tool = discovery.tools().get("wipe")
        with pytest.raises(ApprovalRequired) as asked:
            call_as(tasks.pipelines["opal"], Identity(subject="alice"), tool, {"n": 1}, call_id="t-wipe-1")
    sealed = asked.value.state
    for task_id, headers in (("t-wipe-0", {}), ("t-wipe-1", {"X-Tool-Approval": sealed})):
        job = CallJob(task=task_id, dialect="opal", tool="wipe", version="1.0.0", arguments={"n": 1},
                      call_id=task_id, trace_id=None, user_id=None, then=None, charged=True, secrets={},
                      authorization={}, extra={}, headers=headers, remote_addr="10.0.0.5", identity=alice)
        tasks.store.put(Task(id=task_id, tool="wipe", version="1.0.0", dialect="opal", caller="alice", digest="d"))
        tasks.run(job)
    refused, approved = ended(app, "t-wipe-0"), ended(app, "t-wipe-1")
    assert refused.state == "failed" and "approval" in (refused.result.error or "")
    assert approved.state == "completed" and approved.result.value == {"wiped": 1}
    assert [(s["in_request"], s["subject"], s["remote_addr"]) for s in seen] == [(False, "alice", "10.0.0.5")]


def test_flask_tools_call_runs_outside_any_request() -> None:
    seen: list[dict[str, Any]] = []
    app, _ = build(seen)
    runner = app.test_cli_runner()
    result = runner.invoke(args=["tools", "--as", "alice", "call", "where", "--input", '{"n": 2}'])
    assert result.exit_code == 0, result.output
    refused = runner.invoke(args=["tools", "--as", "alice", "call", "wipe", "--input", '{"n": 2}'])
    assert refused.exit_code == 1 and "--approve" in refused.output
    approved = runner.invoke(args=["tools", "--as", "alice", "call", "wipe", "--input", '{"n": 2}', "--approve"])
    assert approved.exit_code == 0 and json.loads(approved.output) == {"wiped": 2}
    alone = {"in_request": False, "flask_request": None, "subject": "alice", "user_id": "alice", "tenant": None,
             "user_header": False, "remote_addr": None, "link": "http://tools.example/orders/7"}
    assert seen == [alone, alone]


def test_tool_discovery_call_runs_outside_any_request() -> None:
    seen: list[dict[str, Any]] = []
    app, discovery = build(seen)
    with app.app_context():
        tool = discovery.tools().get("where")
        context = discovery.make_context("mine", identity=Identity(subject="bob"), user_id="bob")
        outcome = discovery.call(tool, {"n": 3}, context)
    assert outcome.ok and outcome.value == {"n": 3}
    assert seen == [{"in_request": False, "flask_request": None, "subject": "bob", "user_id": "bob", "tenant": None,
                     "user_header": False, "remote_addr": None, "link": "http://tools.example/orders/7"}]


@pytest.mark.slow
def test_a_task_on_a_celery_worker_runs_outside_any_request(celery_side: CelerySide,  # noqa: F811
                                                             receiver: Receiver) -> None:  # noqa: F811
    celery_side.configure(**CREDENTIALS)
    app = celery_side.web()
    celery_side.worker()
    url = receiver.url()
    answer = app.test_client().post(
        "/opal/tools/where", json={"parameters": {"name": "c"}, "async_callback": {"url": url}},
        headers={"X-API-Key": CREDENTIALS["TD_API_KEY"], "X-Tenant-Key": CREDENTIALS["TD_EXPECT_TENANT"]},
        environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert answer.status_code == 202, answer.data
    [(_, body)] = receiver.wait(url)
    assert json.loads(body)["content"] == {"in_request": False, "method": "api_key", "tenant": True,
                                           "remote_addr": "10.0.0.9", "api_key_header": False}
    task = tasks_of(app).store.get(answer.get_json()["task_id"])
    assert task is not None and task.state == "completed"
