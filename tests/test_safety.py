"""Safe by default, over HTTP on every dialect: cross-site requests refused, bounded answers,
inputs that used to crash a tool answered with 4xx, strict settings, safe names and ids, trace ids."""

from __future__ import annotations

import json
import logging

import pytest
from flask import Flask

from flask_tooldiscovery import RegistrationError, ToolDiscovery

# (dialect, path, wrap(arguments) -> request body) for one call of the tool named in the path.
CALLS = {
    "opal": ("/opal/tools/{name}", lambda name, args: {"parameters": args}),
    "tdp": ("/api/v1/tools/execute", lambda name, args: {"tool_name": name, "arguments": args}),
    "explorer": ("/explorer/tools/{name}/call", lambda name, args: args),
    "oxp": ("/oxp/tools/call", lambda name, args: {"request": {"tool_id": f"Safe.{name}", "input": args}}),
    "mcp": ("/mcp", lambda name, args: {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                        "params": {"name": name, "arguments": args}}),
}
DIALECTS = sorted(CALLS)


@pytest.fixture
def ran() -> list[str]:
    return []


@pytest.fixture
def app(ran) -> Flask:
    d = ToolDiscovery()

    @d.tool
    def pick(limit: int, items: list[int] | None = None) -> int:
        """Pick the first ``limit``.

        Args:
            limit: How many.
            items: What to pick from.
        """
        ran.append("pick")
        assert type(limit) is int
        return limit

    @d.tool
    def add(a: float, b: float) -> float:
        """Add.

        Args:
            a: First.
            b: Second.
        """
        ran.append("add")
        return a + b

    @d.tool
    def tag(tags: list[str]) -> int:
        """Count tags.

        Args:
            tags: The tags.
        """
        return len(tags)

    @d.tool
    def boom() -> None:
        """Fail unexpectedly."""
        raise RuntimeError("secret internals")

    app = Flask("safe")
    app.config.update(TESTING=True, TOOLDISCOVERY_ALLOW_EXECUTE=True)
    d.init_app(app)
    return app


def call(client, dialect: str, name: str, args, **kwargs):
    path, wrap = CALLS[dialect]
    return client.post(path.format(name=name), json=wrap(name, args), **kwargs)


