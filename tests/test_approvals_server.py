"""Approvals across servers: two gunicorn servers with the same SECRET_KEY behind a round-robin
proxy. The first round trip of a call needing approval lands on one server, the second (with the
sealed state) on the other, which runs it; nothing is shared between them but the key. Tampered
state, or state sealed by a server with another key, is refused there and nothing runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import requests
from werkzeug.wrappers import Request, Response

from .conftest import live_server
from .test_deploy import stop
from .test_operating_server import start

pytestmark = pytest.mark.slow
APP = "tests.apps.approval_app:create_app()"
KEY = "shared-approval-key-" + "z" * 32


def proxy_to(backends: list[str]):
    """A round-robin proxy recording, for each request, the backend, the JSON-RPC method (if any)
    and whether it carried a requestState."""
    served: list[tuple[str, str | None, bool]] = []
    turn = iter(range(10**9))

    @Request.application
    def proxy(request: Request) -> Response:
        backend = backends[next(turn) % len(backends)]
        data = request.get_data()
        headers = {k: v for k, v in request.headers if k.lower() not in ("host", "content-length")}
        upstream = requests.request(request.method, backend + request.full_path.rstrip("?"), data=data,
                                    headers=headers, timeout=30)
        try:
            message = json.loads(data) if data else {}
        except ValueError:
            message = {}
        params = message.get("params") if isinstance(message, dict) else None
        served.append((backend, message.get("method") if isinstance(message, dict) else None,
                       isinstance(params, dict) and "requestState" in params))
        excluded = {"content-length", "transfer-encoding", "connection", "content-encoding"}
        return Response(upstream.content, status=upstream.status_code,
                        headers=[(k, v) for k, v in upstream.headers.items() if k.lower() not in excluded])

    return proxy, served


@pytest.fixture
def two_servers(tmp_path: Path):
    runs = tmp_path / "runs.txt"
    runs.touch()
    started = []
    try:
        for label in ("a", "b"):
            started.append(start(APP, env={"SERVER_LABEL": label, "APPROVAL_SECRET_KEY": KEY,
                                           "APPROVAL_RUNS_FILE": str(runs)}))
        proxy, served = proxy_to([base for base, _ in started])
        with live_server(proxy) as base:
            yield base, served, runs, [b for b, _ in started]
    finally:
        for _, proc in started:
            stop(proc)


def lines(runs: Path) -> list[str]:
    return runs.read_text().splitlines()


def test_tdp_approval_asked_on_one_server_runs_on_the_other(two_servers) -> None:
    base, _, runs, _ = two_servers
    call = {"tool_name": "wipe", "arguments": {"what": "disk"}}
    first = requests.post(f"{base}/api/v1/tools/execute", json=call, timeout=10)
    assert first.status_code == 428 and first.json()["code"] == "approval_required"
    asked_on = first.headers["X-Served-By"]
    assert lines(runs) == []
    state = first.json()["approval_state"]
    tampered = state[:-5] + ("A" if state[-5] != "A" else "B") + state[-4:]
    refused = requests.post(f"{base}/api/v1/tools/execute", json=call, headers={"X-Tool-Approval": tampered},
                            timeout=10)
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_approval" and lines(runs) == []
    requests.get(f"{base}/oxp/health", timeout=10)  # keeps the turn: the approved call goes to the other server
    second = requests.post(f"{base}/api/v1/tools/execute", json=call, headers={"X-Tool-Approval": state}, timeout=10)
    assert second.status_code == 200, second.text
    ran_on = second.headers["X-Served-By"]
    assert {asked_on, ran_on} == {"a", "b"}
    assert second.json()["result"]["server"] == ran_on
    assert [line.split()[0] + " " + line.split()[2] for line in lines(runs)] == [f"{ran_on} disk"]


def test_oxp_state_sealed_with_another_key_is_refused(two_servers, tmp_path: Path) -> None:
    base, _, runs, _ = two_servers
    other, proc = start(APP, env={"SERVER_LABEL": "c", "APPROVAL_SECRET_KEY": "another-key-" + "q" * 32,
                                  "APPROVAL_RUNS_FILE": str(runs)})
    try:
        call = {"request": {"tool_id": "Approvals.wipe", "input": {"what": "disk"}}}
        state = requests.post(f"{other}/oxp/tools/call", json=call, timeout=10).json()["approval_state"]
        refused = requests.post(f"{base}/oxp/tools/call", json=call, headers={"X-Tool-Approval": state}, timeout=10)
        assert refused.status_code == 400 and refused.json()["code"] == "invalid_approval"
        assert lines(runs) == []
    finally:
        stop(proc)


def test_mcp_2026_official_client_approval_resumes_on_the_other_server(two_servers) -> None:
    from mcp import Client
    from mcp_types import ElicitResult

    base, served, runs, backends = two_servers
    asked: list[str] = []

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    async def run():
        async with Client(f"{base}/mcp", mode="2026-07-28", elicitation_callback=elicit) as client:
            return await client.call_tool("wipe", {"what": "disk"})

    result = asyncio.run(run())
    assert not result.is_error and result.structured_content["wiped"] == "disk"
    assert len(asked) == 1 and "wipe" in asked[0]
    calls = [(backend, resumed) for backend, method, resumed in served if method == "tools/call"]
    assert len(calls) == 2 and calls[0][1] is False and calls[1][1] is True
    assert calls[0][0] != calls[1][0]  # asked on one server, resumed on the other
    ran_on = result.structured_content["server"]
    assert backends[["a", "b"].index(ran_on)] == calls[1][0]
    assert [line.split()[0] for line in lines(runs)] == [ran_on]
