"""Nested pydantic models, as parameters and as explicit schemas: every dialect's discovery is
self-contained (no ``$ref`` left to resolve, none dangling) and every dialect calls the tools."""

from __future__ import annotations

import json
import time
from typing import Any, Optional

import pytest
from flask import Flask
from pydantic import BaseModel, RootModel

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.cli.export import openapi_document
from flask_tooldiscovery.lint.schema_rewrite import dangling_refs
from flask_tooldiscovery.schema.json_schema import inline_refs

from .conformance.drivers import DRIVERS, Driver


class Point(BaseModel):
    x: float
    y: float


class Line(BaseModel):
    start: Point
    end: Point
    label: Optional[str] = None  # noqa: UP045 - the Optional spelling pydantic users write


class Tree(BaseModel):
    value: int
    left: Tree | None = None
    right: Tree | None = None


class Points(RootModel[list[Point]]):
    pass


def build(dialect: str) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    def length(line: Line, more: list[Line] | None = None) -> float:
        """Length of a line (plus more lines).

        Args:
            line: The line.
            more: Other lines to add.
        """
        total = ((line.end.x - line.start.x) ** 2 + (line.end.y - line.start.y) ** 2) ** 0.5
        return total + sum(length(m) for m in more or [])

    @discovery.tool(input_schema=Line, output_schema=Points)
    def ends(start: dict[str, Any], end: dict[str, Any], label: str | None = None) -> list[dict[str, Any]]:
        """The two ends of a line, as given."""
        return [start, end]

    @discovery.tool
    def total(tree: Tree) -> int:
        """Sum of a tree's values.

        Args:
            tree: A binary tree.
        """
        return tree.value + sum(total(t) for t in (tree.left, tree.right) if t is not None)

    app = Flask("conformance")  # the drivers name OXP tools with this toolkit
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[dialect], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    discovery.init_app(app)
    return app


LINE = {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}
TREE = {"value": 1, "left": {"value": 2, "right": {"value": 3}}, "right": {"value": 4}}


@pytest.fixture(params=sorted(DRIVERS))
def driver(request: pytest.FixtureRequest) -> Driver:
    return DRIVERS[request.param]


def _documents(driver: Driver, client: Any) -> list[Any]:
    docs = [driver.discover(client).get_json()]
    if driver.name == "explorer":  # the list names the tools; each tool's page holds its schemas
        docs += [client.get(f"/explorer/tools/{name}").get_json() for name in ("length", "ends", "total")]
    return docs


def test_every_dialects_discovery_is_self_contained(driver: Driver) -> None:
    client = build(driver.name).test_client()
    for document in _documents(driver, client):
        text = json.dumps(document)
        assert "$ref" not in text and "$defs" not in text, (driver.name, text[:300])
        assert dangling_refs(document) == []


def test_the_openapi_document_is_self_contained_too() -> None:
    app = build("utcp")
    with app.test_request_context():
        document = openapi_document(app.extensions["tooldiscovery"], "http://localhost")
    assert "$ref" not in json.dumps(document)


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("length", {"line": LINE, "more": [LINE]}, 10.0),
    ("ends", LINE, [{"x": 0, "y": 0}, {"x": 3, "y": 4}]),
    ("total", {"tree": TREE}, 10),
])
def test_nested_models_are_callable_in_every_dialect(driver: Driver, tool: str, arguments: Any,
                                                      expected: Any) -> None:
    client = build(driver.name).test_client()
    result = driver.result(driver.call(client, tool, arguments))
    assert result.kind == "ok", (driver.name, result)
    assert result.value == expected or result.value == {"value": expected} or result.value == {"result": expected}


def test_a_nested_models_own_rules_still_apply(driver: Driver) -> None:
    client = build(driver.name).test_client()
    result = driver.result(driver.call(client, "length", {"line": {"start": {"x": 0}, "end": {"x": 1, "y": 1}}}))
    assert result.kind == "invalid", (driver.name, result)


def test_a_recursive_model_is_inlined_once_not_exponentially() -> None:
    started = time.perf_counter()
    schema = inline_refs(Tree.model_json_schema())
    assert time.perf_counter() - started < 1
    left = schema["properties"]["left"]["anyOf"][0]
    assert left["type"] == "object" and "recursive" in left["description"]
    assert len(json.dumps(schema)) < 2000 and "$defs" not in json.dumps(schema)
