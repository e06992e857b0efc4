"""MCP tasks, in process: the 2026-07-28 ``io.modelcontextprotocol/tasks`` extension (``resultType:
"task"``, ``tasks/get``, ``tasks/update``, ``tasks/cancel``) and the 2025-11-25 experimental tasks
(``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``, ``execution.taskSupport``), their
shapes checked against the official SDK's 2025-11-25 types; questions a tool asks, before it runs
and while it runs as a task; and a task is its caller's only. (Across servers, and the official
conformance suite: tests/test_mcp_tasks_servers.py.)"""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from mcp_types import _v2025_11_25 as v2025

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.tasks.records import Task, TaskResult
from flask_tooldiscovery.tasks.runner import INTERRUPTED, tasks_of
from tests.apps.mcp_everything_app import create_app

MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
NAMED = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


@pytest.fixture(scope="module")
def app() -> Flask:
    return create_app(poll=50)


def modern(client: Any, method: str, params: dict | None = None, *, tasks: bool = True, elicitation: bool = True,
           token: str | None = None) -> tuple[int, dict]:
    """A 2026-07-28 request: (HTTP status, JSON-RPC body)."""
    caps: dict[str, Any] = {"elicitation": {}} if elicitation else {}
    if tasks:
        caps["extensions"] = {EXTENSION: {}}
    params = {**(params or {}), "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                          "io.modelcontextprotocol/clientCapabilities": caps}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method in NAMED and isinstance(params.get(NAMED[method]), str):
        headers["Mcp-Name"] = params[NAMED[method]]
    if token:
        headers["Authorization"] = f"Bearer {token}"
    r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers=headers)
    return r.status_code, r.get_json()


def legacy(client: Any, method: str, params: dict | None = None, token: str | None = None) -> dict:
    """A 2025-11-25 request (after an initialize the server keeps no trace of): its JSON-RPC body."""
    headers = {"MCP-Protocol-Version": "2025-11-25", **({"Authorization": f"Bearer {token}"} if token else {})}
    r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": method, "params": params or {}},
                    headers=headers)
    assert r.status_code == 200, r.text
    return r.get_json()


def until(client: Any, task_id: str, done: Any, era: str = MODERN, timeout: float = 30, **kw: Any) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        if era == MODERN:
            status, body = modern(client, "tasks/get", {"taskId": task_id}, **kw)
            assert status == 200, body
        else:
            body = legacy(client, "tasks/get", {"taskId": task_id}, **kw)
        result = body["result"]
        if done(result):
            return result
        assert time.monotonic() < deadline, f"task {task_id} stayed {result['status']}"
        time.sleep(0.05)


def ended(result: dict) -> bool:
    return result["status"] in ("completed", "failed", "cancelled")


# -- 2026-07-28: the extension ---------------------------------------------------------------------


def test_the_extension_is_advertised_and_a_call_becomes_a_task_read_to_its_end(app: Flask) -> None:
    c = app.test_client()
    status, body = modern(c, "server/discover")
    assert body["result"]["capabilities"]["extensions"] == {EXTENSION: {}}
    assert "tasks" not in body["result"]["capabilities"]
    status, body = modern(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "x"}})
    created = body["result"]
    assert status == 200 and created["resultType"] == "task" and created["status"] == "working"
    assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= set(created)
    assert not {"task", "result", "error", "ttl", "pollInterval", "requestState"} & set(created)
    assert created["ttlMs"] == 86_400_000 and created["pollIntervalMs"] == 50
    done = until(c, created["taskId"], ended)
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert done["result"]["content"] == [{"type": "text", "text": "Computed x in 0.3 s."}]
    assert done["result"]["isError"] is False
    # without the extension the same tool answers at once
    status, body = modern(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}, tasks=False)
    assert body["result"]["resultType"] == "complete" and "taskId" not in body["result"]


def test_tool_errors_complete_with_is_error_and_crashes_fail_with_an_error(app: Flask) -> None:
    c = app.test_client()
    _, body = modern(c, "tools/call", {"name": "failing_job", "arguments": {}})
    done = until(c, body["result"]["taskId"], ended)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "quota for this month" in done["result"]["content"][0]["text"]
    _, body = modern(c, "tools/call", {"name": "protocol_error_job", "arguments": {}})
    done = until(c, body["result"]["taskId"], ended)
    assert done["status"] == "failed" and "result" not in done
    assert done["error"]["code"] == -32603 and "bug" not in done["error"]["message"]  # nothing of the crash leaks


