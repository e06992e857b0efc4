"""The explorer's live calls over real HTTP: ``POST /explorer/tools/<name>/call`` with
``Accept: text/event-stream`` answers Server-Sent Events (progress, log lines, keep-alive
comments, then the plain call's very JSON body, or the refusal it would have answered), keeps the
plain call's JSON answers for what is refused before the stream opens, runs inside the auth hook,
and keeps each call as a task: the first event names it, the client going away leaves it running
(its answer kept, read with ``GET /explorer/tasks/<id>``) and ``POST /explorer/tasks/<id>/cancel``
stops it. The tools block on events the tests release."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from flask_tooldiscovery import ToolContext, ToolDiscovery
from flask_tooldiscovery.extension import STATE_KEY

from .conftest import live_server

WAIT = 30  # seconds a tool waits for the test at most, so that a failing test never hangs
SSE = {"Accept": "text/event-stream"}
CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="nobody")


class Tools:
    def __init__(self) -> None:
        self.gate = threading.Event()
        self.saw_cancel = threading.Event()
        self.ran: list[str] = []
        self.discovery = d = ToolDiscovery()

        @d.tool
        def steps(n: int = 2, wait: bool = False, ctx: ToolContext = None) -> dict:
            """Report n steps, then answer."""
            for i in range(n):
                ctx.report_progress(i + 1, n, f"step {i + 1}")
            ctx.report_progress(n + 1)  # no total, no message
            ctx.log("info", "line one\nline two")
            if wait:
                self.gate.wait(WAIT)
            return {"n": n, "caller": CALLER.get()}

        @d.tool
        def hang(ctx: ToolContext = None) -> str:
            """Wait until cancelled."""
            woke = threading.Event()
            ctx.on_cancel(woke.set)
            ctx.report_progress(1, 2)
            woke.wait(WAIT)
            if ctx.cancelled:
                self.saw_cancel.set()
            return "not cancelled"

        @d.tool(requires_approval=True)
        def wipe(target: str) -> str:
            """Needs a person's approval."""
            self.ran.append(target)
            return f"wiped {target}"

    def app(self, **config):
        from flask import Flask

        app = Flask("streamapp")
        app.config.update({"TOOLDISCOVERY_DIALECTS": ["explorer"], "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                           "SECRET_KEY": "s3cret", **config})
        self.discovery.init_app(app)
        return app


def events(response: requests.Response) -> Iterator[tuple[str, str]]:
    """(event name, data) of each event as it arrives; comments as ("comment", text)."""
    name, data = "message", []
    for line in response.iter_lines(chunk_size=1, decode_unicode=True):
        if line.startswith(":"):
            yield "comment", line[1:].strip()
        elif line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and data:
            yield name, "\n".join(data)
            name, data = "message", []


def call(base: str, tool: str, body, headers=None, **kwargs) -> requests.Response:
    return requests.post(f"{base}/explorer/tools/{tool}/call", json=body, headers={**SSE, **(headers or {})},
                         stream=True, timeout=WAIT, **kwargs)


def test_events_then_exactly_the_plain_calls_body() -> None:
    tools = Tools()
    with live_server(tools.app()) as base:
        trace = {"X-Trace-Id": "trace-1"}
        r = call(base, "steps", {"n": 2}, trace)
        assert r.status_code == 200
        assert r.headers["Content-Type"] == "text/event-stream; charset=utf-8"
        assert r.headers["Cache-Control"] == "no-cache" and r.headers["X-Trace-Id"] == "trace-1"
        got = list(events(r))
        plain = requests.post(f"{base}/explorer/tools/steps/call", json={"n": 2}, headers=trace, timeout=WAIT)
    assert got[0] == ("comment", "call started")
    name, task = got[1][0], json.loads(got[1][1])
    assert (name, set(task)) == ("task", {"id", "state"}) and task["state"] == "working"
    assert [(name, json.loads(data)) for name, data in got[2:-1]] == [
        ("progress", {"progress": 1, "total": 2, "message": "step 1"}),
        ("progress", {"progress": 2, "total": 2, "message": "step 2"}),
        ("progress", {"progress": 3}),
        ("log", {"level": "info", "message": "line one\nline two"})]
    assert got[-1] == ("result", plain.text)  # byte for byte
    assert json.loads(plain.text)["structuredContent"] == {"n": 2, "caller": "nobody"}


def test_each_event_arrives_while_the_tool_still_runs() -> None:
    tools = Tools()
    app = tools.app(TOOLDISCOVERY_STREAM_KEEPALIVE=0.05)
    with live_server(app) as base:
        stream = events(call(base, "steps", {"n": 1, "wait": True}))
        seen = []
        for name, data in stream:
            seen.append(name)
            if name == "comment" and data == "keep-alive":
                break  # silence while the tool waits: keep-alive comments
        assert seen[:5] == ["comment", "task", "progress", "progress", "log"] and not tools.gate.is_set()
        tools.gate.set()
        rest = [name for name, _ in stream]
    assert rest[-1] == "result" and set(rest[:-1]) <= {"comment"}


def test_closing_the_stream_leaves_the_task_running_and_cancel_stops_it() -> None:
    tools = Tools()
    app = tools.app(TOOLDISCOVERY_STREAM_KEEPALIVE=0.05)
    with live_server(app) as base:
        r = call(base, "hang", {})
        task_id = None
        for name, data in events(r):
            if name == "task":
                task_id = json.loads(data)["id"]
            if name == "progress":
                break
        r.close()  # the client goes away: the call is a task, it runs on
        assert task_id is not None
        time.sleep(0.5)  # several keep-alives: the server has seen the connection closed
        assert not tools.saw_cancel.is_set()
        read = requests.get(f"{base}/explorer/tasks/{task_id}", timeout=WAIT)
        assert read.status_code == 200 and read.json()["state"] == "working" and read.json()["tool"] == "hang"
        stop = requests.post(f"{base}/explorer/tasks/{task_id}/cancel", timeout=WAIT)
        assert stop.status_code == 202 and stop.json()["stopping"] is True
        assert tools.saw_cancel.wait(WAIT), "the tool never saw the cancellation"
        deadline = time.monotonic() + WAIT
        while (ended := requests.get(f"{base}/explorer/tasks/{task_id}", timeout=WAIT).json())["state"] == "working" \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        # hang answers even once stopped: the record keeps what the tool did, not what was asked
        assert ended["state"] == "completed" and ended["result"]["body"]["content"][0]["text"] == "not cancelled"
        again = requests.post(f"{base}/explorer/tasks/{task_id}/cancel", timeout=WAIT)
        assert again.status_code == 200 and again.json()["stopping"] is False  # nothing left to stop


def test_a_task_keeps_exactly_the_plain_calls_answer_and_is_the_callers_own() -> None:
    tools = Tools()
    with live_server(tools.app()) as base:
        got = list(events(call(base, "steps", {"n": 1})))
        task_id = json.loads(next(data for name, data in got if name == "task"))["id"]
        result = json.loads(got[-1][1])
        read = requests.get(f"{base}/explorer/tasks/{task_id}", timeout=WAIT).json()
        assert read["state"] == "completed" and read["result"] == {"status": 200, "body": result}
        assert requests.get(f"{base}/explorer/tasks/no-such-task", timeout=WAIT).status_code == 404
        assert requests.get(f"{base}/explorer/tasks/{'x' * 5000}", timeout=WAIT).status_code == 404
        # Anonymous callers cannot be told apart: the list names none of them (the page keeps its ids).
        assert requests.get(f"{base}/explorer/tasks", timeout=WAIT).json() == {"tasks": []}
        invalid = list(events(call(base, "steps", {"n": "two"})))
        bad_id = json.loads(next(data for name, data in invalid if name == "task"))["id"]
        bad = requests.get(f"{base}/explorer/tasks/{bad_id}", timeout=WAIT).json()
        assert bad["state"] == "failed" and bad["result"]["status"] == 400
        assert bad["result"]["body"] == json.loads(invalid[-1][1])


def test_task_routes_exist_only_where_execution_is_allowed() -> None:
    tools = Tools()
    with live_server(tools.app(TOOLDISCOVERY_ALLOW_EXECUTE=False)) as base:
        assert requests.get(f"{base}/explorer/tasks", timeout=WAIT).status_code == 404


def test_what_is_refused_before_the_stream_is_the_plain_json_answer() -> None:
    tools = Tools()
    with live_server(tools.app()) as base:
        for tool, body, status in (("nope", "{}", 404), ("steps", "{bad", 400)):
            r = requests.post(f"{base}/explorer/tools/{tool}/call", data=body, timeout=WAIT,
                              headers={**SSE, "Content-Type": "application/json"})
            assert r.status_code == status and r.headers["Content-Type"] == "application/json"
            assert "error" in r.json()
        # Invalid arguments are the call's outcome: the plain call's 400 body, as the result.
        r = call(base, "steps", {"n": "two"}, {"X-Trace-Id": "t2"})
        name, data = list(events(r))[-1]
        plain = requests.post(f"{base}/explorer/tools/steps/call", json={"n": "two"}, headers={"X-Trace-Id": "t2"},
                              timeout=WAIT)
        assert plain.status_code == 400 and (name, data) == ("result", plain.text)
        assert json.loads(data)["errors"][0]["path"] == "/n"
    disabled = Tools().app(TOOLDISCOVERY_ALLOW_EXECUTE=False)
    with live_server(disabled) as base:
        r = call(base, "steps", {})
        assert r.status_code == 403 and r.json() == {"error": "Tool execution is disabled."}


def test_refusals_inside_the_pipeline_are_the_last_event() -> None:
    tools = Tools()
    app = tools.app(TOOLDISCOVERY_MAX_CONCURRENT_CALLS=1)
    with live_server(app) as base:
        with app.extensions[STATE_KEY].slots.hold():
            busy = list(events(call(base, "steps", {})))
            plain = requests.post(f"{base}/explorer/tools/steps/call", json={}, timeout=WAIT)
        name, data = busy[-1]
        error = json.loads(data)
        assert name == "error" and error["status"] == plain.status_code == 503
        assert error["body"] == plain.json() and error["headers"]["Retry-After"] == plain.headers["Retry-After"]
        # A call a person must approve: 428 with the prompt and the sealed state, nothing run...
        name, data = list(events(call(base, "wipe", {"target": "disk"})))[-1]
        error = json.loads(data)
        assert name == "error" and error["status"] == 428 and tools.ran == []
        assert error["body"]["code"] == "approval_required" and "disk" in error["body"]["prompt"]
        # ... then the same call with the state sent back runs, once.
        approved = {"X-Tool-Approval": error["body"]["approval_state"]}
        name, data = list(events(call(base, "wipe", {"target": "disk"}, approved)))[-1]
        assert name == "result" and json.loads(data)["content"][0]["text"] == "wiped disk" and tools.ran == ["disk"]
        name, data = list(events(call(base, "wipe", {"target": "other"}, approved)))[-1]
        error = json.loads(data)
        assert name == "error" and error["status"] == 400 and error["body"]["code"] == "invalid_approval"
        assert tools.ran == ["disk"]


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "application/json, text/event-stream",
                                    "text/event-stream;q=0.5, application/json"])
