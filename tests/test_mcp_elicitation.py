"""Handshake-era MCP approvals by elicitation, under real gunicorn servers.

A 2025-06-18 / 2025-11-25 ``tools/call`` of a tool needing approval, from a client accepting SSE,
is answered as a stream whose first message is an ``elicitation/create`` request; the client POSTs
its answer as a separate request, which may reach another worker or server: the rendezvous hands
it over (in process, or through a real Redis with ``TOOLDISCOVERY_STATE_STORAGE_URI``). The
official client (``mcp`` 2.3.0, legacy handshake mode) answers with its elicitation callback; raw
HTTP shows the request's shape per version, a forged answer from another caller ignored, and a
call whose answer never comes ending unrun. The rendezvous module is tested on its own too.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from flask import Flask
from mcp import Client
from mcp_types import ElicitResult
from werkzeug.wrappers import Request, Response

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.errors import RendezvousError
from flask_tooldiscovery.settings import SettingsError
from flask_tooldiscovery.state.redis_store import RedisStore
from flask_tooldiscovery.state.rendezvous import LOCAL, Rendezvous, for_uri

from .conftest import free_port, live_server
from .test_mcp_stream import SSE, WAIT, Stream, call_body
from .test_operating_server import (
    app_servers,
    redis_url,  # noqa: F401  (a fixture: a redis-server of our own)
)

pytestmark = pytest.mark.slow
KEY = "shared-elicit-key-" + "e" * 32
SECRET = "elicit-jwt-secret-0123456789abcdef"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``serve(workers=1, **app_args)``: the elicit app under gunicorn gthread; its base URL. Every
    server writes its runs to ``tmp_path/runs``."""
    (tmp_path / "runs").touch()
    with app_servers("tests.apps.elicit_app:create_app", "/mcp", runs=str(tmp_path / "runs")) as start:
        yield start


def runs(tmp_path: Path) -> list[str]:
    return (tmp_path / "runs").read_text().splitlines()


def official_call(url: str, answer: Callable[[Any], ElicitResult] | None, what: str = "disk") -> Any:
    """One ``tools/call wipe`` by the official client in legacy (2025-11-25 handshake) mode;
    ``answer(params)`` is its elicitation callback (``None``: it declares no elicitation)."""

    async def elicit(context: Any, params: Any) -> ElicitResult:
        assert answer is not None
        return answer(params)

    async def go() -> Any:
        async with Client(url, mode="legacy", elicitation_callback=elicit if answer else None) as client:
            return await client.call_tool("wipe", {"what": what})

    return asyncio.run(go())


def test_one_worker_accept_runs_once_and_decline_runs_nothing(serve: Callable[..., str], tmp_path: Path) -> None:
    url = serve(1) + "/mcp"
    asked: list[Any] = []

    def accept(params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"approve": True})

    result = official_call(url, accept)
    assert result.is_error is False and result.structured_content == {"wiped": "disk", "server": "a"}
    assert len(asked) == 1 and "wipe" in asked[0].message and '"disk"' in asked[0].message
    assert asked[0].requested_schema["properties"]["approve"]["type"] == "boolean"
    assert [line.split()[2] for line in runs(tmp_path)] == ["disk"]
    for answer in (ElicitResult(action="decline"), ElicitResult(action="cancel"),
                   ElicitResult(action="accept", content={"approve": False})):
        refused = official_call(url, lambda params, answer=answer: answer, what="floppy")
        assert refused.is_error is True and "not approved" in refused.content[0].text
    assert [line.split()[2] for line in runs(tmp_path)] == ["disk"]


def test_a_client_without_elicitation_gets_the_state_in_meta(serve: Callable[..., str], tmp_path: Path) -> None:
    url = serve(1) + "/mcp"
    result = official_call(url, None)  # the SDK answers the request "Elicitation not supported"
    assert result.is_error is True and "did not run" in result.content[0].text
    carried = result.meta["flask-tooldiscovery/approval"]
    assert "wipe" in carried["prompt"] and carried["approval_state"]
    # A client taking JSON only is not asked: the same result, at once.
    plain = requests.post(url, json=call_body(1, "wipe", {"what": "disk"}), timeout=WAIT,
                          headers={"Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"})
    assert plain.headers["Content-Type"] == "application/json"
    assert "flask-tooldiscovery/approval" in plain.json()["result"]["_meta"]
    assert runs(tmp_path) == []


