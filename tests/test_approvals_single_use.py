"""A sealed approval runs its call once, whichever dialect, worker or server it is sent to.

With a state store (a real Redis shared by two gunicorn servers of two workers each, calls sent
to both in turn): one seal sent five times in a row, ten times at once, or on several dialects
runs once; every other use is refused with ``invalid_approval`` in the dialect's own error shape.
Without one, the same holds within a process (a threaded server, real HTTP), and gunicorn started
with several workers warns at start. The seal covers the arguments as the tool receives them:
``5.0`` for an ``int`` approved as ``5`` runs.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from flask_tooldiscovery.errors import SpendError
from flask_tooldiscovery.state.memory import MemoryStore
from flask_tooldiscovery.state.single_use import Ledger

from .apps.approval_app import wiping_app
from .conftest import free_port, live_server
from .test_approvals import call_request
from .test_deploy import stop
from .test_operating_server import (
    redis_url,  # noqa: F401  (a fixture: a redis-server of our own)
    start,
)

APP = "tests.apps.approval_app:create_app()"
KEY = "single-use-approval-key-" + "u" * 32
JSON_DIALECTS = ["opal", "oxp", "tdp", "utcp", "explorer"]
_ids = itertools.count(1)


def send(base: str, dialect: str, tool: str, args: dict[str, Any], state: str | None = None) -> requests.Response:
    """One call of ``tool`` through ``dialect`` (``state`` sent back in ``X-Tool-Approval``)."""
    headers = {"X-Tool-Approval": state} if state is not None else {}
    path, body = call_request(dialect, tool, args)
    return requests.post(base + path, json=body, headers=headers, timeout=30)


def ran(dialect: str, response: requests.Response) -> bool:
    """True when the call ran (and succeeded), in the dialect's shape."""
    body = response.json()
    if dialect == "mcp":
        return "result" in body and body["result"].get("isError") is not True
    return response.status_code == 200 and (dialect != "oxp" or body["result"]["success"] is True)


def refused_as_invalid(dialect: str, response: requests.Response) -> bool:
    """True when the call was refused with ``invalid_approval`` in the dialect's error shape."""
    body = response.json()
    if dialect == "mcp":
        return body.get("error", {}).get("code") == -32602 and body["error"].get("data") == {
            "reason": "invalid_approval"}
    return response.status_code == 400 and body.get("code") == "invalid_approval"


def ask(base: str, order: str, amount: Any = 500, dialect: str = "tdp") -> str:
    """The sealed approval a first call of ``refund`` answers with."""
    first = send(base, dialect, "refund", {"order": order, "amount": amount})
    assert first.status_code == 428 and first.json()["code"] == "approval_required", first.text
    state: str = first.json()["approval_state"]
    return state


def refunds(runs: Path, order: str) -> list[str]:
    """The amounts ``order`` was refunded with, one per run of the tool."""
    return [line.split()[-1] for line in runs.read_text().splitlines() if f" refund {order} " in line]


# -- the scenarios, against servers with one shared store or within one process --------------------


def five_in_a_row_run_once(bases: list[str], runs: Path) -> None:
    order = f"ord-{next(_ids)}"
    state = ask(bases[0], order)
    answers = [send(bases[i % len(bases)], "tdp", "refund", {"order": order, "amount": 500}, state)
               for i in range(5)]
    assert [ran("tdp", r) for r in answers] == [True, False, False, False, False], [r.text for r in answers]
    assert all(refused_as_invalid("tdp", r) for r in answers[1:])
    assert refunds(runs, order) == ["500"]


def ten_at_once_run_once(bases: list[str], runs: Path) -> None:
    order = f"ord-{next(_ids)}"
    state = ask(bases[0], order)
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda i: send(bases[i % len(bases)], "opal", "refund",
                                               {"order": order, "amount": 500}, state), range(10)))
    assert sum(ran("opal", r) for r in answers) == 1, [r.text for r in answers]
    # Every other call is refused: its seal is spent. On a loaded machine a worker whose call slots
    # are all taken answers 503 instead, which leaves the seal as it was (the test of a busy refusal
    # below): a refusal all the same, never a second run.
    others = [r for r in answers if not ran("opal", r)]
    assert all(refused_as_invalid("opal", r) or r.status_code == 503 for r in others), \
        [(r.status_code, r.text) for r in others]
    assert refunds(runs, order) == ["500"]


def one_seal_on_every_dialect_runs_once(bases: list[str], runs: Path) -> None:
    order = f"ord-{next(_ids)}"
    state = ask(bases[0], order, dialect="oxp")  # sealed by one dialect, good on any, once
    answers = {dialect: send(bases[i % len(bases)], dialect, "refund", {"order": order, "amount": 500}, state)
               for i, dialect in enumerate(["opal", "oxp", "tdp", "utcp", "explorer", "mcp"])}
    assert ran("opal", answers.pop("opal")), "the first use runs"
    for dialect, answer in answers.items():
        assert refused_as_invalid(dialect, answer), (dialect, answer.text)
        assert "Traceback" not in answer.text
    assert refunds(runs, order) == ["500"]


