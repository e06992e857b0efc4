"""A tool that asks its caller twice by elicitation and once by sampling, run by the official ``mcp``
client (PyPI, both eras) against gunicorn with two workers sharing a real Redis: 2026-07-28 through
``InputRequiredResult`` rounds (each retry may reach either worker: the sealed state carries the
answers), 2025-11-25 through the call's SSE stream (the client POSTs each answer as a request of its
own, which the rendezvous hands to the worker holding the stream). A 2025-11-25 task's question goes
out on the stream of its ``tasks/result``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from .test_deploy import stop
from .test_mcp_tasks_servers import legacy_sdk  # noqa: F401  (the official mcp 1.30.0, 2025-11-25 tasks)
from .test_operating_server import redis_url, start  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(redis_url) -> Iterator[str]:  # noqa: F811
    base, proc = start(f"tests.apps.asking_app:create_app(storage={redis_url + '/5'!r})", workers=2, threads=8,
                       ready="/mcp")
    try:
        yield base
    finally:
        stop(proc)


def run_trip(base: str, mode: str, *, sampling: bool = True) -> tuple[Any, list[str], list[str]]:
    from mcp import Client
    from mcp_types import CreateMessageResult, ElicitResult, TextContent

    asked: list[str] = []
    logs: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        schema = params.requested_schema
        answer = {"name": "Ada"} if "name" in schema["properties"] else {"color": "red"}
        return ElicitResult(action="accept", content=answer)

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Pack light"),
                                   model="test-model", stop_reason="endTurn")

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def go() -> Any:
        async with Client(f"{base}/mcp", mode=mode, elicitation_callback=elicit, logging_callback=on_log,
                          sampling_callback=sample if sampling else None) as client:
            return await client.call_tool("plan_trip", {"days": 4})

    return asyncio.run(go()), asked, logs


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_official_client_answers_two_elicitations_and_a_sampling(server: str, mode: str) -> None:
    for _ in range(3):  # answers land on either worker
        result, asked, logs = run_trip(server, mode)
        assert result.is_error is False, result
        assert result.content[0].text == "Ada: 4 days, a red suitcase, 'Pack light'"
        assert asked == ["Who travels?", "Which colour of suitcase?", "A motto for a 4-day trip"]
        if mode == "legacy":  # the call's stream carried its log line too
            assert logs == ["asking the name"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_a_client_without_sampling_is_not_sent_a_request_it_cannot_answer(server: str, mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    if mode == "2026-07-28":  # it declares no sampling: -32021 names it, after the two questions
        with pytest.raises(BaseException) as raised:  # the client's task group wraps it
            run_trip(server, mode, sampling=False)
        found = raised.value
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        assert isinstance(found, MCPError) and found.error.code == -32021
        assert found.error.data == {"requiredCapabilities": {"sampling": {}}}
    else:  # the session id initialize gave says what the client declared: sampling is never sent
        result, asked, _ = run_trip(server, mode, sampling=False)
        assert result.is_error is True
        assert result.content[0].text == ("This tool asks its caller for sampling, which the caller did not declare "
                                          "it can do.")
        assert asked == ["Who travels?", "Which colour of suitcase?"]


def rpc(base: str, method: str, params: dict[str, Any], **kwargs: Any) -> requests.Response:
    headers = {"MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"}
    return requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 5, "method": method, "params": params},
                         headers=headers, timeout=30, **kwargs)


def test_a_2025_11_25_tasks_question_is_asked_on_its_tasks_result_stream(server: str) -> None:
    created = rpc(server, "tools/call", {"name": "pack", "arguments": {"items": 3}, "task": {"ttl": 60000}}).json()
    task_id = created["result"]["task"]["taskId"]
    deadline = time.monotonic() + 30
    while rpc(server, "tasks/get", {"taskId": task_id}).json()["result"]["status"] != "input_required":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    with rpc(server, "tasks/result", {"taskId": task_id}, stream=True) as stream:
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        events = (json.loads(line[6:]) for line in stream.iter_lines(decode_unicode=True) if line.startswith("data: "))
        asked = next(events)
        assert asked["method"] == "elicitation/create" and asked["params"]["message"] == "Which bag?"
        assert asked["params"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
        answered = requests.post(f"{server}/mcp", timeout=30, headers={"MCP-Protocol-Version": "2025-11-25"}, json={
            "jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"bag": "red bag"}}})
        assert answered.status_code == 202
        result = next(events)
    assert result["id"] == 5 and result["result"]["content"][0]["text"] == "Packed 3 things in the red bag."
    assert rpc(server, "tasks/get", {"taskId": task_id}).json()["result"]["status"] == "completed"


LEGACY_TASK_SCRIPT = """
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CallToolResult, ElicitResult

asked = []


async def elicit(context, params):
    asked.append(params.message)
    return ElicitResult(action="accept", content={"bag": "green bag"})


async def main():
    async with streamablehttp_client(sys.argv[1]) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=elicit) as client:
            await client.initialize()
            created = await client.experimental.call_tool_as_task("pack", {"items": 4})
            async for status in client.experimental.poll_task(created.task.taskId):
                if status.status == "input_required":
                    break
            result = await client.experimental.get_task_result(created.task.taskId, CallToolResult)
            print("RESULT " + json.dumps({"asked": asked, "text": result.content[0].text}))


asyncio.run(main())
"""


def test_the_official_1x_client_answers_a_tasks_question_on_tasks_result(server: str, legacy_sdk: Path,  # noqa: F811
                                                                        tmp_path: Path) -> None:
    script = tmp_path / "legacy_task_question.py"
    script.write_text(LEGACY_TASK_SCRIPT)
    run = subprocess.run([str(legacy_sdk), str(script), f"{server}/mcp"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120)
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, run.stdout[-3000:]
    assert json.loads(line[7:]) == {"asked": ["Which bag?"], "text": "Packed 4 things in the green bag."}
