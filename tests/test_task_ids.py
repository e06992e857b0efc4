"""A task id is looked up only when it has the form of the ids the server issues: anything else
(another record's key beside a real task's, ``../x``, empty, 10 kB, binary) is an unknown task (the
explorer's 404, MCP's -32602 for ``tasks/get``, ``tasks/result`` and ``tasks/cancel``), never a
500 or -32603. Over real HTTP with a real Redis holding the task records."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import requests
from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery

from .conftest import live_server
from .test_mcp_tasks import MODERN, legacy, modern
from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)

pytestmark = pytest.mark.slow
WAIT = 30


class Http:
    """What the MCP test helpers need of a client (``post``, ``get_json``), over real HTTP."""

    def __init__(self, base: str) -> None:
        self.base = base

    def post(self, path: str, json: Any, headers: dict[str, str]) -> requests.Response:
        answer = requests.post(self.base + path, json=json, headers=headers, timeout=WAIT)
        answer.get_json = answer.json  # type: ignore[attr-defined]
        return answer


def make_app(storage: str) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(task_support="optional")
    def slow(ctx: ToolContext, seconds: float = 30.0) -> str:
        """Run until told to stop (or ``seconds`` pass)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not ctx.cancelled:
            time.sleep(0.05)
        return "done"

    app = Flask("task_ids")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp", "explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, TOOLDISCOVERY_STATE_STORAGE_URI=storage,
                      SECRET_KEY="s3cret")
    discovery.init_app(app)
    return app


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[tuple[str, str]]:  # noqa: F811
    """(base URL, the id of an MCP task running there: its record, run count and lease are in Redis)."""
    with live_server(make_app(redis_url + "/4")) as base:
        status, body = modern(Http(base), "tools/call", {"name": "slow", "arguments": {"seconds": 30}})
        assert status == 200 and body["result"]["resultType"] == "task", body
        task_id = body["result"]["taskId"]
        import redis

        keys = redis.Redis.from_url(redis_url + "/4")
        deadline = time.monotonic() + WAIT
        while not (keys.exists(f"flask-tooldiscovery:task:{task_id}:runs")
                   and keys.exists(f"flask-tooldiscovery:task:{task_id}:lease")):
            assert time.monotonic() < deadline, "the task never started"
            time.sleep(0.05)
        yield base, task_id
        modern(Http(base), "tasks/cancel", {"taskId": task_id})


def not_issued(task_id: str) -> list[str]:
    """Ids a client may send that the server never issued, beside the real ``task_id``."""
    return [f"{task_id}:runs", f"{task_id}:lease", f"{task_id}:cancel", "caller:", "outbox", "outbox:jobs",
            task_id.upper(), f"{task_id}\n", f" {task_id}", "../x", "..x", "x" * 10_000, "no-such-task"]


def test_the_real_id_is_found_and_every_other_is_an_unknown_task_at_mcp(server: tuple[str, str]) -> None:
    base, task_id = server
    client = Http(base)
    status, body = modern(client, "tasks/get", {"taskId": task_id})
    assert status == 200 and body["result"]["status"] == "working", body
    assert legacy(client, "tasks/get", {"taskId": task_id})["result"]["status"] == "working"
    for bad in not_issued(task_id):
        for method in ("tasks/get", "tasks/cancel"):
            if bad.isprintable() and bad == bad.strip() and len(bad) < 1000:  # carried in the Mcp-Name header too
                status, body = modern(client, method, {"taskId": bad})
                assert status == 400 and body["error"]["code"] == -32602, (method, bad[:80], body)
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            body = legacy(client, method, {"taskId": bad})
            assert body["error"]["code"] == -32602, (method, bad[:80], body)
    for bad in ("", "\x00\x01", "\ud800", "\udcff" * 3, "\u00ff\u0000"):  # empty, control characters, lone surrogates
        raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": bad}})
        answer = requests.post(f"{base}/mcp", data=raw, timeout=WAIT, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25"})
        assert answer.status_code == 200 and answer.json()["error"]["code"] == -32602, (repr(bad), answer.text)
    assert legacy(client, "tasks/get", {"taskId": task_id})["result"]["status"] == "working"  # nothing touched it


def test_the_explorer_answers_404_for_every_id_it_did_not_issue(server: tuple[str, str]) -> None:
    base, task_id = server
    paths = [quote(bad, safe="") for bad in not_issued(task_id)] + ["%00%FF", "%FF%FE%FD", "%C0%AF", "%2e%2e%2fx"]
    for path in paths:
        for method, route in (("GET", f"/explorer/tasks/{path}"), ("POST", f"/explorer/tasks/{path}/cancel")):
            answer = requests.request(method, base + route, timeout=WAIT)
            assert answer.status_code == 404, (method, path[:80], answer.status_code, answer.text[:300])
            assert "Traceback" not in answer.text
            if "2f" not in path.lower():  # a slash: no route of the explorer's, the app's own 404
                assert answer.headers["Content-Type"] == "application/json", answer.headers
    assert requests.get(f"{base}/explorer/tasks/", timeout=WAIT).status_code == 404  # empty
    # the real one is found (it is MCP's task, so not the explorer's: unknown there too, as a 404)
    assert requests.get(f"{base}/explorer/tasks/{task_id}", timeout=WAIT).status_code == 404


def test_an_unknown_task_id_is_never_echoed_back(server: tuple[str, str]) -> None:
    """A made-up id (10 kB, binary, another record's key) is not repeated in the error: MCP's
    -32602 (both eras, every method naming a task) and the explorer's 404 stay short; the real id is
    named back, as the SDKs do."""
    base, task_id = server
    client = Http(base)
    made_up = ["Q" * 10_000, "\x00\x01\x02" * 50, f"{task_id}:lease", "Z" * 199]
    for bad in made_up:
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            body = legacy(client, method, {"taskId": bad})
            assert body["error"]["code"] == -32602, (method, body)
            assert bad not in json.dumps(body) and bad not in str(body), (method, json.dumps(body)[:300])
            assert len(json.dumps(body)) < 500, (method, json.dumps(body)[:300])
        for method in ("tasks/get", "tasks/cancel"):
            raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
                "taskId": bad, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                         "io.modelcontextprotocol/clientCapabilities": {
                                             "extensions": {"io.modelcontextprotocol/tasks": {}}}}}})
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                       "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
            if bad.isprintable():
                headers["Mcp-Name"] = bad
            answer = requests.post(f"{base}/mcp", data=raw, headers=headers, timeout=WAIT)
            assert answer.status_code == 400 and answer.json()["error"]["code"] in (-32602, -32020), answer.text[:300]
            assert bad not in answer.text and len(answer.text) < 500, (method, answer.text[:300])
        answer = requests.get(f"{base}/explorer/tasks/{quote(bad, safe='')}", timeout=WAIT)
        assert answer.status_code == 404 and bad not in answer.text and len(answer.text) < 500, answer.text[:300]
    missing = "00000000-0000-4000-8000-000000000000"  # the form of an issued id, no such task: named back
    body = legacy(client, "tasks/get", {"taskId": missing})
    assert body["error"]["code"] == -32602 and body["error"]["data"] == {"taskId": missing}, body
