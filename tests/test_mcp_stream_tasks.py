"""A streamed MCP call is a task: its first event names the task, and its outcome stays readable
with ``tasks/get`` after the stream broke, from another gunicorn server sharing the Redis store.

Handshake era (2025-11-25): the client going away is no cancellation, the call runs on and its
result is kept. 2026-07-28: closing the stream is the cancellation, and the record says so. A
worker killed with ``kill -9`` mid-call stops renewing its lease: the record then reads failed,
interrupted, on any server."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_mcp_stream import MODERN, MODERN_HEADERS, WAIT, Stream, call_body, marked, post
from .test_operating_server import app_servers, redis_url  # noqa: F401  (a redis-server of our own)

pytestmark = pytest.mark.slow

TASKS = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


@pytest.fixture
def servers(tmp_path: Path, redis_url: str) -> Iterator[Callable[..., str]]:  # noqa: F811
    with app_servers("tests.apps.stream_app:create_app", "/mcp", markers=str(tmp_path),
                     storage=redis_url + "/5", lease=1.0) as start:
        yield start


def first_message(stream: Stream) -> dict[str, Any]:
    stream.until(lambda line: line.startswith("data: "))
    return stream.messages()[0]


def task_get(base: str, task_id: str, headers: dict[str, str] | None = None,
             meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"taskId": task_id, **({"_meta": meta} if meta else {})}
    reply = post(base, {"jsonrpc": "2.0", "id": "get", "method": "tasks/get", "params": params}, headers)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert "result" in body, body
    return body["result"]  # type: ignore[no-any-return]


def until_status(read: Callable[[], dict[str, Any]], *wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while True:
        task = read()
        if task["status"] in wanted or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


def test_a_handshake_era_stream_that_breaks_leaves_its_result_readable_elsewhere(servers, tmp_path: Path) -> None:
    first, second = servers(1), servers(1)
    stream = Stream(first, call_body(1, "waits", {"name": "broken"}, progressToken=1))
    try:
        opened = first_message(stream)
        assert opened["method"] == "notifications/tasks/status"
        task_id = opened["params"]["taskId"]
        assert opened["params"]["status"] == "working"
        assert opened["params"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
        stream.until(lambda line: '"started"' in line)  # the tool runs
    finally:
        stream.close()  # the client goes away mid-call
    assert task_get(second, task_id)["status"] == "working"  # not cancelled: it runs on
    (tmp_path / "release-broken").touch()
    ended = until_status(lambda: task_get(second, task_id), "completed", "failed", "cancelled")
    assert ended["status"] == "completed", ended
    events = tmp_path / "events"
    assert not events.exists() or "cancelled broken" not in events.read_text()  # the tool was never cancelled
    result = post(second, {"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task_id}}).json()
    assert result["result"]["content"] == [{"type": "text", "text": "released broken"}]
    assert result["result"]["isError"] is False


def test_an_unbroken_stream_answers_as_before_and_its_record_agrees(servers) -> None:
    base = servers(1)
    stream = Stream(base, call_body(3, "steps", {"n": 2}, progressToken="p"))
    try:
        messages = stream.rest()
    finally:
        stream.close()
    assert [m.get("method") for m in messages[:1]] == ["notifications/tasks/status"]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "2 steps done"}]
    task = task_get(base, messages[0]["params"]["taskId"])
    assert task["status"] == "completed"


def test_a_2026_stream_closed_is_a_cancellation_and_the_record_says_so(servers, tmp_path: Path) -> None:
    first, second = servers(1), servers(1)
    meta = {**MODERN, **TASKS}
    headers = {**MODERN_HEADERS, "Mcp-Name": "sleeper"}
    stream = Stream(first, call_body(4, "sleeper", {"name": "modern"}, progressToken=4, **meta), headers)
    try:
        opened = first_message(stream)
        assert opened["method"] == "notifications/tasks/status"
        task_id = opened["params"]["taskId"]
        assert {"ttlMs", "pollIntervalMs", "createdAt"} <= set(opened["params"])  # the 2026-07-28 Task shape
        assert marked(tmp_path, "started modern")
    finally:
        stream.close()
    assert marked(tmp_path, "cancelled modern")
    get_headers = {**MODERN_HEADERS, "Mcp-Method": "tasks/get", "Mcp-Name": task_id}
    task = until_status(lambda: task_get(second, task_id, get_headers, meta), "cancelled")
    assert task["status"] == "cancelled", task


def test_a_2026_client_without_the_tasks_extension_gets_no_task_event(servers) -> None:
    base = servers(1)
    headers = {**MODERN_HEADERS}
    stream = Stream(base, call_body(5, "steps", {"n": 1}, progressToken="p", **MODERN), headers)
    try:
        messages = stream.rest()
    finally:
        stream.close()
    assert "notifications/tasks/status" not in [m.get("method") for m in messages]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "1 steps done"}]


def worker_pid(folder: Path, line: str) -> int:
    for entry in (folder / "events").read_text().splitlines():
        said, pid = entry.rsplit(" ", 1)
        if said == line:
            return int(pid)
    raise AssertionError(f"no {line!r} in the marker file")


def test_a_worker_killed_mid_stream_leaves_an_interrupted_record(servers, tmp_path: Path) -> None:
    first, second = servers(1), servers(1)
    stream = Stream(first, call_body(6, "sleeper", {"name": "killed"}, progressToken=6))
    try:
        task_id = first_message(stream)["params"]["taskId"]
        assert marked(tmp_path, "started killed")
        os.kill(worker_pid(tmp_path, "started killed"), signal.SIGKILL)
    finally:
        stream.close()
    task = until_status(lambda: task_get(second, task_id), "failed")
    assert task["status"] == "failed", task
    assert "interrupted" in task["statusMessage"]
    result = post(second, {"jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": {"taskId": task_id}}).json()
    assert result["error"]["data"] == {"taskId": task_id, "reason": "interrupted"}