def streaming_proxy(backends: list[str]) -> tuple[Callable[..., Any], list[tuple[str, str]]]:
    """A proxy passing streams through as they come, round-robin, except that a client's JSON-RPC
    response goes to the server that did not serve the last ``tools/call``. Records (backend, what)."""
    served: list[tuple[str, str]] = []
    turn = iter(range(10**9))

    @Request.application
    def proxy(request: Request) -> Response:
        data = request.get_data()
        try:
            message = json.loads(data) if data else {}
        except ValueError:
            message = {}
        if request.method != "POST":  # the client's GET stream and its closing DELETE
            what = request.method
        else:
            what = (message.get("method") or "response") if isinstance(message, dict) else "batch"
        calls = [backend for backend, kind in served if kind == "tools/call"]
        if what == "response" and calls:
            backend = next(b for b in backends if b != calls[-1])
        else:
            backend = backends[next(turn) % len(backends)]
        served.append((backend, what))
        headers = {k: v for k, v in request.headers if k.lower() not in ("host", "content-length")}
        upstream = requests.request(request.method, backend + request.full_path.rstrip("?"), data=data,
                                    headers=headers, stream=True, timeout=WAIT)
        excluded = {"content-length", "transfer-encoding", "connection", "content-encoding"}
        return Response(upstream.iter_content(chunk_size=None), status=upstream.status_code, direct_passthrough=True,
                        headers=[(k, v) for k, v in upstream.headers.items() if k.lower() not in excluded])

    return proxy, served


def test_two_servers_sharing_redis_the_answer_reaches_the_other_server(
        serve: Callable[..., str], tmp_path: Path, redis_url: str) -> None:  # noqa: F811
    backends = [serve(1, label=label, secret=KEY, storage=redis_url + "/2") for label in ("a", "b")]
    proxy, served = streaming_proxy(backends)
    with live_server(proxy) as base:
        result = official_call(base + "/mcp", lambda params: ElicitResult(action="accept", content={"approve": True}))
    assert result.is_error is False and result.structured_content["wiped"] == "disk"
    call = next(backend for backend, what in served if what == "tools/call")
    answered = [backend for backend, what in served if what == "response"]
    assert answered and answered[0] != call  # the answer went to the other server
    label = "ab"[backends.index(call)]
    assert result.structured_content["server"] == label  # the call ran where its stream was
    assert [(line.split()[0], line.split()[2]) for line in runs(tmp_path)] == [(label, "disk")]


def test_without_storage_an_answer_reaching_another_server_is_lost(serve: Callable[..., str],
                                                                    tmp_path: Path) -> None:
    """What the approvals page warns about: in process, the rendezvous only works where the call waits."""
    backends = [serve(1, label=label, secret=KEY, timeout=1) for label in ("a", "b")]
    proxy, _ = streaming_proxy(backends)
    with live_server(proxy) as base:
        result = official_call(base + "/mcp", lambda params: ElicitResult(action="accept", content={"approve": True}))
    assert result.is_error is True and "not received" in result.content[0].text
    assert runs(tmp_path) == []