def a_float_for_an_int_is_the_same_call(bases: list[str], runs: Path) -> None:
    order = f"ord-{next(_ids)}"
    state = ask(bases[0], order, amount=5)
    answer = send(bases[-1], "oxp", "refund", {"order": order, "amount": 5.0}, state)
    assert ran("oxp", answer), answer.text
    order2 = f"ord-{next(_ids)}"
    state = ask(bases[-1], order2, amount=7.0, dialect="explorer")
    assert ran("utcp", send(bases[0], "utcp", "refund", {"order": order2, "amount": 7}, state))
    assert refunds(runs, order) == ["5"] and refunds(runs, order2) == ["7"]  # the tool got an int each time
    # Another amount is another call: refused, and nothing runs.
    state = ask(bases[0], order, amount=5)
    other = send(bases[-1], "oxp", "refund", {"order": order, "amount": 6}, state)
    assert refused_as_invalid("oxp", other) and refunds(runs, order) == ["5"]


def mcp_request_state_runs_once(bases: list[str], runs: Path) -> None:
    """MCP 2026-07-28: the ``requestState`` accepted twice runs once; the second is the SDK's error."""
    order = f"ord-{next(_ids)}"
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "refund"}
    params = {"_meta": meta, "name": "refund", "arguments": {"order": order, "amount": 500}}

    def post(base: str, extra: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {**params, **extra}}
        return requests.post(base + "/mcp", json=body, headers=headers, timeout=30)

    state = post(bases[0], {}).json()["result"]["requestState"]
    accept = {"requestState": state, "inputResponses": {"approval": {"action": "accept", "content": {"approve": True}}}}
    first, second = post(bases[-1], accept), post(bases[0], accept)
    assert first.json()["result"]["structuredContent"]["refunded"] == 500
    assert second.status_code == 400 and second.json()["error"]["message"] == "Invalid or expired requestState"
    assert refunds(runs, order) == ["500"]


SCENARIOS = [five_in_a_row_run_once, ten_at_once_run_once, one_seal_on_every_dialect_runs_once,
             a_float_for_an_int_is_the_same_call, mcp_request_state_runs_once]


@pytest.fixture(scope="module")
def shared_store_servers(tmp_path_factory: pytest.TempPathFactory, redis_url: str  # noqa: F811
                         ) -> Iterator[tuple[list[str], Path]]:
    """Two gunicorn servers of two workers each, one key, spending approvals in one Redis."""
    runs = tmp_path_factory.mktemp("single-use") / "runs.txt"
    runs.touch()
    started = []
    try:
        for label in ("a", "b"):
            started.append(start(APP, workers=2, env={"SERVER_LABEL": label, "APPROVAL_SECRET_KEY": KEY,
                                                      "APPROVAL_RUNS_FILE": str(runs),
                                                      "APPROVAL_STORAGE": redis_url + "/4"}))
        yield [base for base, _ in started], runs
    finally:
        for _, proc in started:
            stop(proc)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_with_a_shared_store_across_workers_and_servers(scenario: Any, shared_store_servers: Any) -> None:
    bases, runs = shared_store_servers
    scenario(bases, runs)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[str], Path]]:
    """The same app without a store, served by threads of this process."""
    runs = tmp_path_factory.mktemp("single-use-local") / "runs.txt"
    runs.touch()
    app = wiping_app("approvals", "local", str(runs), SECRET_KEY=KEY, TOOLDISCOVERY_OXP_TOOLKIT="Approvals",
                     TOOLDISCOVERY_DIALECTS=["tdp", "oxp", "mcp", "opal", "utcp", "explorer"],
                     TOOLDISCOVERY_ALLOW_EXECUTE=True,
                     # ten at once in one process: a busy worker's 503 would leave the seal good (tested below)
                     TOOLDISCOVERY_MAX_CONCURRENT_CALLS=0)
    with live_server(app) as base:
        yield [base], runs


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_without_a_store_within_one_process(scenario: Any, one_process: Any) -> None:
    bases, runs = one_process
    scenario(bases, runs)


def test_another_spelling_of_a_spent_seal_is_spent_too(one_process: Any) -> None:
    """A signature has more than one base64 spelling that verifies: a spent seal is known by its
    content, so changing the spelling does not make it new."""
    (base,), runs = one_process
    order = f"ord-{next(_ids)}"
    state = ask(base, order)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(state[-1])
    twin = state[:-1] + alphabet[last ^ 1]  # the final character's unused low bits
    assert ran("tdp", send(base, "tdp", "refund", {"order": order, "amount": 500}, state))
    replayed = send(base, "tdp", "refund", {"order": order, "amount": 500}, twin)
    assert refused_as_invalid("tdp", replayed) and refunds(runs, order) == ["500"]


