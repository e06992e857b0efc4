"""MCP progress, log lines and cancellation over SSE, stateless, under a real gunicorn.

The official client (``mcp`` 2.3.0) receives progress and log notifications from a 2-worker
gthread server in both protocol eras, and its cancellations stop async tools (its
``notifications/cancelled`` in the handshake era, its closing the stream in 2026-07-28); raw
HTTP shows which calls stream, the keep-alive comments, a sync tool stopping when its stream is
closed, and that another caller's ``notifications/cancelled`` cancels nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .test_operating_server import app_servers

pytestmark = pytest.mark.slow

SSE = "application/json, text/event-stream"
WAIT = 30.0  # an upper bound for things that happen at once; never reached when they work
SECRET = "stream-test-secret-0123456789abcdef"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``serve(workers, **app_args)``: the stream app under gunicorn gthread; its base URL."""
    with app_servers("tests.apps.stream_app:create_app", "/mcp", markers=str(tmp_path)) as start:
        yield start


def marked(folder: Path, line: str) -> bool:
    """Wait (at most :data:`WAIT`) until the app wrote ``line`` in its marker file."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        events = folder / "events"
        if events.exists() and any(e.rsplit(" ", 1)[0] == line for e in events.read_text().splitlines()):
            return True
        time.sleep(0.05)
    return False


async def eventually(check: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT):
        while not check():
            await anyio.sleep(0.01)


def token(sub: str) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")


# -- raw HTTP ------------------------------------------------------------------------------------


def call_body(id_: int | str, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


class Stream:
    """A POST whose answer is read line by line as it arrives (``http.client``, one connection)."""

    def __init__(self, base: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=WAIT)
        self.conn.request("POST", "/mcp", json.dumps(body), {
            "Content-Type": "application/json", "Accept": SSE, "MCP-Protocol-Version": "2025-11-25",
            **(headers or {})})
        self.response = self.conn.getresponse()
        self.lines: list[str] = []

    def until(self, found: Callable[[str], bool]) -> str:
        """Read lines until one satisfies ``found`` (the stream ending first fails the test)."""
        while True:
            raw = self.response.readline()
            assert raw, f"the stream ended before the line looked for; it said {self.lines}"
            line = raw.decode().rstrip("\r\n")
            self.lines.append(line)
            if found(line):
                return line

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line[len("data: "):]) for line in self.lines if line.startswith("data: ")]

    def rest(self) -> list[dict[str, Any]]:
        """Read to the end of the stream; every message."""
        while raw := self.response.readline():
            self.lines.append(raw.decode().rstrip("\r\n"))
        return self.messages()

    def close(self) -> None:
        self.conn.close()


def post(base: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> requests.Response:
    return requests.post(base + "/mcp", json=body, timeout=WAIT, headers={
        "Accept": SSE, "MCP-Protocol-Version": "2025-11-25", **(headers or {})})


MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}
MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "steps"}


def test_which_calls_stream(serve: Callable[..., str]) -> None:
    base = serve(2)
    # Handshake era: a tool taking a ToolContext that logs streams its lines (info and up) with no token.
    logged = post(base, call_body(1, "steps", {"n": 2}))
    assert logged.headers["Content-Type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in logged.text.splitlines() if line.startswith("data: ")]
    assert [e["params"]["data"] for e in events if e.get("method") == "notifications/message"] == [
        "step 1 done", "step 2 done"]
    assert not [e for e in events if e.get("method") == "notifications/progress"]  # no token, no progress
    assert events[-1]["result"]["content"][0]["text"] == "2 steps done"
    # 2026-07-28 without a log level: one JSON body.
    plain = post(base, call_body(1, "steps", {"n": 2}, **MODERN), MODERN_HEADERS)
    assert plain.headers["Content-Type"] == "application/json"
    assert plain.json()["result"]["content"][0]["text"] == "2 steps done"
    for headers, meta in (({}, {}), (MODERN_HEADERS, MODERN)):  # handshake era, then 2026-07-28
        streamed = post(base, call_body(2, "steps", {"n": 2}, progressToken="p", **meta), headers)
        assert streamed.headers["Content-Type"].startswith("text/event-stream")
        assert streamed.headers["Cache-Control"] == "no-cache" and streamed.headers["X-Accel-Buffering"] == "no"
        assert streamed.headers["X-Trace-Id"] and streamed.headers["X-Content-Type-Options"] == "nosniff"
        events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
        progress = [e["params"] for e in events if e.get("method") == "notifications/progress"]
        assert progress == [{"progressToken": "p", "progress": 1, "total": 2, "message": "step 1 of 2"},
                            {"progressToken": "p", "progress": 2, "total": 2, "message": "step 2 of 2"}]
        assert events[-1]["id"] == 2 and events[-1]["result"]["content"][0]["text"] == "2 steps done"
        if meta:  # 2026-07-28: log lines only to requests that name a level
            assert not [e for e in events if e.get("method") == "notifications/message"]
            assert events[-1]["result"]["resultType"] == "complete"
    # Accepting JSON only: one JSON body even with a progress token.
    only_json = post(base, call_body(3, "steps", {"n": 1}, progressToken="p"), {"Accept": "application/json"})
    assert only_json.headers["Content-Type"] == "application/json" and "result" in only_json.json()
    # Errors before the tool starts stay plain JSON-RPC errors.
    unknown = post(base, call_body(4, "nope", {}, progressToken="p"))
    assert unknown.headers["Content-Type"] == "application/json"
    assert unknown.json()["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    bad = post(base, call_body(5, "steps", {"n": 1}, progressToken={"not": "a token"}))
    assert bad.headers["Content-Type"] == "application/json" and bad.json()["error"]["code"] == -32602
    level = post(base, {"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel", "params": {"level": "loud"}})
    assert level.json()["error"]["code"] == -32602
    assert post(base, {"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel",
                       "params": {"level": "debug"}}).json()["result"] == {}


def test_keep_alive_comments_while_the_tool_is_silent(serve: Callable[..., str], tmp_path: Path) -> None:
    base = serve(1, keepalive=0.1)
    stream = Stream(base, call_body(1, "waits", {"name": "quiet"}))  # long_running: streams without a token
    try:
        assert stream.response.getheader("Content-Type", "").startswith("text/event-stream")
        stream.until(lambda line: line == ": keep-alive")
        stream.until(lambda line: line == ": keep-alive")
        (tmp_path / "release-quiet").touch()
        messages = stream.rest()
    finally:
        stream.close()
    assert messages[-1]["result"]["content"][0]["text"] == "released quiet"


def test_a_sync_tool_sees_cancelled_when_the_client_closes_the_stream(serve: Callable[..., str],
                                                                      tmp_path: Path) -> None:
    """2026-07-28: closing the stream is the cancellation (before it, the call runs on as a task:
    tests/test_mcp_stream_tasks.py)."""
    base = serve(2)
    modern = {**MODERN_HEADERS, "Mcp-Name": "waits"}
    stream = Stream(base, call_body(1, "waits", {"name": "closed"}, progressToken=1, **MODERN), modern)
    stream.until(lambda line: '"started"' in line)
    stream.close()
    assert marked(tmp_path, "cancelled closed")


def test_another_caller_cannot_cancel_your_call(serve: Callable[..., str], tmp_path: Path) -> None:
    base = serve(1, jwt_secret=SECRET)
    alice, bob = ({"Authorization": f"Bearer {token(who)}"} for who in ("alice", "bob"))
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "x"}}
    stream = Stream(base, call_body(7, "waits", {"name": "mine"}, progressToken="t"), alice)
    try:
        stream.until(lambda line: '"started"' in line)
        assert post(base, cancel, bob).status_code == 202  # bob's request 7 is not alice's
        (tmp_path / "release-mine").touch()
        assert stream.rest()[-1]["result"]["content"][0]["text"] == "released mine"
    finally:
        stream.close()
    stream = Stream(base, call_body(7, "waits", {"name": "again"}, progressToken="t"), alice)
    try:
        stream.until(lambda line: '"started"' in line)
        assert post(base, cancel, alice).status_code == 202
        assert marked(tmp_path, "cancelled again")
        assert not [m for m in stream.rest() if "result" in m]  # a cancelled request gets no response
    finally:
        stream.close()
    assert "cancelled mine" not in (tmp_path / "events").read_text()


def test_a_plain_json_call_is_cancelled_by_notification_too(serve: Callable[..., str], tmp_path: Path) -> None:
    base = serve(1)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(post, base, call_body("plain-1", "sleeper", {"name": "plain"}),
                             {"Accept": "application/json"})
        assert marked(tmp_path, "started plain")
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "plain-1"}}
        assert post(base, cancel).status_code == 202
        assert marked(tmp_path, "cancelled plain")
        reply = answer.result(WAIT)
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json()["result"] == {"content": [{"type": "text", "text": "The call was cancelled."}], "isError": True}


# -- the official client -------------------------------------------------------------------------


def recording_client(seen: list[tuple[str, str]]) -> httpx2.AsyncClient:
    """An HTTP client for the SDK that records each POST's JSON-RPC method and answer's type."""

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            method = json.loads(response.request.content).get("method", "")
            seen.append((method, response.headers.get("content-type", "")))

    return httpx2.AsyncClient(timeout=httpx2.Timeout(WAIT, read=300), event_hooks={"response": [record]})


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # the 2025-11-25 handshake, then 2026-07-28
def test_the_official_client_receives_progress_and_logs(serve: Callable[..., str], mode: str) -> None:
    url = serve(2) + "/mcp"
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, Any]] = []
    seen: list[tuple[str, str]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    async def go() -> tuple[Any, Any, list[tuple[str, Any]]]:
        async with recording_client(seen) as http, Client(
                streamable_http_client(url, http_client=http), mode=mode, logging_callback=on_log,
                log_level="info" if mode == "auto" else None) as client:
            if mode == "legacy":
                await client.set_logging_level("info")  # answered; a stateless server keeps nothing
            streamed = await client.call_tool("steps", {"n": 3}, progress_callback=on_progress)
            await eventually(lambda: len(progress) == 3 and len(logs) == 3)
            first = list(logs)
            plain = await client.call_tool("steps", {"n": 1})
        return streamed, plain, first

    streamed, plain, logs = asyncio.run(go())
    assert progress == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert logs == [("info", "step 1 done"), ("info", "step 2 done"), ("info", "step 3 done")]  # no debug
    assert streamed.is_error is False and streamed.content[0].text == "3 steps done"
    assert plain.is_error is False and plain.content[0].text == "1 steps done"
    calls = [kind for method, kind in seen if method == "tools/call"]
    assert calls[0].startswith("text/event-stream")
    # A 2026-07-28 client with log_level asks for log lines on every request: all its calls stream; in
    # the handshake era a call streams once its tool logs (info and up), progress token or not.
    assert calls[1].startswith("text/event-stream")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_cancels_an_async_tool(serve: Callable[..., str], tmp_path: Path, mode: str) -> None:
    """Handshake era: the client's ``notifications/cancelled`` reaches the one worker (its POST stream
    stays open); 2026-07-28: the client closes the stream. Either way the tool sees CancelledError
    and its call slot (the only one) is free again."""
    url = serve(1, limit=1) + "/mcp"
    name = f"sdk-{mode}"

    async def go() -> tuple[Any, Any]:
        started = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async with Client(streamable_http_client(url), mode=mode) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.call_tool("sleeper", {"name": name}, progress_callback=on_progress))
                with anyio.fail_after(WAIT):
                    await started.wait()
                busy = await client.call_tool("steps", {"n": 1}, progress_callback=on_progress)
                tg.cancel_scope.cancel()
            assert await anyio.to_thread.run_sync(marked, tmp_path, f"cancelled {name}")
            with anyio.fail_after(WAIT):  # the slot is freed as the cancelled call ends
                while (after := await client.call_tool("steps", {"n": 1})).is_error:
                    await anyio.sleep(0.05)
        return busy, after

    busy, after = asyncio.run(go())
    assert busy.is_error is True and "Retry in" in busy.content[0].text  # the one slot was taken
    assert after.content[0].text == "1 steps done"