def bearer(sub: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {jwt.encode({'sub': sub, 'exp': int(time.time()) + 600}, SECRET)}"}


def answer(base: str, request_id: str, headers: dict[str, str], result: dict[str, Any]) -> requests.Response:
    return requests.post(base + "/mcp", json={"jsonrpc": "2.0", "id": request_id, "result": result}, timeout=WAIT,
                         headers={"Accept": SSE, "MCP-Protocol-Version": "2025-11-25", **headers})


def elicitation(stream: Stream) -> dict[str, Any]:
    stream.until(lambda line: "elicitation/create" in line)
    return stream.messages()[-1]


def test_an_answer_from_another_caller_does_not_approve(serve: Callable[..., str], tmp_path: Path) -> None:
    base = serve(1, jwt_secret=SECRET)  # one worker: every answer reaches the waiting call, forged or not
    alice, bob = bearer("alice"), bearer("bob")
    stream = Stream(base, call_body(1, "wipe", {"what": "disk"}), alice)
    try:
        asked = elicitation(stream)
        assert asked["params"] == {"mode": "form", "message": asked["params"]["message"],
                                   "requestedSchema": asked["params"]["requestedSchema"]}
        assert isinstance(asked["id"], str) and len(asked["id"]) > 30
        forged = answer(base, asked["id"], bob, {"action": "accept", "content": {"approve": True}})
        assert forged.status_code == 202
        assert answer(base, asked["id"], alice, {"action": "decline"}).status_code == 202
        messages = stream.rest()
    finally:
        stream.close()
    assert messages[-1]["id"] == 1 and messages[-1]["result"]["isError"] is True
    assert "not approved" in messages[-1]["result"]["content"][0]["text"]
    assert runs(tmp_path) == []
    # 2025-06-18 had no 'mode'; its caller's own accept runs the call once.
    stream = Stream(base, call_body(2, "wipe", {"what": "tape"}), {**alice, "MCP-Protocol-Version": "2025-06-18"})
    try:
        asked = elicitation(stream)
        assert "mode" not in asked["params"] and asked["params"]["requestedSchema"]["required"] == ["approve"]
        assert answer(base, asked["id"], alice, {"action": "accept", "content": {"approve": True}}).status_code == 202
        messages = stream.rest()
    finally:
        stream.close()
    assert messages[-1]["id"] == 2 and messages[-1]["result"]["structuredContent"]["wiped"] == "tape"
    assert [line.split()[2] for line in runs(tmp_path)] == ["tape"]


def test_no_answer_in_time_ends_the_call_unrun(serve: Callable[..., str], tmp_path: Path) -> None:
    base = serve(1, timeout=2)  # keep-alives every 0.2 s meanwhile
    stream = Stream(base, call_body(1, "wipe", {"what": "disk"}))
    try:
        asked = elicitation(stream)
        messages = stream.rest()
    finally:
        stream.close()
    assert ": keep-alive" in stream.lines
    assert {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": asked["id"], "reason": "approval not received in time"}} in messages
    assert messages[-1]["id"] == 1 and messages[-1]["result"]["isError"] is True
    assert "not received" in messages[-1]["result"]["content"][0]["text"]
    late = answer(base, asked["id"], {}, {"action": "accept", "content": {"approve": True}})
    assert late.status_code == 202 and runs(tmp_path) == []


# -- the rendezvous module -----------------------------------------------------------------------


def test_local_rendezvous_hands_over_only_to_a_waiter() -> None:
    assert LOCAL.deliver("nobody-waits", b"x", 5) is False
    with LOCAL.expect("k1") as box:
        assert LOCAL.deliver("k1", b"one", 5) is True and LOCAL.deliver("k1", b"two", 5) is True
        assert (box.get(WAIT), box.get(WAIT), box.get(0.01)) == (b"one", b"two", None)
    assert LOCAL.deliver("k1", b"late", 5) is False


def test_redis_rendezvous_between_two_clients(redis_url: str) -> None:  # noqa: F811
    import redis

    url = redis_url + "/3"
    waiter, receiver, raw = Rendezvous(RedisStore(url)), Rendezvous(RedisStore(url)), redis.Redis.from_url(url)
    assert for_uri(url) is for_uri(url) and for_uri(None) is LOCAL
    assert receiver.deliver("early", b"kept", 30) is True  # stored before anyone waits, for a while
    assert 0 < raw.ttl("flask-tooldiscovery:rendezvous:early") <= 31
    with waiter.expect("early") as box:
        assert box.get(WAIT) == b"kept"
        assert box.get(0.05) is None
        assert receiver.deliver("early", b"then", 30) is True and box.get(WAIT) == b"then"
        receiver.deliver("early", b"unread", 30)
    assert raw.exists("flask-tooldiscovery:rendezvous:early") == 0  # the waiter cleans up


def test_unreachable_redis() -> None:
    down = Rendezvous(RedisStore(f"redis://127.0.0.1:{free_port()}/0"))
    assert down.deliver("k", b"x", 5) is False
    with down.expect("k") as box, pytest.raises(RendezvousError):
        box.get(0.1)


def test_storage_uri_is_checked_at_init_app(monkeypatch: pytest.MonkeyPatch) -> None:
    def init(uri: str) -> Flask:
        app = Flask("x")
        app.config["TOOLDISCOVERY_STATE_STORAGE_URI"] = uri
        ToolDiscovery(app)
        return app

    with pytest.raises(SettingsError, match="TOOLDISCOVERY_STATE_STORAGE_URI must be a redis://"):
        init("memcached://127.0.0.1")
    monkeypatch.setitem(sys.modules, "redis", None)  # as if redis-py were not installed
    with pytest.raises(SettingsError, match=r"needs redis-py: pip install 'flask-tooldiscovery\[redis\]'"):
        init("redis://127.0.0.1:6379/0")
    assert init("").extensions["tooldiscovery"] is not None


def test_timeout_zero_never_asks_by_elicitation(tmp_path: Path) -> None:
    from .apps.elicit_app import create_app

    app = create_app(runs=str(tmp_path / "runs"), timeout=0)
    reply = app.test_client().post("/mcp", json=call_body(1, "wipe", {"what": "disk"}),
                                   headers={"Accept": SSE, "MCP-Protocol-Version": "2025-11-25"})
    assert reply.headers["Content-Type"] == "application/json"
    assert "flask-tooldiscovery/approval" in reply.get_json()["result"]["_meta"]
    assert not (tmp_path / "runs").exists()