def test_cancel_acknowledges_and_the_task_says_cancelled(app: Flask) -> None:
    c = app.test_client()
    _, body = modern(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}})
    task_id = body["result"]["taskId"]
    status, body = modern(c, "tasks/cancel", {"taskId": task_id})
    assert status == 200 and body["result"] == {"resultType": "complete", "_meta": body["result"]["_meta"]}
    assert modern(c, "tasks/get", {"taskId": task_id})[1]["result"]["status"] == "cancelled"
    assert modern(c, "tasks/cancel", {"taskId": task_id})[1]["result"]["resultType"] == "complete"  # idempotent


def test_unknown_tasks_missing_capability_and_removed_methods(app: Flask) -> None:
    c = app.test_client()
    status, body = modern(c, "tasks/get", {"taskId": "no-such-task"})
    assert status == 400 and body["error"]["code"] == -32602
    for method, params in (("tasks/get", {"taskId": "t"}), ("tasks/update", {"taskId": "t", "inputResponses": {}}),
                           ("tasks/cancel", {"taskId": "t"})):
        status, body = modern(c, method, params, tasks=False)
        assert status == 400 and body["error"]["code"] == -32021, body
        assert body["error"]["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    status, body = modern(c, "tools/call", {"name": "failing_job", "arguments": {}}, tasks=False)  # required
    assert status == 400 and body["error"]["code"] == -32021
    for method in ("tasks/result", "tasks/list"):
        status, body = modern(c, method, {"taskId": "t"})
        assert status == 404 and body["error"]["code"] == -32601
    status, body = modern(c, "tasks/get", {"taskId": 12})
    assert status == 400 and body["error"]["code"] == -32602
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {
        "taskId": "a", "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                 "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}}}}},
               headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tasks/get", "Mcp-Name": "b"})
    assert r.status_code == 400 and r.get_json()["error"]["code"] == -32020  # Mcp-Name must name the task


def test_a_task_asks_its_caller_and_resumes_with_the_answer(app: Flask) -> None:
    c = app.test_client()
    _, body = modern(c, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}})
    task_id = body["result"]["taskId"]
    waiting = until(c, task_id, lambda r: r["status"] != "working")
    assert waiting["status"] == "input_required"
    (key, asked), = waiting["inputRequests"].items()
    assert asked["method"] == "elicitation/create" and asked["params"]["message"] == "Delete a.txt?"
    assert asked["params"]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    status, body = modern(c, "tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"confirm": "yes"}}}})
    assert status == 400 and body["error"]["code"] == -32602 and "does not fill its form" in body["error"]["message"]
    status, body = modern(c, "tasks/update", {"taskId": task_id, "inputResponses": "yes"})
    assert status == 400 and body["error"]["code"] == -32602
    status, body = modern(c, "tasks/update", {"taskId": task_id, "inputResponses": {
        "other": {"action": "accept"}, key: {"action": "accept", "content": {"confirm": True}}}})
    assert status == 200 and set(body["result"]) == {"resultType", "_meta"}
    done = until(c, task_id, ended)
    assert done["result"]["content"][0]["text"] == "Deleted a.txt."


def test_two_questions_at_once_can_be_answered_one_by_one(app: Flask) -> None:
    c = app.test_client()
    _, body = modern(c, "tools/call", {"name": "multi_input", "arguments": {}})
    task_id = body["result"]["taskId"]
    waiting = until(c, task_id, lambda r: len(r.get("inputRequests", {})) == 2)
    first, second = waiting["inputRequests"]
    modern(c, "tasks/update", {"taskId": task_id, "inputResponses": {first: {"action": "accept",
                                                                             "content": {"name": "Ada"}}}})
    half = modern(c, "tasks/get", {"taskId": task_id})[1]["result"]
    assert half["status"] == "input_required" and list(half["inputRequests"]) == [second]
    modern(c, "tasks/update", {"taskId": task_id, "inputResponses": {second: {"action": "decline"}}})
    assert until(c, task_id, ended)["result"]["content"][0]["text"] == "Ada said no."


def test_declared_questions_are_asked_before_the_task_is_created(app: Flask) -> None:
    c = app.test_client()
    status, body = modern(c, "tools/call", {"name": "test_tool_with_task", "arguments": {}}, elicitation=False)
    assert status == 400 and body["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    _, body = modern(c, "tools/call", {"name": "test_tool_with_task", "arguments": {}})
    first = body["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    assert first["inputRequests"]["user_name"]["params"]["message"] == "What is your name?"
    status, body = modern(c, "tools/call", {"name": "test_tool_with_task", "arguments": {},
                                            "inputResponses": {"user_name": {"action": "accept", "content": {}}}})
    assert status == 400 and body["error"]["code"] == -32602  # the form's required name is missing
    _, body = modern(c, "tools/call", {"name": "test_tool_with_task", "arguments": {}, "inputResponses": {
        "user_name": {"action": "accept", "content": {"name": "Alice"}}}})
    created = body["result"]
    assert created["resultType"] == "task" and "requestState" not in created and "inputRequests" not in created
    assert until(c, created["taskId"], ended)["result"]["content"][0]["text"] == "Hello, Alice!"


def test_a_question_waits_a_bounded_time_and_is_never_asked_with_a_zero_wait() -> None:
    c = create_app(poll=50, TOOLDISCOVERY_MCP_ELICITATION_TIMEOUT=0.5).test_client()
    _, body = modern(c, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "c"}})
    task_id = body["result"]["taskId"]
    assert until(c, task_id, lambda r: r["status"] != "working")["status"] == "input_required"
    done = until(c, task_id, ended)  # nobody answers
    assert done["result"]["isError"] is True and "No answer came within 0.5 seconds" in done["result"]["content"][0][
        "text"]
    c = create_app(poll=50, TOOLDISCOVERY_MCP_ELICITATION_TIMEOUT=0).test_client()
    _, body = modern(c, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "d"}})
    done = until(c, body["result"]["taskId"], ended)
    assert done["result"]["isError"] is True and "cannot do" in done["result"]["content"][0]["text"]


