"""MCP ``tools/list`` by POST through the core's fast path: once the full path has answered a plain
anonymous ``tools/list`` (the first answer marks the endpoint as one with answers to learn, the
second is learned), the same request again (any id) is answered from the learned bytes without
Flask, and it is always what the full path would answer: after a registry change, for another
page, another protocol version, another caller, a cookie, an origin; never for a provider's tools,
a batch, or a server that needs credentials. Over real HTTP too."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from flask import Flask, request_started

from flask_tooldiscovery import ToolContext, ToolDiscovery

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
MODERN = "2026-07-28"


def rpc(id_: Any, method: str = "tools/list", params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def make(tools: int = 3, **config: Any) -> tuple[ToolDiscovery, Flask]:
    d = ToolDiscovery()
    for i in range(tools):
        d.add_tool(lambda x=i: x, name=f"tool_{i}", description=f"Tool {i}.")
    app = Flask("fastlist")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp"], **config})
    d.init_app(app)
    return d, app


class Counted:
    """Counts the requests that reach Flask (the full path) behind the fast path."""

    def __init__(self, app: Flask) -> None:
        fast = app.extensions["tooldiscovery.fast"]
        self.inner, self.count = fast.wsgi_app, 0
        fast.wsgi_app = self

    def __call__(self, environ: Any, start_response: Any) -> Any:
        self.count += 1
        return self.inner(environ, start_response)


def full_path_answer(app: Flask, data: bytes, headers: dict[str, str]) -> bytes:
    """What the full path answers (a request_started receiver turns the fast path off)."""
    def receiver(sender: Any, **extra: Any) -> None:
        return None

    request_started.connect(receiver, app)
    try:
        return app.test_client().post("/mcp", data=data, headers=headers).data
    finally:
        request_started.disconnect(receiver, app)


def test_same_list_again_skips_flask_and_keeps_each_id() -> None:
    _, app = make()
    client = app.test_client()
    counted = Counted(app)
    first = client.post("/mcp", data=rpc(1), headers=HEADERS)
    assert client.post("/mcp", data=rpc(1), headers=HEADERS).data == first.data  # learned now
    assert first.status_code == 200 and counted.count == 2
    for id_ in (2, "a-string-id", 12345678901234567890, "é"):
        again = client.post("/mcp", data=rpc(id_), headers={**HEADERS, "X-Trace-Id": "trace-7"})
        assert again.status_code == 200
        assert again.get_json()["id"] == id_
        assert again.get_json()["result"] == first.get_json()["result"]
        assert again.headers["X-Trace-Id"] == "trace-7"
        assert int(again.headers["Content-Length"]) == len(again.data)
        assert again.data == full_path_answer(app, rpc(id_), {**HEADERS, "X-Trace-Id": "trace-7"})
    assert counted.count == 2 + 4  # the four full-path references above, the fast answers none
    assert first.headers["X-Content-Type-Options"] == "nosniff"


def test_registry_change_shows_at_once() -> None:
    d, app = make()
    client = app.test_client()
    client.post("/mcp", data=rpc(1), headers=HEADERS)
    client.post("/mcp", data=rpc(2), headers=HEADERS)
    d.add_tool(lambda: 9, name="added", description="Added.")
    after = client.post("/mcp", data=rpc(3), headers=HEADERS).get_json()
    assert "added" in [t["name"] for t in after["result"]["tools"]]


def test_pages_and_versions_are_learned_apart() -> None:
    _, app = make(tools=5, TOOLDISCOVERY_MCP_PAGE_SIZE=2)
    client = app.test_client()
    first = client.post("/mcp", data=rpc(1), headers=HEADERS).get_json()["result"]
    cursor = first["nextCursor"]
    second = client.post("/mcp", data=rpc(2, params={"cursor": cursor}), headers=HEADERS).get_json()["result"]
    for _ in range(2):
        assert client.post("/mcp", data=rpc(3), headers=HEADERS).get_json()["result"] == first
        assert client.post("/mcp", data=rpc(4, params={"cursor": cursor}),
                           headers=HEADERS).get_json()["result"] == second
    assert [t["name"] for t in first["tools"]] == ["tool_0", "tool_1"]
    assert [t["name"] for t in second["tools"]] == ["tool_2", "tool_3"]
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    modern_headers = {**HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
    for id_ in (5, 6):
        modern = client.post("/mcp", data=rpc(id_, params={"_meta": meta}), headers=modern_headers).get_json()
        assert modern["result"]["resultType"] == "complete" and modern["id"] == id_
    assert "resultType" not in client.post("/mcp", data=rpc(7), headers=HEADERS).get_json()["result"]
    old = client.post("/mcp", data=rpc(8), headers={**HEADERS, "MCP-Protocol-Version": "2024-11-05"})
    assert old.status_code == 200 and old.get_json()["id"] == 8


@pytest.mark.parametrize("extra", [{"Cookie": "session=x"}, {"Origin": "https://evil.example"},
                                   {"Authorization": "Bearer nope"}])
def test_requests_with_more_go_through_flask(extra: dict[str, str]) -> None:
    _, app = make()
    client = app.test_client(use_cookies=False)  # the Cookie header sent as it is
    client.post("/mcp", data=rpc(1), headers=HEADERS)
    client.post("/mcp", data=rpc(1), headers=HEADERS)
    counted = Counted(app)
    answer = client.post("/mcp", data=rpc(2), headers={**HEADERS, **extra})
    assert counted.count == 1
    if "Origin" in extra:
        assert answer.status_code == 403


def test_other_methods_and_bad_bodies_still_reach_flask() -> None:
    _, app = make()
    client = app.test_client()
    client.post("/mcp", data=rpc(1), headers=HEADERS)
    client.post("/mcp", data=rpc(1), headers=HEADERS)
    counted = Counted(app)
    call = client.post("/mcp", data=rpc(2, "tools/call", {"name": "tool_1", "arguments": {}}), headers=HEADERS)
    assert call.get_json()["result"]["content"][0]["text"] == "1"  # its body read again by Flask
    bad = client.post("/mcp", data=b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"', headers=HEADERS)
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == -32700
    nan = client.post("/mcp", data=b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"x": NaN}}',
                      headers=HEADERS)
    assert nan.status_code == 400
    batch = client.post("/mcp", data=b"[" + rpc(5) + b"]", headers={**HEADERS, "MCP-Protocol-Version": "2025-03-26"})
    assert batch.status_code == 200 and batch.get_json()[0]["id"] == 5
    assert counted.count == 4


def test_never_learned_for_providers_or_credentials() -> None:
    listed = [{"name": "p", "description": "P."}]
    d = ToolDiscovery(tools=lambda: list(listed))
    app = Flask("provider")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp"]})
    d.init_app(app)
    client = app.test_client()
    counted = Counted(app)
    for id_ in range(3):
        assert client.post("/mcp", data=rpc(id_), headers=HEADERS).get_json()["result"]["tools"][0]["name"] == "p"
    listed[0] = {"name": "q", "description": "Q."}
    assert client.post("/mcp", data=rpc(4), headers=HEADERS).get_json()["result"]["tools"][0]["name"] == "q"
    assert counted.count == 4

    _, locked = make(TOOLDISCOVERY_MCP_BEARER_TOKEN="s3cret-token-value-0123456789")
    client = locked.test_client()
    counted = Counted(locked)
    bearer = {**HEADERS, "Authorization": "Bearer s3cret-token-value-0123456789"}
    for id_ in range(3):
        assert client.post("/mcp", data=rpc(id_), headers=bearer).status_code == 200
        assert client.post("/mcp", data=rpc(id_), headers=HEADERS).status_code == 401
    assert counted.count == 6


def test_over_real_http() -> None:
    from .conftest import live_server

    _, app = make()
    with live_server(app) as base:
        def post(id_: Any, **extra: str) -> tuple[dict[str, Any], Any]:
            req = urllib.request.Request(f"{base}/mcp", data=rpc(id_), method="POST", headers={**HEADERS, **extra})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read()), resp.headers

        counted = Counted(app)
        first, _ = post(1)
        post(1)
        second, headers = post("two", **{"X-Trace-Id": "t-2"})
        assert second["id"] == "two" and second["result"] == first["result"]
        assert headers["X-Trace-Id"] == "t-2"
        assert counted.count == 2


def learned(client: Any, data: bytes, headers: dict[str, str] | None = None) -> None:
    for _ in range(2):  # offered, then learned
        assert client.post("/mcp", data=data, headers=headers or HEADERS).status_code == 200


def test_a_body_over_the_size_limit_is_refused_as_by_the_full_path() -> None:
    _, app = make(TOOLDISCOVERY_MAX_CONTENT_LENGTH=200)
    client = app.test_client()
    learned(client, rpc(1))
    padded = rpc(2) + b" " * 500  # the same request to the shape, over the limit
    answer = client.post("/mcp", data=padded, headers=HEADERS)
    assert answer.status_code == 413
    assert answer.get_json()["error"]["message"] == "Request body too large."


def test_large_bodies_and_header_floods_are_not_learned() -> None:
    _, app = make()
    client = app.test_client()
    big = rpc(1, params={"junk": "x" * 20_000})
    learned(client, big)
    flood = {**HEADERS, **{f"X-Junk-{i}": "y" * 400 for i in range(20)}}
    learned(client, rpc(1), flood)
    counted = Counted(app)
    assert client.post("/mcp", data=big, headers=HEADERS).status_code == 200
    assert client.post("/mcp", data=rpc(2), headers=flood).status_code == 200
    assert counted.count == 2  # both through Flask: neither was kept
    fast: Any = app.extensions["tooldiscovery.fast"]
    assert not fast._posts


def test_an_odd_content_length_is_read_as_werkzeug_reads_it() -> None:
    _, app = make()
    client = app.test_client()
    learned(client, rpc(1))
    overrides = {"CONTENT_LENGTH": "+" + str(len(rpc(2)))}  # int() reads it; werkzeug reads 0
    odd = client.post("/mcp", data=rpc(2), headers=HEADERS, environ_overrides=overrides)
    assert odd.status_code == full_path_status(app, rpc(2), overrides) == 400


def full_path_status(app: Flask, data: bytes, overrides: dict[str, str]) -> int:
    def receiver(sender: Any, **extra: Any) -> None:
        return None

    request_started.connect(receiver, app)
    try:
        return app.test_client().post("/mcp", data=data, headers=HEADERS, environ_overrides=overrides).status_code
    finally:
        request_started.disconnect(receiver, app)


def test_a_body_cut_short_is_parsed_as_it_came() -> None:
    _, app = make()
    data = rpc(1, "tools/call", {"name": "tool_2", "arguments": {}})
    answer = app.test_client().post("/mcp", data=data, headers=HEADERS,
                                    environ_overrides={"CONTENT_LENGTH": str(len(data) + 10)})
    assert answer.status_code == 200 and answer.get_json()["result"]["content"][0]["text"] == "2"


def test_behind_a_proxy_one_lesson_serves_every_client_address() -> None:
    """Behind ProxyFix (the deployment recipe's, put on after init_app), every client's request
    carries its own ``X-Forwarded-For``: the learned ``tools/list`` is the same for all of them (its
    answer does not depend on the address), so one lesson serves every client and the fast path's
    table does not grow with the addresses; each still gets its own id and what the full path
    answers, and a caller with credentials still goes through Flask. Over real HTTP."""
    from werkzeug.middleware.proxy_fix import ProxyFix

    from .conftest import live_server

    _, app = make()
    app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1)  # type: ignore[method-assign]
    fast: Any = app.extensions["tooldiscovery.fast"]
    with live_server(app) as base:
        def post(id_: Any, address: str, **extra: str) -> dict[str, Any]:
            headers = {**HEADERS, "X-Forwarded-For": address, "X-Forwarded-Proto": "http",
                       "X-Real-IP": address, **extra}
            req = urllib.request.Request(f"{base}/mcp", data=rpc(id_), method="POST", headers=headers)
            with urllib.request.urlopen(req, timeout=10) as resp:
                return dict(json.loads(resp.read()))

        first = post(0, "10.0.0.1")
        post(0, "10.0.0.2")  # the endpoint was marked; this one is learned
        counted = Counted(app)
        for i in range(1, 1500):  # more client addresses than the table holds entries
            answer = post(i, f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")
            assert answer["id"] == i and answer["result"] == first["result"], answer
        assert counted.count == 0, counted.count  # every one answered by the one lesson
        assert len(fast._posts) == 1, len(fast._posts)
        expected = full_path_answer(app, rpc(7), {**HEADERS, "X-Forwarded-For": "10.9.9.9"})
        assert json.loads(expected) == post(7, "10.9.9.9")
        before = counted.count  # (the full path's answer above reached Flask)
        post(8, "10.0.0.3", Authorization="Bearer whoever")  # another header: not given that lesson
        assert counted.count == before + 1


def test_a_call_read_by_the_fast_path_keeps_its_body_for_the_app() -> None:
    """Once a list is learned, the fast path reads every POST to the endpoint before Flask (to tell
    a list from a call) and hands those bytes to the call: the app can still read the body whole,
    and a request whose body was read since (a stream another reader consumed) is read as it is."""
    d, app = make()

    @d.tool
    def echo(context: ToolContext) -> str:
        """The body the call came with."""
        assert context.request is not None
        return context.request.get_data(as_text=True)

    client = app.test_client()
    learned(client, rpc(1))
    data = rpc(2, "tools/call", {"name": "echo", "arguments": {}})
    counted = Counted(app)
    answer = client.post("/mcp", data=data, headers=HEADERS)
    assert counted.count == 1  # a call: through Flask, after the fast path looked at its body
    assert answer.get_json()["result"]["content"][0]["text"] == data.decode()
    assert answer.get_json()["id"] == 2
