"""Decoration, options, providers of every shape, and tool objects of every kind."""

from __future__ import annotations

import pytest
from marshmallow import Schema, fields, validate
from pydantic import BaseModel

from flask_tooldiscovery import RegistrationError, SignatureError, ToolDiscovery
from flask_tooldiscovery.tools.providers import ProviderError


def test_bare_and_configured_decorator_sync_and_async(make_app) -> None:
    d = ToolDiscovery()

    @d.tool
    def plain(x: int) -> int:
        """Plain."""
        return x

    @d.tool(name="renamed", description="Custom text.", version="2.1.0", tags=["t"],
            annotations={"readOnlyHint": True}, timeout=3, requires_approval=True)
    async def fancy(x: int) -> int:
        return x

    assert plain(2) == 2  # the function is returned unchanged
    app = make_app(d, TOOLDISCOVERY_DIALECTS=[])
    with app.app_context():
        tools = d.tools()
        assert [t.name for t in tools] == ["plain", "renamed"]
        t = tools.get("renamed")
        assert (t.description, t.version, t.tags, t.timeout, t.is_async) == (
            "Custom text.", "2.1.0", ["t"], 3, True)
        assert t.metadata == {"requires_approval": True}
        assert t.annotations == {"readOnlyHint": True}


def test_duplicate_name_rejected_but_versions_kept(make_app) -> None:
    d = ToolDiscovery()

    @d.tool(version="1.0.0")
    def search(q: str) -> str:
        return "v1"

    with pytest.raises(RegistrationError, match=r"'search' version 1\.0\.0 is already registered"):
        d.add_tool(search)

    @d.tool(name="search", version="2.0.0")
    def search_v2(q: str) -> str:
        return "v2"

    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).app_context():
        tools = d.tools()
        assert [t.version for t in tools if t.name == "search"] == ["1.0.0", "2.0.0"]
        assert tools.get("search").version == "2.0.0"
        assert tools.get("search", "1.0.0").func is search
        assert [t.name for t in tools.latest()] == ["search"]


@pytest.mark.parametrize("options, message", [
    ({"bogus": 1}, "unknown option"),
    ({"version": "one"}, "x.y.z"),
    ({"timeout": -1}, "timeout"),
    ({"requirements": {"passwords": []}}, "requirements"),
    ({"name": "has space"}, "tool name"),
    ({"input_schema": {"type": "nope"}}, "not a valid JSON Schema"),
    ({"input_schema": 42}, "must be a JSON Schema dict"),
])
def test_bad_options_fail_at_decoration(options, message) -> None:
    def sample(x: int) -> int:
        return x

    d = ToolDiscovery()
    with pytest.raises((RegistrationError, TypeError), match=message):
        d.tool(**options)(sample)


def test_star_args_rejected_at_decoration() -> None:
    d = ToolDiscovery()
    with pytest.raises(SignatureError, match=r"\*\*kw"):
        @d.tool
        def f(**kw): ...


def test_explicit_json_schema_and_marshmallow_schema(make_app) -> None:
    d = ToolDiscovery()
    schema = {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}},
              "required": ["q"]}

    @d.tool(input_schema=schema)
    def raw(q):
        return q

    class Query(Schema):
        q = fields.String(required=True, validate=validate.Length(min=2),
                          metadata={"description": "Query text"})
        limit = fields.Integer(load_default=10, validate=validate.Range(min=1, max=50))
        kind = fields.String(validate=validate.OneOf(["a", "b"]))
        emails = fields.List(fields.Email())

    @d.tool(input_schema=Query)
    def mm(q, limit, **_ignored):
        return {"q": q, "limit": limit}

    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).test_request_context():
        tools = d.tools()
        assert tools.get("raw").input_schema == schema
        assert tools.get("mm").input_schema == {
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 2, "description": "Query text"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "emails": {"type": "array", "items": {"type": "string", "format": "email"}},
            },
            "required": ["q"],
            "additionalProperties": False,
        }
        out = d.call(tools.get("mm"), {"q": "hello"}, d.make_context("test"))
        # marshmallow's load ran: load_default filled in
        assert out.value == {"q": "hello", "limit": 10}
        bad = d.call(tools.get("mm"), {"q": "h", "limit": 99}, d.make_context("test"))
        assert bad.status == "invalid"
        assert set(bad.parameter_errors) == {"q", "limit"}


