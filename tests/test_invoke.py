"""The one invocation path: validation messages, coercion, sync/async, errors, timing."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
from typing import Literal

import pytest

from flask_tooldiscovery import ToolContext, ToolDiscovery, ToolError
from flask_tooldiscovery.runtime.invoke import GENERIC_FAILURE
from flask_tooldiscovery.schema.coerce import coerce_value

#: Event loops the async tool ran on.
LOOPS: list[asyncio.AbstractEventLoop] = []


@pytest.fixture
def setup(make_app):
    d = ToolDiscovery()

    @d.tool
    def add(a: int, b: float = 1.5) -> float:
        return a + b

    @d.tool
    def shape(tags: list[str], opts: dict[str, int], flag: bool,
              mode: Literal["x", "y"] = "x", note: str | None = None) -> dict:
        return {"tags": tags, "opts": opts, "flag": flag, "mode": mode, "note": note}

    @d.tool
    def email(to: dict) -> str:
        return "sent"

    @d.tool(input_schema={"type": "object", "properties": {
        "addr": {"type": "string", "format": "email"},
        "nested": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}})
    def fmt(**kw) -> dict:
        return kw

    @d.tool(timeout=0.05)
    async def slow() -> str:
        await asyncio.sleep(2)
        return "late"

    @d.tool
    async def async_ok(x: int, ctx: ToolContext) -> dict:
        await asyncio.sleep(0)
        LOOPS.append(asyncio.get_running_loop())
        return {"x": x, "call_id": ctx.call_id, "dialect": ctx.dialect}

    @d.tool
    def fails_on_purpose() -> None:
        raise ToolError("Quota exceeded", developer_message="tenant 7 at 100%", can_retry=True,
                        retry_after_ms=500, additional_prompt_content="Try tomorrow")

    @d.tool
    def crashes() -> None:
        raise RuntimeError("secret database password hunter2 in traceback")

    app = make_app(d, TOOLDISCOVERY_DIALECTS=[])
    return d, app


def run(setup, name, args, **kw):
    d, app = setup
    with app.test_request_context():
        return d.call(d.tools().get(name), args, d.make_context("test"), **kw)


def test_success_and_duration(setup) -> None:
    out = run(setup, "add", {"a": 2})
    assert out.ok and out.value == 3.5
    assert out.duration_ms >= 0 and out.call_id


def test_validation_messages_per_parameter_with_pointers(setup) -> None:
    out = run(setup, "shape", {"tags": "nope", "opts": {"k": "v"}, "mode": "z", "extra": 1})
    assert out.status == "invalid"
    by_path = {e.path: e for e in out.errors}
    assert set(by_path) == {"/tags", "/opts/k", "/mode", "/flag", "/extra"}
    assert by_path["/flag"].keyword == "required"
    assert by_path["/flag"].message == "Missing required parameter."
    assert by_path["/extra"].keyword == "additionalProperties"
    assert by_path["/tags"].message == '"nope" is not of type \'array\''
    nulls = run(setup, "add", {"a": None})
    assert nulls.errors[0].message == "null is not of type 'integer'"
    assert by_path["/mode"].keyword == "enum"
    assert set(out.parameter_errors) == {"tags", "opts", "mode", "flag", "extra"}
    assert "flag: Missing required parameter;" in out.error_message


def test_format_checked_and_nested_pointer(setup) -> None:
    out = run(setup, "fmt", {"addr": "not-an-email", "nested": {}})
    paths = {e.path: e.keyword for e in out.errors}
    assert paths == {"/addr": "format", "/nested/n": "required"}
    assert out.parameter_errors["nested"] == "Missing required property 'n'."


def test_arguments_must_be_an_object(setup) -> None:
    out = run(setup, "add", [1, 2])
    assert out.status == "invalid" and out.errors[0].path == ""


def test_coercion_of_strings(setup) -> None:
    out = run(setup, "shape", {"tags": "['a', 'b']", "opts": '{"k": 2}', "flag": "True",
                               "note": "None"}, coerce=True)
    assert out.ok, out.errors
    assert out.value == {"tags": ["a", "b"], "opts": {"k": 2}, "flag": True, "mode": "x",
                         "note": None}
    assert run(setup, "add", {"a": "7", "b": "0.5"}, coerce=True).value == 7.5
    # Not parseable: left as the string, so validation names it.
    bad = run(setup, "add", {"a": "seven"}, coerce=True)
    assert bad.status == "invalid" and "a" in bad.parameter_errors
    # Without coercion strings stay strings.
    assert run(setup, "add", {"a": "7"}).status == "invalid"


@pytest.mark.parametrize("value, schema, expected", [
    ("12", {"type": "integer"}, 12),
    ("1.5", {"type": "number"}, 1.5),
    ("nan", {"type": "number"}, "nan"),
    ("false", {"type": "boolean"}, False),
    ("maybe", {"type": "boolean"}, "maybe"),
    ("[1, 2]", {"type": "array", "items": {"type": "integer"}}, [1, 2]),
    ('["1", "2"]', {"type": "array", "items": {"type": "integer"}}, [1, 2]),
    ("(1, 2)", {"type": "array"}, [1, 2]),
    ("{'a': True}", {"type": "object"}, {"a": True}),
    ("[1]", {"type": "object"}, "[1]"),
    ("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),
    ("5", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, 5),
    ("x", {"type": "string"}, "x"),
])
def test_coerce_value(value, schema, expected) -> None:
    assert coerce_value(value, schema) == expected


def test_async_tool_gets_context_and_no_loop_leaks(setup) -> None:
    before = threading.active_count()
    LOOPS.clear()
    for _ in range(20):
        out = run(setup, "async_ok", {"x": 3})
        assert out.value["x"] == 3 and out.value["dialect"] == "test"
        assert out.value["call_id"] == out.call_id
    assert threading.active_count() <= before + 1
    # Every call ran on this thread's one reusable loop, which holds no task once a call returns
    # (tests/test_async_bridge.py: leftovers cancelled, loop closed with its thread).
    assert len(LOOPS) == 20 and all(loop is LOOPS[0] for loop in LOOPS)
    assert not LOOPS[0].is_running() and not asyncio.all_tasks(LOOPS[0])


def test_async_timeout_enforced(setup) -> None:
    out = run(setup, "slow", {})
    assert out.status == "failure"
    assert out.failure.can_retry and "0.05 seconds" in out.failure.message
    assert out.duration_ms < 1500


def test_tool_error_is_structured(setup) -> None:
    out = run(setup, "fails_on_purpose", {})
    f = out.failure
    assert (f.message, f.developer_message, f.can_retry, f.retry_after_ms,
            f.additional_prompt_content, f.expected) == (
        "Quota exceeded", "tenant 7 at 100%", True, 500, "Try tomorrow", True)


def test_unexpected_exception_is_generic_and_logged(setup, caplog) -> None:
    with caplog.at_level(logging.ERROR):
        out = run(setup, "crashes", {})
    assert out.status == "failure"
    assert out.failure.message == GENERIC_FAILURE and not out.failure.expected
    assert out.failure.developer_message is None
    assert "hunter2" not in repr(out)
    assert any("hunter2" in (r.exc_text or "") or (r.exc_info and "hunter2" in str(r.exc_info[1]))
               for r in caplog.records)


def test_calls_logged_without_arguments(setup, caplog) -> None:
    with caplog.at_level(logging.INFO):
        run(setup, "shape", {"tags": ["secret-tag-value"], "opts": {}, "flag": True})
    lines = [r.getMessage() for r in caplog.records if "tool call" in r.getMessage()]
    assert lines and "tool=shape" in lines[0] and "outcome=success" in lines[0]
    assert "dialect=test" in lines[0] and "duration_ms=" in lines[0]
    assert not any("secret-tag-value" in r.getMessage() for r in caplog.records)


def test_non_json_return_value_is_a_failure(make_app) -> None:
    d = ToolDiscovery()

    @d.tool
    def weird() -> object:
        return object()

    app = make_app(d, TOOLDISCOVERY_DIALECTS=[])
    with app.test_request_context():
        out = d.call(d.tools().get("weird"), {}, d.make_context("t"))
    assert out.status == "failure" and out.failure.message == GENERIC_FAILURE


def test_bad_value_for_python_type_is_invalid_not_crash(make_app) -> None:


    d = ToolDiscovery()

    @d.tool
    def when(day: dt.date) -> str:
        return day.isoformat()

    app = make_app(d, TOOLDISCOVERY_DIALECTS=[])
    with app.test_request_context():
        ok = d.call(d.tools().get("when"), {"day": "2026-02-03"}, d.make_context("t"))
        bad = d.call(d.tools().get("when"), {"day": "2026-02-30"}, d.make_context("t"))
    assert ok.value == "2026-02-03"
    assert bad.status == "invalid"


def test_async_tool_called_from_code_with_a_running_loop(setup) -> None:
    d, app = setup

    async def inside_a_loop():
        with app.test_request_context():
            return d.call(d.tools().get("async_ok"), {"x": 9}, d.make_context("test"))

    out = asyncio.run(inside_a_loop())
    assert out.ok and out.value["x"] == 9


def test_joined_messages_do_not_double_their_punctuation(setup) -> None:
    out = run(setup, "shape", {"mode": "z"})
    assert ".;" not in out.error_message and out.error_message.endswith(".")
    assert "flag: Missing required parameter; " in out.error_message


def test_bytes_travel_as_base64(make_app) -> None:
    import base64

    d = ToolDiscovery()

    @d.tool
    def reverse(data: bytes) -> bytes:
        """Reverse bytes.

        Args:
            data: The bytes, base64-encoded.
        """
        return data[::-1]

    tool = d.tools().get("reverse")
    assert tool.input_schema["properties"]["data"]["contentEncoding"] == "base64"
    assert tool.output_schema == {"type": "string", "contentEncoding": "base64"}
    app = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"])
    c = app.test_client()
    r = c.post("/opal/tools/reverse", json={"data": base64.b64encode(b"\x00\xffab").decode()})
    assert r.status_code == 200 and base64.b64decode(r.get_json()) == b"ba\xff\x00"
    bad = c.post("/opal/tools/reverse", json={"data": "not base64!"})
    assert bad.status_code == 400 and bad.get_json()["parameter_errors"] == {"data": "not valid base64 text"}


def test_a_sync_tool_runs_on_the_callers_thread_and_past_its_deadline_answers_what_it_did(caplog) -> None:
    """No thread hop: a sync tool runs on the thread that calls (a request's, in a server), with
    or without a deadline. It cannot be stopped, so past its deadline the call waits for it and
    answers its outcome, with a warning; an async tool is cancelled at its deadline."""
    import time

    from flask_tooldiscovery.runtime.invoke import invoke
    from flask_tooldiscovery.tools.function_tools import tool_from_function
    from flask_tooldiscovery.tools.model import ToolContext

    ran_on: list[int] = []

    def quick(n: int) -> int:
        """Quick."""
        ran_on.append(threading.get_ident())
        return n

    def slow() -> str:
        """Past its deadline."""
        time.sleep(0.3)
        return "finished"

    for timeout in (5, None):
        tool = tool_from_function(quick, {"timeout": timeout} if timeout else {})
        assert invoke(tool, {"n": 3}, ToolContext(call_id="c"), default_timeout=25).value == 3
    assert ran_on == [threading.get_ident()] * 2
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        late = invoke(tool_from_function(slow, {"timeout": 0.05}), {}, ToolContext(call_id="late"))
    assert (late.status, late.value) == ("success", "finished")
    assert "tool slow ran" in caplog.text and "past its deadline of 0.05" in caplog.text
    assert "call_id=late" in caplog.text