def test_json_unless_events_are_preferred(accept) -> None:
    tools = Tools()
    with live_server(tools.app()) as base:
        headers = {"Accept": accept} if accept else {}
        r = requests.post(f"{base}/explorer/tools/steps/call", json={}, headers=headers, timeout=WAIT)
        assert r.headers["Content-Type"] == "application/json" and r.json()["isError"] is False
        r = requests.post(f"{base}/explorer/tools/steps/call", json={},
                          headers={"Accept": "text/event-stream, application/json;q=0.9"}, timeout=WAIT)
        assert r.headers["Content-Type"].startswith("text/event-stream")


def test_a_refusal_inside_the_hook_is_answered_after_the_hook_exits() -> None:
    """A body the call refuses (400) is answered once the hook's manager has exited, even when its
    exit takes a while: the client never sees the answer of a call whose hook still runs."""
    tools = Tools()
    seen: list[str] = []

    @contextlib.asynccontextmanager
    async def slow_exit(request):
        seen.append("in")
        yield
        await asyncio.sleep(0.3)
        seen.append("out")

    tools.discovery.auth_hook(slow_exit)
    with live_server(tools.app()) as base:
        r = requests.post(f"{base}/explorer/tools/steps/call", data="{bad", timeout=WAIT,
                          headers={**SSE, "Content-Type": "application/json"})
        assert r.status_code == 400 and seen == ["in", "out"]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_the_stream_runs_inside_the_auth_hook(flavour) -> None:
    """As the plain call: 401 before the body's 400, the body read and the tool run inside the
    hook's manager (which sees what the hook set), its exit before the stream ends."""
    tools = Tools()
    seen: list[str] = []

    def admit(request) -> None:
        seen.append("hook")
        if request.headers.get("Authorization") != "Bearer good":
            raise PermissionError("bad token")

    if flavour == "sync":
        @contextlib.contextmanager
        def guard(request):
            admit(request)
            token = CALLER.set("alice")
            seen.append("in")
            yield
            seen.append("out")
            CALLER.reset(token)
    else:
        @contextlib.asynccontextmanager
        async def guard(request):
            await asyncio.sleep(0)
            admit(request)
            CALLER.set("alice")
            seen.append("in")
            yield
            seen.append("out")

    tools.discovery.auth_hook(guard)
    with live_server(tools.app()) as base:
        bad = requests.post(f"{base}/explorer/tools/steps/call", data="{bad", timeout=WAIT,
                            headers={**SSE, "Content-Type": "application/json"})
        assert bad.status_code == 401 and bad.json() == {"error": "Unauthorized"}
        assert bad.headers["WWW-Authenticate"] == 'Bearer realm="explorer"' and seen == ["hook"]
        good = {"Authorization": "Bearer good"}
        seen.clear()
        r = requests.post(f"{base}/explorer/tools/steps/call", data="{bad", timeout=WAIT,
                          headers={**SSE, **good, "Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"].startswith("Invalid JSON") and seen == ["hook", "in", "out"]
        seen.clear()
        got = list(events(call(base, "steps", {"n": 1}, good)))
        assert [name for name, _ in got] == ["comment", "task", "progress", "progress", "log", "result"]
        assert json.loads(got[-1][1])["structuredContent"] == {"n": 1, "caller": "alice"}
        assert seen == ["hook", "in", "out"]


@pytest.mark.slow
@pytest.mark.parametrize("worker_class", ["gthread", "sync"])
def test_under_gunicorn_events_come_live_leaving_keeps_the_task_and_stop_cancels(tmp_path, worker_class) -> None:
    from .test_deploy import stop
    from .test_operating_server import start

    base, proc = start(f"tests.apps.explorer_live_app:create_app(markers={str(tmp_path)!r})",
                       worker_class=worker_class)
    try:
        # The progress event arrives while the tool still waits for the release file...
        stream = events(call(base, "slow", {}))
        assert [next(stream)[0] for _ in range(4)] == ["comment", "task", "progress", "log"]
        (tmp_path / "release").touch()
        name, data = [item for item in stream if item[0] != "comment"][-1]
        assert name == "result" and json.loads(data)["content"][0]["text"] == "released"
        # ... a client that goes away leaves the call running as a task, and Stop cancels it.
        (tmp_path / "release").unlink()
        r = call(base, "slow", {})
        again = events(r)
        task_id = next(json.loads(data)["id"] for name, data in again if name == "task")
        assert next(item for item in again if item[0] == "progress")
        r.close()
        events_file = tmp_path / "events"
        time.sleep(0.5)
        assert not events_file.exists()
        assert requests.get(f"{base}/explorer/tasks/{task_id}", timeout=WAIT).json()["state"] == "working"
        assert requests.post(f"{base}/explorer/tasks/{task_id}/cancel", timeout=WAIT).status_code == 202
        deadline = time.monotonic() + WAIT
        while not (events_file.exists() and events_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert events_file.read_text() == "cancelled\n"
    finally:
        stop(proc)
