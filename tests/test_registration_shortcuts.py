"""Shortcuts give the answers of the slow paths they skip (issue #14): the quick schema walk
never accepts what jsonschema's meta-schema refuses, and bad schemas are still refused at
registration with jsonschema's own message; the quick argument check never accepts what
jsonschema refuses (and invalid arguments get jsonschema's errors); docstrings parse as
``docstring_parser`` parses them; type hints read as ``typing.get_type_hints`` reads them."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import itertools
import json
import random
import typing
import uuid
from collections import abc
from typing import Annotated, Any, Literal, Optional, Union

import docstring_parser
import pytest
from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft202012Validator

from flask_tooldiscovery import ToolContext, ToolDiscovery
from flask_tooldiscovery.schema.argument_validation import validate_arguments, validator_for_schema
from flask_tooldiscovery.schema.check import check_schema, plainly_valid
from flask_tooldiscovery.schema.docstrings import _parse_doc, parse_docstring
from flask_tooldiscovery.schema.quick_check import quick_check
from flask_tooldiscovery.schema.signature import _type_hints
from flask_tooldiscovery.tools.function_tools import RegistrationError


def meta_valid(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


BAD_SCHEMAS = [
    {"type": "strin"},
    {"type": "object", "properties": {"a": {"type": "strin"}}},
    {"type": []},
    {"type": ["string", "string"]},
    {"type": "object", "required": "a"},
    {"type": "object", "required": ["a", "a"]},
    {"type": "object", "required": [1]},
    {"type": "string", "minLength": -1},
    {"type": "string", "maxLength": 1.5},
    {"type": "string", "pattern": "("},
    {"enum": "x"},
    {"anyOf": []},
    {"anyOf": [{"type": "nope"}]},
    {"multipleOf": 0},
    {"type": "object", "properties": {"a": 3}},
    {"type": "object", "additionalProperties": "no"},
    {"type": "array", "items": {"minItems": "1"}},
    {"type": "array", "prefixItems": []},
    {"type": "string", "description": 3},
    {"type": "number", "minimum": "0"},
    {"type": "boolean", "uniqueItems": "yes"},
    {"type": "object", "properties": {"a": {"$ref": 5}}},
    {"examples": {"a": 1}},
]


@pytest.mark.parametrize("schema", BAD_SCHEMAS, ids=[str(i) for i in range(len(BAD_SCHEMAS))])
def test_bad_schemas_refused_at_registration_with_jsonschemas_message(schema: dict[str, Any]) -> None:
    assert not meta_valid(schema) and not plainly_valid(schema)
    with pytest.raises(SchemaError) as expected:
        Draft202012Validator.check_schema(schema)
    d = ToolDiscovery()
    with pytest.raises(RegistrationError) as refused:
        d.add_tool(lambda **kw: kw, name="bad", input_schema=schema)
    assert expected.value.message in str(refused.value)
    assert "is not a valid JSON Schema" in str(refused.value)


def test_bad_schema_from_annotation_metadata_refused_at_registration() -> None:
    d = ToolDiscovery()

    def f(n: Annotated[int, {"minimum": "zero"}]) -> int:
        return n

    with pytest.raises(RegistrationError, match="is not a valid JSON Schema"):
        d.add_tool(f)


def _random_schema(rng: random.Random, depth: int = 0) -> Any:
    """A schema made of the keywords the quick walk knows, with right and wrong values."""
    if depth > 3 or rng.random() < 0.2:
        return rng.choice([True, False, {}, {"type": "string"}, {"type": "strin"}, 1, None, "x"])
    values: dict[str, list[Any]] = {
        "type": ["string", "integer", "object", "nope", ["string", "null"], ["string", "string"], [], 3],
        "description": ["text", 3, None], "title": ["T", ["T"]], "format": ["date", 1],
        "required": [["a"], ["a", "a"], "a", [1], []], "enum": [[1, "a"], "x", [], [float("nan")]],
        "const": [1, {"a": [1]}, None], "default": [1, "x", [1, {"a": None}], (1, 2), {1: "a"}],
        "minimum": [0, 1.5, "0", True, None], "maxLength": [0, 3, -1, 1.0, True],
        "minItems": [1, -2, "1"], "uniqueItems": [True, 1, "yes"], "multipleOf": [2, 0, -1, 0.5, "2"],
        "pattern": ["^a+$", "(", 3], "examples": [[1], {"a": 1}], "deprecated": [True, "no"],
        "contentEncoding": ["base64", 64], "$comment": ["c", 1], "readOnly": [False, 0],
    }
    schema: dict[str, Any] = {}
    for _ in range(rng.randint(0, 4)):
        roll = rng.random()
        if roll < 0.15:
            schema["properties"] = {f"p{i}": _random_schema(rng, depth + 1) for i in range(rng.randint(0, 3))}
        elif roll < 0.25:
            schema[rng.choice(["items", "additionalProperties", "not", "contains"])] = _random_schema(rng, depth + 1)
        elif roll < 0.35:
            schema[rng.choice(["anyOf", "oneOf", "allOf", "prefixItems"])] = [
                _random_schema(rng, depth + 1) for _ in range(rng.randint(0, 2))]
        elif roll < 0.4:
            schema[rng.choice(["$ref", "$defs", "patternProperties", "x-custom"])] = rng.choice([{}, "#/x", 1])
        else:
            word = rng.choice(sorted(values))
            schema[word] = rng.choice(values[word])
    return schema


def test_quick_walk_never_accepts_what_the_meta_schema_refuses() -> None:
    rng = random.Random(14)
    accepted = 0
    for _ in range(3000):
        schema = _random_schema(rng)
        if plainly_valid(schema):
            accepted += 1
            assert meta_valid(schema), schema
    assert accepted > 300  # the walk does accept ordinary schemas


def test_schemas_of_other_drafts_go_through_jsonschema() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"a": {"type": "string"}}}
    assert not plainly_valid(draft7)
    check_schema(draft7)
    with pytest.raises(Exception, match="is not a valid JSON Schema"):
        check_schema({**draft7, "properties": {"a": {"type": "strin"}}})
    assert plainly_valid({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"})


def test_a_tools_validator_is_found_by_identity_and_by_content(make_app: Any) -> None:
    d = ToolDiscovery()

    @d.tool
    def f(x: int) -> int:
        return x

    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).test_request_context():
        tool = d.tools().get("f")
        assert d.call(tool, {"x": "no"}, d.make_context("t")).status == "invalid"
        first = validator_for_schema(tool.input_schema)
        assert validator_for_schema(tool.input_schema) is first
        assert validator_for_schema(dict(tool.input_schema)) is first
        assert d.call(tool, {"x": 2}, d.make_context("t")).value == 2


DOCSTRINGS = [
    "Add two numbers.",
    "Add two numbers.\n\nLonger text: with a colon.\nAnd more.",
    "Add.\n\nArgs:\n    a: First.\n    b (int): Second.\n\nReturns:\n    The sum.",
    "Add.\n\nArgs:\n    a: First.\n\nRaises:\n    ValueError: never.",
    "Add.\n\nParameters\n----------\na : int\n    First.\nb : int\n    Second.",
    "Add.\n\n:param a: First.\n:param b: Second.\n:returns: The sum.",
    "Add.\n\n@param a: First.\n@return: The sum.",
    "Add.\n\nArgs:\n    a: First.\n:param b: Second.",
    "Add.\n\n.. deprecated:: 1.0\n    Use plus.",
    "Add.\n\nExample:\n    >>> add(1, 2)\n    3",
    "Add.\n\nNote:\n    - a dash line\n    - another",
    "Args:\n    a: only sections.",
    "",
    "Add.\n\nArgs:\n    a:\n        Indented description.\n    *args: Rest.\n    **kwargs: Options.",
    "Add.\n-----\nUnderlined title.",
    "Add.\n\nArgs:\n    bad line without colon",
]


@pytest.mark.parametrize("text", DOCSTRINGS, ids=[str(i) for i in range(len(DOCSTRINGS))])
def test_docstrings_parse_as_docstring_parser_parses_them(text: str) -> None:
    def parsed(fn: Any) -> Any:
        try:
            doc = fn(text)
        except Exception as exc:  # the same error, if any
            return type(exc)
        return (doc.style, doc.short_description, doc.long_description, doc.blank_after_short_description,
                doc.blank_after_long_description, [(type(m), m.args, m.description) for m in doc.meta])

    assert parsed(_parse_doc) == parsed(docstring_parser.parse)


def test_parse_docstring_reads_google_sections() -> None:
    text = "Add.\n\nArgs:\n    a: First.\n\nReturns:\n    The sum."
    assert parse_docstring(text) == ("Add.", {"a": "First."}, "The sum.")


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int


def _annotated_functions() -> list[Any]:
    def plain(a: int, b: Annotated[str, "City"], c: Literal["x", "y"] = "x",
              d: dict[str, Any] | None = None, e: Optional[list[int]] = None, f: Union[int, str] = 1,  # noqa: UP007, UP045
              g: tuple[int, ...] = (), h: abc.Sequence[Point] = (), i: Colour = Colour.RED, j: ToolContext = None,
              k: None = None, m: typing.List[datetime.date] = (),  # noqa: UP006
              n: uuid.UUID | None = None) -> dict[str, Any]:
        return {}

    def forward(a: "int", b: list["Point"], c: Annotated[list["Point"], "z"] = (),  # noqa: UP037
                d: "Optional[Point]" = None) -> "Point":  # noqa: UP037, UP045
        return Point(a)

    def no_hints(a, b=1):  # type: ignore[no-untyped-def]
        return a

    def undefined(a: "Nowhere") -> int:  # type: ignore[name-defined]  # noqa: F821, UP037
        return 1

    def class_var(a: "typing.ClassVar[int]") -> int:  # noqa: UP037
        return 1

    return [plain, forward, no_hints, undefined, class_var]


# This module has ``from __future__ import annotations``: every annotation is a string here.
FUNCTIONS = _annotated_functions()


def _without_future() -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(compile("import typing\nfrom typing import Annotated, Literal, Any\n"
                 "def f(a: int, b: Annotated[str, 'City'], c: Literal['x'] = 'x',"
                 " d: dict[str, Any] | None = None, e: list['int'] = ()) -> None: ...\n"
                 "def g(a: typing.Final[int]) -> int: ...\n", "<test>", "exec", dont_inherit=True), namespace)
    return [namespace["f"], namespace["g"]]


@pytest.mark.parametrize("func", [*FUNCTIONS, *_without_future()], ids=lambda f: f.__name__)
def test_type_hints_read_as_typing_reads_them(func: Any) -> None:
    def hints(fn: Any) -> Any:
        try:
            return fn(func)
        except Exception as exc:
            return type(exc), str(exc)

    assert hints(_type_hints) == hints(lambda f: typing.get_type_hints(f, include_extras=True))


def test_many_tools_keep_their_own_schemas() -> None:
    d = ToolDiscovery()
    for i, (kind, default) in enumerate(itertools.product(["int", "str", "float"], range(3))):
        namespace: dict[str, Any] = {}
        exec(f"def tool_{i}(v_{i}: {kind} = {default!r} if '{kind}' != 'str' else '{default}') -> None:\n"
             f"    '''Tool {i}.\n\n    Args:\n        v_{i}: Value {i}.\n    '''\n", namespace)
        tool = d.add_tool(namespace[f"tool_{i}"])
        prop = tool.input_schema["properties"][f"v_{i}"]
        assert prop["type"] == {"int": "integer", "str": "string", "float": "number"}[kind]
        assert prop["description"] == f"Value {i}."


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    scalars = [0, 1, -1, 2.5, 3.0, True, False, None, "", "a", "metric", "x" * 6, 1e308, float("inf")]
    roll = rng.random()
    if depth > 2 or roll < 0.6:
        return rng.choice(scalars)
    if roll < 0.8:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["a", "p0", "p1", "p2", "query", "limit"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _value_schema(rng: random.Random, depth: int = 0) -> Any:
    """Schemas of the keywords the quick check compiles (and some it leaves to jsonschema)."""
    if depth > 2 or rng.random() < 0.25:
        return rng.choice([True, False, {}, {"type": "string"}, {"type": "integer"}, {"type": "number"},
                           {"type": ["string", "null"]}, {"type": "boolean"}, {"enum": [1, "a", True, None]},
                           {"const": 1}, {"const": False}, {"type": "string", "format": "date"}])
    schema: dict[str, Any] = {}
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.2:
            schema["properties"] = {f"p{i}": _value_schema(rng, depth + 1) for i in range(rng.randint(0, 3))}
        elif roll < 0.3:
            schema["required"] = rng.sample(["p0", "p1", "a"], rng.randint(0, 2))
        elif roll < 0.4:
            schema["additionalProperties"] = _value_schema(rng, depth + 1)
        elif roll < 0.5:
            schema["items"] = _value_schema(rng, depth + 1)
        elif roll < 0.6:
            schema["anyOf"] = [_value_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]
        elif roll < 0.7:
            schema["type"] = rng.choice(["object", "array", "integer", "number", ["integer", "string"], "null"])
        elif roll < 0.8:
            schema[rng.choice(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])] = rng.choice([0, 1, 2.5])
        elif roll < 0.9:
            schema[rng.choice(["minLength", "maxLength", "minItems", "maxItems"])] = rng.randint(0, 3)
        else:
            schema[rng.choice(["enum", "description", "default", "uniqueItems"])] = rng.choice(
                [[1, 1.0, "a"], "text", [True], True])
    return schema


def test_quick_check_never_accepts_what_jsonschema_refuses() -> None:
    rng = random.Random(1414)
    compiled = quick = 0
    for _ in range(1500):
        schema = _value_schema(rng)
        if not meta_valid(schema):
            continue
        check = quick_check(schema)
        if check is None:
            continue
        compiled += 1
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        for _ in range(12):
            value = _random_value(rng)
            if check(value):
                quick += 1
                assert validator.is_valid(value), (schema, value)
            assert validate_arguments(schema, value) == [] if validator.is_valid(value) else \
                validate_arguments(schema, value)
    assert compiled > 300 and quick > 500


def test_invalid_arguments_get_jsonschemas_errors_through_the_quick_check(make_app: Any) -> None:
    d = ToolDiscovery()

    @d.tool
    def pick(units: Literal["metric", "imperial"], days: Annotated[int, {"minimum": 1}] = 1) -> str:
        return units

    with make_app(d, TOOLDISCOVERY_DIALECTS=[]).test_request_context():
        tool = d.tools().get("pick")
        assert quick_check(tool.input_schema) is not None
        assert d.call(tool, {"units": "metric", "days": 3.0}, d.make_context("t")).value == "metric"
        out = d.call(tool, {"units": "kelvin", "days": 0, "extra": 1}, d.make_context("t"))
        assert out.status == "invalid"
        assert {e.keyword for e in out.errors} == {"enum", "minimum", "additionalProperties"}
        assert out.parameter_errors["extra"] == "Unexpected parameter."
        assert d.call(tool, {"units": True}, d.make_context("t")).status == "invalid"
        assert d.call(tool, {}, d.make_context("t")).errors[0].message == "Missing required parameter."


def test_opal_parameters_are_what_its_parameter_schema_dumps(make_app: Any) -> None:
    from flask_tooldiscovery.dialects.opal.dialect import OpalParameterSchema

    d = ToolDiscovery()

    @d.tool
    def shapes(name: str, sizes: list[int], box: dict[str, float] | None = None, mode: Literal["a", "b"] = "a",
               point: Point | None = None) -> None:
        """Shapes.

        Args:
            name: A name.
        """

    client = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    params = client.get("/opal/discovery").get_json()["functions"][0]["parameters"]
    assert [p["name"] for p in params] == ["name", "sizes", "box", "mode", "point"]
    assert params == OpalParameterSchema(many=True).dump(params)
    assert json.dumps(params) == json.dumps(OpalParameterSchema(many=True).dump(params))  # key order too
