"""The hot path's shortcuts answer exactly what the long way answers.

Each call builds a few things straight instead of through the general machinery (a marshmallow
dump, ``json.loads`` with hooks, werkzeug's Accept parsing, a schema walk per call); each shortcut
is compared here with the long way over the same inputs, so a shortcut that drifts fails here.
"""

from __future__ import annotations

import enum
import json
import random

import pytest
from marshmallow import ValidationError
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from flask_tooldiscovery import File, Image, ResourceLink
from flask_tooldiscovery.dialects import oxp
from flask_tooldiscovery.dialects.content_blocks import LATEST, content_blocks
from flask_tooldiscovery.dialects.explorer import dialect as explorer
from flask_tooldiscovery.schema.coerce import coercion, to_jsonable
from flask_tooldiscovery.serving.wire import parse_json
from flask_tooldiscovery.tools.results import is_rich

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16

VALUES = [
    "plain text", "", 0, 3.5, True, None, {"city": "Oslo", "days": 2}, {}, [], [1, "two", None],
    {"nested": {"list": [{"a": 1}]}}, to_jsonable(Image(PNG, "image/png")),
    to_jsonable(File(b"a,b\n", "text/csv", name="t.csv")), to_jsonable(ResourceLink("https://example.com/r", "r")),
    [to_jsonable(Image(PNG, "image/png")), "caption"],
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("meta", [None, {"_trace_id": "abc"}])
def test_explorer_success_body_is_the_schema_dump(value, meta) -> None:
    long_way = explorer._RESULT.dump({
        "content": content_blocks(value, LATEST), "isError": False, "_meta": meta,
        "structuredContent": value if isinstance(value, (dict, list)) and not is_rich(value) else None})
    straight = explorer.success_body(value, meta)
    assert straight == long_way
    assert json.dumps(straight) == json.dumps(long_way)  # key order too: clients see it


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_oxp_success_result_is_the_schema_dump(value) -> None:
    long_way = oxp._RESULT.dump({"call_id": "c-1", "duration": 1.25, "success": True, "value": value, "error": None})
    straight = {"call_id": "c-1", "duration": 1.25, "success": True, "value": value}
    assert json.dumps(straight) == json.dumps(long_way)


OXP_REQUESTS = [
    {"tool_id": "Kit.tool"}, {"tool_id": "Kit.tool@2"}, {"tool_id": "Kit.tool@1.2.3", "input": {"a": 1}},
    {"tool_id": "Kit.tool", "call_id": "c", "trace_id": "t", "input": {}, "context": {}},
    {"tool_id": "Kit.tool", "context": {"user_id": "u", "other": [1]}},
    {"tool_id": "Kit.tool\n"}, {"tool_id": "Kit"}, {"tool_id": 7}, {"tool_id": None}, {},
    {"tool_id": "Kit.tool", "extra": 1}, {"tool_id": "Kit.tool", "call_id": None},
    {"tool_id": "Kit.tool", "call_id": 3},
    {"tool_id": "Kit.tool", "input": None}, {"tool_id": "Kit.tool", "input": []}, {"tool_id": "Kit.tool", "input": "x"},
    {"tool_id": "Kit.tool", "context": None}, {"tool_id": "Kit.tool", "context": {"user_id": 5}},
    {"tool_id": "Kit.tool", "context": {"secrets": [{"id": "k", "value": "v"}]}},
    {"tool_id": "Kit.tool", "context": {"authorization": [{"id": "p"}]}},
]


def _loaded(raw):
    try:
        return oxp._CALL_REQUEST.load(raw)
    except ValidationError:
        return "refused"


@pytest.mark.parametrize("raw", OXP_REQUESTS, ids=range(len(OXP_REQUESTS)))
def test_oxp_plain_call_requests_are_what_the_schema_loads(raw) -> None:
    if oxp._plain_call(raw):
        assert _loaded(raw) == raw


def test_oxp_plain_call_check_on_random_requests() -> None:
    rng = random.Random(7)
    pieces = [None, 1, True, "x", "Kit.tool", "Kit.t@1", [], {}, {"user_id": "u"}, {"a": 1}, {"user_id": 2}]
    keys = ["tool_id", "call_id", "trace_id", "input", "context", "other"]
    plain = 0
    for _ in range(3000):
        raw = {k: rng.choice(pieces) for k in rng.sample(keys, rng.randint(0, 4))}
        if rng.random() < 0.5:
            raw["tool_id"] = rng.choice(["Kit.tool", "Kit.tool@3", "bad id", "Kit.tool\n"])
        if oxp._plain_call(raw):
            plain += 1
            assert _loaded(raw) == raw, raw
    assert plain > 100  # the check said yes often enough to mean something


BODIES = [b'{"a": 1}', b'[1, 2.5, "x"]', b'"text"', b"3", b"null", b"\xef\xbb\xbf{\"bom\": true}",
          '{"a": "\u00e9"}'.encode("utf-16"), b'{"a": NaN}', b'{"a": 1e999}', b"{", b"", b"\xff\xfe\xff",
          b"[" * 65 + b"]" * 65, b"[" * 64 + b"]" * 64, b'{"s": "' + b"[" * 200 + b'"}']


@pytest.mark.parametrize("raw", BODIES, ids=range(len(BODIES)))
def test_parse_json_reads_what_json_loads_reads(raw) -> None:
    def long_way():
        value = json.loads(raw, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
        depth, stack = 0, [(value, 1)]
        while stack:
            node, d = stack.pop()
            if isinstance(node, (dict, list)):
                depth = max(depth, d)
                stack.extend((c, d + 1) for c in (node.values() if isinstance(node, dict) else node))
        if depth > 64 or any(isinstance(v, float) and v in (float("inf"), float("-inf")) for v in _leaves(value)):
            raise ValueError("refused")
        return value

    try:
        expected = long_way()
    except (ValueError, RecursionError):
        with pytest.raises(ValueError):
            parse_json(raw)
        return
    assert parse_json(raw) == expected


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def test_parse_json_refuses_a_bom_in_text_as_json_loads_does() -> None:
    with pytest.raises(ValueError, match="BOM"):
        parse_json("\ufeff{}")


ACCEPTS = [None, "", "*/*", "application/json", "text/event-stream", "application/json, text/event-stream",
           "text/event-stream;q=0.5, application/json;q=0.4", "text/*", "application/*;q=0", "TEXT/EVENT-STREAM",
           "text/event-stream;q=0", "text/html, */*;q=0.1"]


@pytest.mark.parametrize("header", ACCEPTS)
def test_accept_answers_are_werkzeugs(header) -> None:
    from flask import Flask

    from flask_tooldiscovery.serving.wire import accepts, best_accepted

    app = Flask(__name__)
    headers = {} if header is None else {"Accept": header}
    parsed = parse_accept_header(header, MIMEAccept)
    for _ in range(2):  # the second time from the memory
        with app.test_request_context("/", headers=headers) as ctx:
            assert accepts(ctx.request, "text/event-stream") == parsed["text/event-stream"]
            assert best_accepted(ctx.request, ("application/json", "text/event-stream")) == parsed.best_match(
                ["application/json", "text/event-stream"])


SCHEMA = {"type": "object", "properties": {
    "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"}, "s": {"type": "string"},
    "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "list": {"type": "array", "items": {"type": "integer"}},
    "obj": {"type": "object", "properties": {"deep": {"type": "boolean"}}}, "e": {"enum": [1, 2]}},
    "additionalProperties": {"type": "number"}}

#: (property, text a client sent, what the tool receives): strings become the declared type when
#: they spell one, and stay strings otherwise (validation then says what is wrong).
COERCED = [
    ("n", "1", 1), ("n", " 2 ", 2), ("n", "-3", -3), ("n", "007", 7), ("n", "1.5", "1.5"), ("n", "x", "x"),
    ("x", "1.5", 1.5), ("x", "4", 4), ("x", "nan", "nan"), ("x", "inf", "inf"), ("x", "x", "x"),
    ("b", "true", True), ("b", "No", False), ("b", "yes", True), ("b", "0", False), ("b", "maybe", "maybe"),
    ("s", "1", "1"), ("s", "true", "true"), ("s", "null", "null"),
    ("maybe", "null", None), ("maybe", "None", None), ("maybe", "", None), ("maybe", "5", 5),
    ("list", "[1, '2']", [1, 2]), ("list", "(1, 2)", [1, 2]), ("list", "{1}", [1]), ("list", "x", "x"),
    ("list", ["3", 4], [3, 4]),
    ("obj", "{'deep': 'true'}", {"deep": True}), ("obj", '{"deep": "false"}', {"deep": False}),
    ("obj", "[1]", "[1]"), ("obj", {"deep": "no"}, {"deep": False}),
    ("e", "1", 1), ("e", "x", "x"),  # an enum of integers is read as an integer
    ("other", "2.5", 2.5), ("other", "x", "x"),  # additionalProperties' schema applies
]


@pytest.mark.parametrize(("key", "sent", "received"), COERCED)
def test_compiled_coercion_turns_text_into_the_declared_type(key, sent, received) -> None:
    got = coercion(SCHEMA)({key: sent})[key]
    assert got == received and type(got) is type(received), (sent, got)


def test_compiled_coercion_reads_a_whole_object_given_as_text() -> None:
    coerce = coercion(SCHEMA)
    assert coerce("{'n': '4'}") == {"n": 4}
    rng = random.Random(11)
    for _ in range(200):  # several properties at once: each as it is alone
        chosen = rng.sample(COERCED, rng.randint(0, 6))
        value = dict((key, sent) for key, sent, _ in chosen)
        expected = dict((key, received) for key, _, received in chosen)
        assert coerce(value) == expected, value


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_dumps_is_the_providers_and_the_splice_is_encode(ensure_ascii: bool) -> None:
    from flask import Flask

    from flask_tooldiscovery.dialects.mcp import jsonrpc
    from flask_tooldiscovery.serving.wire import dumps

    app = Flask(__name__)
    app.json.ensure_ascii = ensure_ascii  # type: ignore[attr-defined]
    values = [*VALUES, {"é": "ü", "z": 1, "a": [1.5, None]}, "\u2028", {"b": 1, "a": 2}]
    for value in values:
        assert dumps(value, app.json) == app.json.dumps(value, sort_keys=False)
    page = dumps({"tools": [{"name": "é"}]}, app.json).encode()
    splice = jsonrpc.result_splice(page, lambda v: dumps(v, app.json))
    for id_ in (0, 1, -7, 2**70, "", "id", "é", "a\"b"):
        assert splice(id_) == jsonrpc.encode(jsonrpc.result_body(id_, jsonrpc.Encoded(page)),
                                             lambda v: app.json.dumps(v, sort_keys=False))


class _Unwritable:
    """A value no encoder writes: not JSON, and its ``repr`` (a ``default``) fails too."""

    def __repr__(self) -> str:
        raise TypeError("unwritable")


class _Level(int, enum.Enum):
    HIGH = 3


ENCODED = [*VALUES, 10**30, -0.0, float("nan"), float("inf"), float("-inf"), "é\u2028\"x", (1, "two"), _Level.HIGH,
           {"k": _Level.HIGH, 3: 4, 1.5: 2, True: 1, None: 0}, [[[]]], {"a": {"b": {"c": [1, {"d": None}]}}}]


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("default", [None, repr])
def test_json_encoder_writes_what_json_encoder_writes(ensure_ascii: bool, default) -> None:
    from flask_tooldiscovery.serving.wire import json_encoder

    encode, long_way = json_encoder(ensure_ascii=ensure_ascii, default=default), json.JSONEncoder(
        ensure_ascii=ensure_ascii, default=default)
    for value in [*ENCODED, object(), {"set": {1}}]:
        try:
            expected: object = long_way.encode(value)
        except (TypeError, ValueError) as exc:
            expected = (type(exc), str(exc))
        try:
            got: object = encode(value)
        except (TypeError, ValueError) as exc:
            got = (type(exc), str(exc))
        assert got == expected, value
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        encode(loop)
    # A value that failed half-way is no circular reference once mended (an encoder is kept for
    # the next value only after it wrote one whole).
    mended: dict[str, object] = {"a": [1], "b": _Unwritable()}
    with pytest.raises(TypeError):
        encode([mended])
    mended["b"] = 2
    assert encode([mended, mended]) == long_way.encode([mended, mended])


@pytest.mark.parametrize("value", [*VALUES, 10**30, -0.0, "é\u2028", {"é": ["ü", 1.5]}, [1, {"b": None}]], ids=str)
def test_mcp_plain_values_content_is_the_content_blocks(value) -> None:
    from flask_tooldiscovery import ToolDiscovery
    from flask_tooldiscovery.dialects.mcp.content import call_result, forms_of
    from flask_tooldiscovery.tools.results import Outcome

    discovery = ToolDiscovery()

    @discovery.tool
    def echo() -> object:
        """Echo."""

    tool = discovery.registry.resolve().get("echo")
    assert tool is not None
    for version in ("2024-11-05", "2025-06-18", "2026-07-28"):
        result = call_result(Outcome(tool=tool, call_id="c", status="success", value=value), version)
        assert result["content"] == content_blocks(value, forms_of(version))


def test_jsonrpc_shape_tells_apart_every_other_request() -> None:
    from flask_tooldiscovery.dialects.mcp import jsonrpc

    def body(value: str, id_: str = "1") -> bytes:
        return ('{"jsonrpc": "2.0", "id": ' + id_ + ', "method": "tools/list", "params": {"cursor": ' + value
                + "}}").encode()

    values = ["1", "1.0", "true", '"1"', "null", "[1]", '{"a": 1}', "1e2", "100", '"\\u00e9"', '"é"']
    keys = [jsonrpc.shape(body(v)) for v in values]
    assert all(k is not None for k in keys)
    distinct = {json.dumps(json.loads(v)) for v in values}  # "é" and its escape are one value
    assert len({k[0] for k in keys if k}) == len(distinct)
    assert jsonrpc.shape(body("1", '"x"')) == (keys[0][0], "x")  # the id is the fill, not the shape
    for bad in (b"[]", b"{}", b'{"id": true}', b'{"id": null}', b'{"id": 1.5}', b"{", b"\xff"):
        assert jsonrpc.shape(bad) is None


DICTS = [{"city": "Oslo", "days": 2}, {}, {"nested": {"list": [{"a": 1.5}, None, True]}}, {"quote": 'a "b" \\ c\n\t'},
         {"past ascii": "Ösló 雪 \U0001f600"}, {"del": "a\x7fb"}, {"ctrl": "\x00\x1f"}, {"é": 1}]


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_an_explorer_dict_answer_is_what_json_response_writes_of_its_body(make_app, ensure_ascii) -> None:
    """The explorer writes a dict's JSON once for its text block and ``structuredContent``: the
    bytes are those of the body dumped whole, by either ``ensure_ascii``."""
    from flask_tooldiscovery import ToolDiscovery
    from flask_tooldiscovery.serving.wire import json_response

    d = ToolDiscovery()

    @d.tool
    def echo(value: dict) -> dict:
        """Give the value back."""
        return value

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    app.json.ensure_ascii = ensure_ascii
    client = app.test_client()
    for value in DICTS:
        answer = client.post("/explorer/tools/echo/call", json={"value": value})
        assert answer.status_code == 200 and answer.get_json()["structuredContent"] == value
        with app.app_context():
            body = explorer.success_body(value, {"_trace_id": answer.headers["X-Trace-Id"]})
            assert answer.get_data() == json_response(body).get_data(), value


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_an_mcp_plain_dict_reply_is_what_the_reply_dumped_whole_writes(make_app, ensure_ascii) -> None:
    """MCP writes a plain call's dict value once for its text block and ``structuredContent``: the
    bytes are those of the JSON-RPC reply dumped whole, by either ``ensure_ascii``, any id."""
    from flask_tooldiscovery import ToolDiscovery
    from flask_tooldiscovery.dialects.content_blocks import json_text
    from flask_tooldiscovery.serving import wire

    d = ToolDiscovery()

    @d.tool
    def echo(value: dict) -> dict:
        """Give the value back."""
        return value

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["mcp"])
    app.json.ensure_ascii = ensure_ascii
    client = app.test_client()
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    for id_ in (7, "call-é\x7f\"", 2**70):
        for value in DICTS:
            params = {"name": "echo", "arguments": {"value": value}}
            answer = client.post("/mcp", headers=headers,
                                 json={"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})
            assert answer.status_code == 200 and answer.get_json()["result"]["structuredContent"] == value
            reply = {"jsonrpc": "2.0", "id": id_, "result": {
                "content": [{"type": "text", "text": json_text(value)}], "isError": False, "structuredContent": value}}
            assert answer.get_data() == wire.dumps(reply, app.json).encode(), (id_, value)