def test_a_call_that_is_not_a_task_asks_in_rounds_or_not_at_all() -> None:
    """Not a task, the question is an ``InputRequiredResult`` round; a client that cannot elicit is
    refused with -32021 naming elicitation, never asked."""
    c = create_app(poll=50, SECRET_KEY="rounds-test-key").test_client()
    call = {"name": "confirm_delete", "arguments": {"filename": "b"}}
    _, body = modern(c, "tools/call", call, tasks=False)
    asked = body["result"]
    assert asked["resultType"] == "input_required" and asked["requestState"]
    (key, request), = asked["inputRequests"].items()
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "Delete b?"
    _, body = modern(c, "tools/call", {**call, "requestState": asked["requestState"],
                                       "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}},
                     tasks=False)
    assert body["result"]["content"][0]["text"] == "Deleted b."
    status, body = modern(c, "tools/call", call, tasks=False, elicitation=False)
    assert status == 400 and body["error"]["code"] == -32021
    assert body["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_an_interrupted_run_is_a_failed_task_that_says_so(app: Flask) -> None:
    c = app.test_client()
    _, body = modern(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}})
    task_id = body["result"]["taskId"]
    store = tasks_of(app).store
    assert store.finish(task_id, "interrupted", TaskResult(status="interrupted", error=INTERRUPTED))
    done = modern(c, "tasks/get", {"taskId": task_id})[1]["result"]
    assert done["status"] == "failed" and done["error"]["data"] == {"taskId": task_id, "reason": "interrupted"}
    assert done["error"]["message"] == INTERRUPTED
    body = legacy(c, "tasks/result", {"taskId": task_id})
    assert body["error"]["code"] == -32603 and body["error"]["data"]["reason"] == "interrupted"


# -- 2025-11-25: the experimental tasks ------------------------------------------------------------


def test_legacy_capability_execution_and_task_lifecycle_in_the_sdk_types(app: Flask) -> None:
    c = app.test_client()
    init = legacy(c, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}})["result"]
    assert v2025.Tasks1.model_validate(init["capabilities"]["tasks"]).requests.tools.call == {}
    tools = {t["name"]: t for t in legacy(c, "tools/list")["result"]["tools"]}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    assert tools["failing_job"]["execution"] == {"taskSupport": "required"} and "execution" not in tools["greet"]
    created = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "y"},
                                       "task": {"ttl": 60000}})["result"]
    task = v2025.CreateTaskResult.model_validate(created).task
    assert task.status == "working" and task.poll_interval == 50 and "resultType" not in created
    assert task.ttl == 60000  # the ttl the client asked for, shorter than the server's
    got = v2025.GetTaskResult.model_validate(legacy(c, "tasks/get", {"taskId": task.task_id})["result"])
    assert got.task_id == task.task_id
    result = legacy(c, "tasks/result", {"taskId": task.task_id})["result"]  # waits for the end
    assert v2025.CallToolResult.model_validate(result).content[0].text == "Computed y in 0.3 s."
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task.task_id}
    assert legacy(c, "tasks/get", {"taskId": task.task_id})["result"]["status"] == "completed"
    body = legacy(c, "tasks/cancel", {"taskId": task.task_id})
    assert body["error"]["code"] == -32602 and "terminal status 'completed'" in body["error"]["message"]


