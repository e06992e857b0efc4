"""No client mistake gets a 500 or a non-JSON answer, on any endpoint of any dialect."""

from __future__ import annotations

import pytest

from .apps.sample import create_app

BODIES = [
    b"", b"null", b"[]", b'"text"', b"42", b"{", b'{"a":', b"\xff\xfe\x00", b"{}" * 3,
    b"[" * 100_000, b'{"a":' * 50_000, b'{"parameters": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"request": {"tool_id": "ExampleTools.add", "input": ' + b"[" * 3000 + b"]" * 3000 + b"}}",
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": "x"}}',
]
POSTS = ["/opal/tools/add", "/opal/discovery/tools/add", "/oxp/tools/call", "/api/v1/tools/execute",
         "/explorer/tools/add/call", "/explorer/tools/add/validate", "/mcp"]


@pytest.fixture(scope="module")
def client():
    return create_app({"TESTING": True}).test_client()


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("body", BODIES, ids=lambda b: repr(b[:20]))
def test_bad_bodies(client, path, body) -> None:
    r = client.post(path, data=body, content_type="application/json")
    assert r.status_code < 500, (path, body[:30], r.status_code, r.get_data(as_text=True)[:200])
    if r.status_code != 202:
        assert r.mimetype == "application/json"
        r.get_json()
    assert "Traceback" not in r.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/opal/tools/add", "/oxp/tools/call", "/api/v1/tools/execute",
                                  "/explorer/tools/add/call", "/mcp"])
def test_wrong_content_type_is_still_json(client, path) -> None:
    r = client.post(path, data="a=1&b=2", content_type="application/x-www-form-urlencoded")
    assert r.status_code < 500 and r.mimetype == "application/json"


@pytest.mark.parametrize("path", ["/opal/nope", "/oxp/nope", "/explorer/tools/nope", "/api/v1/tools/nope"])
def test_unknown_paths_under_a_prefix(client, path) -> None:
    r = client.get(path)
    assert r.status_code == 404


@pytest.mark.parametrize("trace_id", ["\n", "a b", "x\r\nSet-Cookie: s=1", "é", "t" * 129])
def test_a_body_trace_id_that_could_break_a_header_or_the_log_is_not_taken(client, trace_id) -> None:
    """OXP's call carries a ``trace_id``: taken only when it is one the header would take (else the
    request's own id answers), never copied into ``X-Trace-Id`` as it came (a newline was a 500)."""
    body = {"request": {"tool_id": "ExampleTools.add", "trace_id": trace_id, "input": {"a": 1, "b": 2}}}
    r = client.post("/oxp/tools/call", json=body)
    assert r.status_code == 200, r.get_data(as_text=True)[:200]
    assert r.headers["X-Trace-Id"] != trace_id and "\n" not in r.headers["X-Trace-Id"]
    good = client.post("/oxp/tools/call", json={**body, "request": {**body["request"], "trace_id": "abc-123"}})
    assert good.status_code == 200 and good.headers["X-Trace-Id"] == "abc-123"


HUGE = "Q" * 100_000
UNKNOWN_TOOL = [
    ("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": HUGE, "arguments": {}}}),
    ("/opal/tools/" + HUGE[:8000], {"parameters": {}}),
    ("/oxp/tools/call", {"request": {"tool_id": "ExampleTools." + HUGE, "input": {}}}),
    ("/api/v1/tools/execute", {"tool_name": HUGE, "parameters": {}}),
    ("/explorer/tools/" + HUGE[:8000] + "/call", {"arguments": {}}),
]


@pytest.mark.parametrize(("path", "body"), UNKNOWN_TOOL, ids=["mcp", "opal", "oxp", "tdp", "explorer"])
def test_an_unknown_tools_huge_name_is_not_echoed_back(client, path, body) -> None:
    """A tool name no tool has, 100 kB long (8 kB in a URL): the error says the tool is unknown in a
    short answer, repeating at most the name's first 128 characters."""
    r = client.post(path, json=body, headers={"MCP-Protocol-Version": "2025-11-25"})
    text = r.get_data(as_text=True)
    assert r.status_code < 500 and r.mimetype == "application/json", (r.status_code, text[:200])
    assert len(text) < 1000 and "Q" * 129 not in text, (path[:40], len(text), text[:300])
    assert "not found" in text.lower() or "unknown" in text.lower(), text[:300]


def test_mcp_errors_never_echo_a_huge_name_or_uri() -> None:
    """Whatever a JSON-RPC error repeats of the request (an unknown prompt's name, a resource's URI),
    it repeats at most 1024 characters of it: a 100 kB one gets a short answer."""
    from flask import Flask

    from flask_tooldiscovery import ToolDiscovery

    discovery = ToolDiscovery()

    @discovery.prompt()
    def greet(who: str) -> str:
        """Greet someone."""
        return who

    app = Flask("echo")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"])
    discovery.init_app(app)
    client = app.test_client()
    for method, params in [
        ("prompts/get", {"name": HUGE}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": HUGE}, "argument": {"name": "a", "value": "b"}}),
        ("completion/complete", {"ref": {"type": "ref/resource", "uri": "x://" + HUGE},
                                 "argument": {"name": "a", "value": "b"}}),
    ]:
        r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                        headers={"MCP-Protocol-Version": "2025-11-25"})
        error = r.get_json()["error"]
        assert error["code"] == -32602, error
        assert len(r.data) < 3000 and "Q" * 1025 not in r.get_data(as_text=True), (method, len(r.data))