def succeeded(dialect: str, response) -> bool:
    body = response.get_json()
    if dialect == "mcp":
        return "result" in body and body["result"]["isError"] is False
    if dialect == "oxp":
        return response.status_code == 200 and body["result"]["success"] is True
    return response.status_code == 200 and (body.get("isError") is False if dialect == "explorer" else True)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_cross_site_simple_requests_run_nothing(app, ran, dialect) -> None:
    """A <form enctype=text/plain> or a fetch with a "simple" content type skips the CORS
    preflight; the route refuses it (415) and a foreign Origin (403) before any tool runs."""
    c = app.test_client()
    path, wrap = CALLS[dialect]
    body = json.dumps(wrap("add", {"a": 1, "b": 2}))
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        r = c.post(path.format(name="add"), data=body, content_type=ctype)
        assert r.status_code == 415, (ctype, r.status_code)
        assert r.mimetype == "application/json"
    r = c.post(path.format(name="add"), data=body, content_type="application/json",
               headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    r = c.post(path.format(name="add"), data=body, content_type="application/json",
               headers={"Host": "rebind.evil.example", "Origin": "http://rebind.evil.example"})
    assert r.status_code == 421
    assert ran == []
    same_origin = call(c, dialect, "add", {"a": 1, "b": 2}, headers={"Origin": "http://localhost"})
    assert succeeded(dialect, same_origin) and ran == ["add"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_json_answers_are_not_sniffed_and_carry_a_trace_id(app, dialect) -> None:
    c = app.test_client()
    r = call(c, dialect, "add", {"a": 1, "b": 2}, headers={
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["X-Trace-Id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert call(c, dialect, "add", {"a": 1, "b": 2}).headers["X-Trace-Id"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_unexpected_failure_is_logged_with_call_and_trace_id(app, dialect, caplog) -> None:
    c = app.test_client()
    with caplog.at_level(logging.INFO):
        r = call(c, dialect, "boom", {}, headers={"X-Trace-Id": "trace-abc-123"})
    assert "secret internals" not in r.get_data(as_text=True)
    assert r.headers["X-Trace-Id"] == "trace-abc-123"
    errors = [rec for rec in caplog.records if rec.levelno == logging.ERROR]
    assert errors and all("trace-abc-123" in rec.getMessage() and "call_id=" in rec.getMessage()
                          for rec in errors)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_integral_floats_reach_int_parameters_as_int(app, ran, dialect) -> None:
    r = call(app.test_client(), dialect, "pick", {"limit": 3.0, "items": [1.0, 2]})
    assert succeeded(dialect, r), r.get_data(as_text=True)
    assert ran == ["pick"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999999"])
def test_non_finite_numbers_are_refused_at_parse_time(app, ran, dialect, number) -> None:
    path, wrap = CALLS[dialect]
    body = json.dumps(wrap("add", {"a": 1, "b": 0})).replace('"b": 0', f'"b": {number}')
    assert number in body
    r = app.test_client().post(path.format(name="add"), data=body, content_type="application/json")
    assert r.status_code == 400 and r.mimetype == "application/json"
    assert ran == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_infinite_result_is_a_failure_not_invalid_json(app, dialect) -> None:
    r = call(app.test_client(), dialect, "add", {"a": 1e308, "b": 1e308})
    text = r.get_data(as_text=True)
    assert "Infinity" not in text
    json.loads(text)  # strict JSON
    assert not succeeded(dialect, r)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_validation_errors_are_capped(app, dialect) -> None:
    r = call(app.test_client(), dialect, "tag", {"tags": [1] * 20_000})
    assert len(r.get_data()) < 20_000
    assert "more errors not shown" in r.get_data(as_text=True)


def test_validate_endpoint_caps_errors_too(app) -> None:
    r = app.test_client().post("/explorer/tools/tag/validate", json={"tags": [1] * 5_000})
    body = r.get_json()
    assert body["valid"] is False and len(body["errors"]) == 51
    assert body["errors"][-1]["message"] == "... and 4950 more errors not shown."
    r = app.test_client().post("/explorer/tools/tag/validate", json={"tags": [1] * 50_000})
    assert r.get_json()["errors"][-1]["message"] == "... and at least 10000 more errors not shown."


def test_oxp_schema_must_be_a_string(app) -> None:
    c = app.test_client()
    for value in ({}, [], 1, None):
        r = c.post("/oxp/tools/call", json={"$schema": value, "request": {"tool_id": "Safe.add",
                                                                          "input": {"a": 1, "b": 2}}})
        assert r.status_code == (200 if value is None else 400), value


def test_mcp_cursor_that_decodes_to_a_huge_number_is_invalid_params(app) -> None:
    import base64

    for payload in (b'{"o": 1e400}', b'{"o": 99999999999999999999999999}', b'{"o": -1}', b"[]"):
        cursor = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        r = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                                 "params": {"cursor": cursor}})
        assert r.get_json()["error"]["code"] == -32602, payload


def test_mcp_batches_are_bounded_and_gone_from_2025_06_18(app) -> None:
    c = app.test_client()
    ping = {"jsonrpc": "2.0", "method": "ping"}
    r = c.post("/mcp", json=[{**ping, "id": i} for i in range(3)], headers={"MCP-Protocol-Version": "2025-03-26"})
    assert r.status_code == 200 and len(r.get_json()) == 3
    r = c.post("/mcp", json=[{**ping, "id": i} for i in range(11)])
    assert r.status_code == 400 and "at most 10" in r.get_json()["error"]["message"]
    for version in ("2025-06-18", "2025-11-25"):
        r = c.post("/mcp", json=[{**ping, "id": 1}], headers={"MCP-Protocol-Version": version})
        assert r.status_code == 400 and "batches" in r.get_json()["error"]["message"]
    many_booms = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "boom"}} for i in range(5000)]
    assert c.post("/mcp", json=many_booms).status_code == 400


def test_oxp_id_collisions_are_refused_with_both_names() -> None:
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="get.user")
    app = Flask("misc")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["oxp"])
    d.init_app(app)
    with pytest.raises(RegistrationError) as info:
        d.add_tool(lambda: 2, name="get_user")
    assert "'get.user'" in str(info.value) and "'get_user'" in str(info.value)
    d.add_tool(lambda: 3, name="get_user", toolkit="Other")  # another toolkit: another id
    before = ToolDiscovery()
    before.add_tool(lambda: 1, name="a-b")
    before.add_tool(lambda: 1, name="a_b")
    other = Flask("misc")
    other.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["oxp"])
    with pytest.raises(RegistrationError, match=r"'a-b'.*'a_b'"):
        before.init_app(other)


@pytest.mark.parametrize("name", ["x/../../opal/discovery", "a..b", "", "x" * 129, "t\u043e\u043el",
                                  "white space", "a/b"])
def test_unsafe_tool_names_are_refused(name) -> None:
    with pytest.raises(RegistrationError):
        ToolDiscovery().add_tool(lambda: 1, name=name)


def test_unsafe_provided_names_are_skipped_with_a_warning(caplog) -> None:
    tools = [{"name": "fine", "inputSchema": {"type": "object"}},
             {"name": "x/../../opal/discovery", "inputSchema": {"type": "object"}},
             {"name": "t\u043e\u043el", "inputSchema": {"type": "object"}}]
    app = Flask("p")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"])
    ToolDiscovery(tools=tools).init_app(app)
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        names = [t["name"] for t in app.test_client().get("/explorer/tools").get_json()]
    assert names == ["fine"]
    assert sum("skipped" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_empty_post_without_a_type_is_not_refused_but_still_checked(app, ran, dialect) -> None:
    """Clients that send no body for a tool without arguments (UTCP's OpenAPI converter) send no
    Content-Type either; that request carries nothing a browser could smuggle, and the Origin check
    still applies."""
    c = app.test_client()
    path, _ = CALLS[dialect]
    if dialect not in ("opal", "explorer"):  # the others' bodies name the tool: never empty
        assert c.post(path.format(name="boom")).status_code in (400, 415)
        return
    r = c.post(path.format(name="boom"))
    assert r.status_code == 500 and "secret internals" not in r.get_data(as_text=True)  # it ran: no 415
    assert c.post(path.format(name="boom"), headers={"Origin": "https://evil.example"}).status_code == 403
    assert c.post(path.format(name="boom"), data=b"", content_type="text/plain").status_code == 415