def test_a_call_refused_as_busy_leaves_its_approval_good(tmp_path: Path) -> None:
    """The seal is spent once the call holds its slot: a busy worker's refusal does not spend it."""
    runs = tmp_path / "runs.txt"
    runs.touch()
    app = wiping_app("approvals", "busy", str(runs), SECRET_KEY=KEY, TOOLDISCOVERY_DIALECTS=["tdp"],
                     TOOLDISCOVERY_MAX_CONCURRENT_CALLS=1)
    started, release = threading.Event(), threading.Event()
    discovery = app.extensions["tooldiscovery"]

    @discovery.tool
    def hold() -> str:
        """Hold the worker's one call slot until released."""
        started.set()
        release.wait(30)
        return "released"

    with live_server(app) as base, concurrent.futures.ThreadPoolExecutor(1) as pool:
        state = ask(base, "ord-busy")
        holding = pool.submit(send, base, "tdp", "hold", {})
        assert started.wait(30)
        busy = send(base, "tdp", "refund", {"order": "ord-busy", "amount": 500}, state)
        assert busy.status_code == 503 and refunds(runs, "ord-busy") == []
        release.set()
        assert holding.result().status_code == 200
        assert ran("tdp", send(base, "tdp", "refund", {"order": "ord-busy", "amount": 500}, state))
        again = send(base, "tdp", "refund", {"order": "ord-busy", "amount": 500}, state)
    assert refused_as_invalid("tdp", again) and refunds(runs, "ord-busy") == ["500"]


def test_an_unreachable_store_refuses_the_call_unrun(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    runs.touch()
    app = wiping_app("approvals", "down", str(runs), SECRET_KEY=KEY, TOOLDISCOVERY_DIALECTS=["tdp"],
                     TOOLDISCOVERY_STATE_STORAGE_URI=f"redis://127.0.0.1:{free_port()}/0")
    client = app.test_client()
    call = {"tool_name": "refund", "arguments": {"order": "ord-down", "amount": 1}}
    state = client.post("/api/v1/tools/execute", json=call).get_json()["approval_state"]
    refused = client.post("/api/v1/tools/execute", json=call, headers={"X-Tool-Approval": state})
    assert refused.status_code == 503 and "approval" in refused.get_json()["error"]
    assert refunds(runs, "ord-down") == []


def test_invalid_arguments_are_answered_without_asking_for_approval(one_process: Any) -> None:
    (base,), runs = one_process
    answer = send(base, "tdp", "refund", {"order": "ord-bad", "amount": "five"})
    assert answer.status_code == 400 and "amount" in answer.text and "approval_state" not in answer.text
    assert refunds(runs, "ord-bad") == []


def test_the_in_process_ledger_forgets_expired_keys_and_refuses_when_full() -> None:
    ledger = Ledger(MemoryStore(capacity=2))
    assert ledger.spend("a", 600) and not ledger.spend("a", 600)
    assert ledger.spend("gone", 0) and len(ledger) == 1  # expired at once: forgotten
    assert ledger.spend("b", 600)
    with pytest.raises(SpendError):  # two live keys: a third is refused rather than one forgotten
        ledger.spend("c", 600)
    assert not ledger.spend("b", 600)


def test_the_digest_of_a_set_is_the_same_in_every_process() -> None:
    code = ("from flask_tooldiscovery.calls.approvals import digest; "
            "print(digest({'tags': set('abcdefghij'), 'n': 5.0}))")
    seen = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                           capture_output=True, text=True, check=True).stdout for seed in range(1, 5)}
    assert len(seen) == 1


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_gunicorn_with_several_workers_and_no_store_warns_at_start(workers: int, tmp_path: Path) -> None:
    """Accepted per process (TOOLDISCOVERY_STATE_PER_PROCESS; without it several workers are refused
    at start, tests/test_once_workers.py), several workers without a store are warned about."""
    runs = tmp_path / "runs.txt"
    _, proc = start(APP, workers=workers, env={"SERVER_LABEL": "w", "APPROVAL_SECRET_KEY": KEY,
                                               "APPROVAL_RUNS_FILE": str(runs), "APPROVAL_PER_PROCESS": "1"})
    stop(proc)
    output = proc.stdout.read() if proc.stdout else ""
    warned = "TOOLDISCOVERY_STATE_STORAGE_URI is unset" in output
    assert warned == (workers > 1), output
    if workers > 1:
        assert f"the server runs {workers} worker processes" in output and "approval" in output