def test_legacy_tool_errors_fail_and_cancel_answers_the_cancelled_task(app: Flask) -> None:
    c = app.test_client()
    created = legacy(c, "tools/call", {"name": "failing_job", "arguments": {}, "task": {}})["result"]["task"]
    result = legacy(c, "tasks/result", {"taskId": created["taskId"]})["result"]
    assert result["isError"] is True
    failed = legacy(c, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert failed["status"] == "failed" and "quota" in failed["statusMessage"]
    created = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}, "task": {}})["result"]
    cancelled = v2025.CancelTaskResult.model_validate(legacy(c, "tasks/cancel", {"taskId": created["task"]["taskId"]})[
        "result"])
    assert cancelled.status == "cancelled"


def test_legacy_refusals(app: Flask) -> None:
    c = app.test_client()
    body = legacy(c, "tools/call", {"name": "failing_job", "arguments": {}})
    assert body["error"]["code"] == -32601  # required: only as a task
    body = legacy(c, "tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {}})
    assert body["error"]["code"] == -32601  # forbidden: never a task
    body = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {}, "task": 5})
    assert body["error"]["code"] == -32602
    assert legacy(c, "tasks/update", {"taskId": "x", "inputResponses": {}})["error"]["code"] == -32601
    assert legacy(c, "tasks/get", {"taskId": "nope"})["error"]["code"] == -32602
    assert legacy(c, "tasks/list", {"cursor": "garbage"})["error"]["code"] == -32602
    # invalid arguments are answered at once, as without a task
    result = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": "x"}, "task": {}})["result"]
    assert result["isError"] is True and "task" not in result


def test_a_requested_ttl_is_kept_up_to_the_servers_own(app: Flask) -> None:
    c = app.test_client()
    longer = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": 10 ** 12}})
    assert longer["result"]["task"]["ttl"] == app.config.get("TOOLDISCOVERY_TASK_TTL", 86400) * 1000  # never more
    unset = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": None}})
    assert unset["result"]["task"]["ttl"] == longer["result"]["task"]["ttl"]
    short = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": 5000}})
    assert short["result"]["task"]["ttl"] == 5000
    for bad in (-1, "soon", True):
        body = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": bad}})
        assert body["error"]["code"] == -32602 and "ttl" in body["error"]["message"]


def test_tasks_result_waits_a_bounded_time() -> None:
    c = create_app(result_wait=0.3).test_client()
    created = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}, "task": {}})["result"]
    body = legacy(c, "tasks/result", {"taskId": created["task"]["taskId"]})
    assert body["error"]["code"] == -32603 and body["error"]["data"]["status"] == "working"
    legacy(c, "tasks/cancel", {"taskId": created["task"]["taskId"]})


# -- whose task --------------------------------------------------------------------------------


def two_callers_app() -> Flask:
    discovery = ToolDiscovery()

    @discovery.identity
    def who(req: Any) -> str | None:
        token = req.headers.get("Authorization", "").removeprefix("Bearer ")
        return {"alice-token": "alice", "bob-token": "bob"}.get(token)

    discovery.add_tool(lambda n: n, name="echo", task_support="optional")
    app = Flask("callers")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"])
    discovery.init_app(app)
    return app


def test_only_its_caller_reads_lists_answers_or_cancels_a_task() -> None:
    c = two_callers_app().test_client()
    _, body = modern(c, "tools/call", {"name": "echo", "arguments": {"n": 1}}, token="alice-token")
    task_id = body["result"]["taskId"]
    assert until(c, task_id, ended, token="alice-token")["result"]["content"][0]["text"] == "1"
    for method, params in (("tasks/get", {"taskId": task_id}), ("tasks/cancel", {"taskId": task_id}),
                           ("tasks/update", {"taskId": task_id, "inputResponses": {}})):
        status, body = modern(c, method, params, token="bob-token")
        assert status == 400 and body["error"]["code"] == -32602, body  # as if it did not exist
    assert legacy(c, "tasks/get", {"taskId": task_id}, token="bob-token")["error"]["code"] == -32602
    listed = legacy(c, "tasks/list", token="alice-token")["result"]
    assert task_id in [t.task_id for t in v2025.ListTasksResult.model_validate(listed).tasks]
    assert legacy(c, "tasks/list", token="bob-token")["result"] == {"tasks": []}


def test_callers_without_a_subject_read_by_id_and_list_nothing(app: Flask) -> None:
    c = app.test_client()
    created = legacy(c, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}})["result"]
    assert legacy(c, "tasks/get", {"taskId": created["task"]["taskId"]})["result"]["taskId"]
    assert legacy(c, "tasks/list")["result"] == {"tasks": []}


def test_a_task_of_another_dialect_is_not_an_mcp_task(app: Flask) -> None:
    store = tasks_of(app).store
    store.put(Task(id="opal-task-1", tool="greet", version="1.0.0", dialect="opal", caller=None, digest="d"))
    status, body = modern(app.test_client(), "tasks/get", {"taskId": "opal-task-1"})
    assert status == 400 and body["error"]["code"] == -32602