def test_pydantic_model_as_input_schema(make_app) -> None:
    class Args(BaseModel):
        city: str
        days: int = 1

    d = ToolDiscovery()

    @d.tool(input_schema=Args)
    def forecast(city: str, days: int) -> dict:
        return {"city": city, "days": days}

    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).test_request_context():
        tool = d.tools().get("forecast")
        assert tool.input_schema["required"] == ["city"]
        assert d.call(tool, {"city": "Oslo"}, d.make_context("t")).value == {"city": "Oslo", "days": 1}


class AttrTool:
    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"{name} via attributes"
        self.inputSchema = {"type": "object", "properties": {"x": {"type": "integer"}}}
        self.annotations = None


class PydanticAnnotations(BaseModel):
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None


class PydanticTool(BaseModel):
    name: str
    description: str
    inputSchema: dict
    annotations: PydanticAnnotations | None = None


def _provided():
    return [
        {"name": "dict_tool", "description": "from a dict", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": True}},
        AttrTool("attr_tool"),
        PydanticTool(name="pyd_tool", description="from pydantic",
                     inputSchema={"type": "object"},
                     annotations=PydanticAnnotations(destructiveHint=True)),
    ]


@pytest.mark.parametrize("shape", ["list", "sync", "async"])
def test_provider_shapes_resolved_per_request(make_app, shape) -> None:
    calls = []

    def sync_provider():
        calls.append(1)
        return _provided()

    async def async_provider():
        calls.append(1)
        return _provided()

    provider = {"list": _provided(), "sync": sync_provider, "async": async_provider}[shape]
    d = ToolDiscovery(tools=provider)

    @d.tool
    def decorated() -> None:
        """After the provider."""

    app = make_app(d, TOOLDISCOVERY_DIALECTS=[])
    for _ in range(2):
        with app.test_request_context():
            tools = d.tools()
            d.tools()  # a second look within one request does not call the provider again
            assert [t.name for t in tools] == ["dict_tool", "attr_tool", "pyd_tool", "decorated"]
            assert tools.get("dict_tool").annotations == {"readOnlyHint": True}
            assert tools.get("attr_tool").annotations is None
            assert tools.get("attr_tool").input_schema["properties"]["x"] == {"type": "integer"}
            assert tools.get("pyd_tool").annotations == {"destructiveHint": True}
    if shape != "list":
        assert len(calls) == 2


def test_pydantic_v1_style_object(make_app) -> None:
    class V1Like:
        __fields__ = {"name": None}

        def dict(self, exclude_none: bool = False, by_alias: bool = False):
            data = {"name": "v1_tool", "description": "old", "inputSchema": {"type": "object"},
                    "annotations": None}
            return {k: v for k, v in data.items() if not (exclude_none and v is None)}

    d = ToolDiscovery(tools=[V1Like()])
    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).app_context():
        tool = d.tools().get("v1_tool")
        assert tool.description == "old" and tool.annotations is None


def test_failing_provider_raises_provider_error(make_app) -> None:
    def broken():
        raise ConnectionError("database down")

    d = ToolDiscovery(tools=broken)
    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).app_context():
        with pytest.raises(ProviderError):
            d.tools()


def test_provider_tools_run_through_call_handler(make_app) -> None:
    seen = []

    async def handler(name, arguments):
        seen.append((name, arguments))
        return {"echo": arguments}

    d = ToolDiscovery(tools=_provided(), call_handler=handler)
    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).test_request_context():
        tool = d.tools().get("attr_tool")
        out = d.call(tool, {"x": 5}, d.make_context("t"))
        assert out.value == {"echo": {"x": 5}}
        assert seen == [("attr_tool", {"x": 5})]
        assert d.call(tool, {"x": "no"}, d.make_context("t")).status == "invalid"


def test_static_validators_compiled_once(make_app) -> None:
    from flask_tooldiscovery.schema.argument_validation import validator_for_schema

    d = ToolDiscovery()

    @d.tool
    def f(x: int) -> int:
        return x

    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).test_request_context():
        tool = d.tools().get("f")
        first = validator_for_schema(tool.input_schema)
        for _ in range(5):
            assert d.call(tool, {"x": 1}, d.make_context("t")).ok
        assert validator_for_schema(dict(tool.input_schema)) is first  # compiled once, reused
        assert d.tools() is d.tools()
