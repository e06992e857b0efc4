"""What a tool holds (issue #14, memory per tool): a schema with nothing to inline is its own
resolved form; a schema with definitions anywhere is still resolved as before; version tuples are
shared; the per-dialect dump cache keeps one value per (kind of dump, tool) and lets go of a tool
that is gone."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from flask_tooldiscovery.schema.json_schema import inline_refs
from flask_tooldiscovery.serving.cache import WireCache
from flask_tooldiscovery.tools.model import Tool, parse_version


def tool(schema: dict[str, Any], name: str = "t", version: str = "1.0.0") -> Tool:
    return Tool(name=name, description="T.", input_schema=schema, version=version)


def test_a_schema_without_definitions_is_its_own_resolved_form() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}, "required": ["a"]}
    t = tool(schema)
    assert t.resolved_input_schema is schema
    assert t.resolved_input_schema == inline_refs(schema)


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "string"}}},
    {"type": "object", "properties": {"p": {"$ref": "#/definitions/P"}}, "definitions": {"P": {"type": "string"}}},
    {"type": "object", "properties": {"p": {"type": "object", "$defs": {"Q": {"type": "string"}}}}},
    {"type": "object", "properties": {"p": {"anyOf": [{"type": "null"}, {"definitions": {}}]}}},
])
def test_definitions_anywhere_are_resolved_as_before(schema: dict[str, Any]) -> None:
    t = tool(schema)
    assert t.resolved_input_schema == inline_refs(schema)
    assert t.resolved_input_schema is not schema
    assert "$defs" not in str(t.resolved_input_schema) and "definitions" not in str(t.resolved_input_schema)


def test_versions_parse_as_before_and_are_shared() -> None:
    assert parse_version("2.1") == (2, 1, 0) and parse_version("3") == (3, 0, 0)
    assert tool({}, "a").version_tuple is tool({}, "b").version_tuple
    for bad in ("1.2.3.4", "x", "", "1..2"):
        with pytest.raises(ValueError, match=r"is not of the form x\.y\.z"):
            parse_version(bad)
    with pytest.raises(ValueError, match=r"version \[1\] is not"):
        parse_version([1])  # type: ignore[arg-type]


def test_the_dump_cache_keeps_one_value_per_kind_and_tool() -> None:
    cache = WireCache()
    a, b = tool({}, "a"), tool({}, "b")
    built: list[tuple[str, str]] = []

    def build(kind: str) -> Any:
        return lambda t: built.append((kind, t.name)) or {"kind": kind, "name": t.name}

    for _ in range(2):
        assert cache.dump("x", a, build("x")) == {"kind": "x", "name": "a"}
        assert cache.dump("y", a, build("y")) == {"kind": "y", "name": "a"}
        assert cache.dump("x", b, build("x")) == {"kind": "x", "name": "b"}
    assert built == [("x", "a"), ("y", "a"), ("x", "b")]
    del a
    gc.collect()
    assert [len(table) for table in cache._dumps.values()] == [1, 0]  # the gone tool's dumps went with it
