"""Input and output schemas derived from signatures and docstrings."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import pytest
from marshmallow import ValidationError

from flask_tooldiscovery import SignatureError, ToolContext
from flask_tooldiscovery.schema.signature import describe_function


def props(func):
    return describe_function(func).input_schema


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(TypedDict):
    x: float
    y: float


class PartialPoint(TypedDict, total=False):
    x: float


class Order(TypedDict):
    id: str
    note: NotRequired[str]
    size: NotRequired[Annotated[int, "How many"]]


class Draft(TypedDict, total=False):
    id: Required[str]
    title: str


@dataclass
class Address:
    """An address.

    Args:
        street: Street and number.
    """

    street: str
    city: str = "Berlin"
    tags: list[str] = field(default_factory=list)
    zip_code: Annotated[str, "Postal code"] = ""


def test_scalars_and_required() -> None:
    def f(s: str, i: int, n: float, b: bool, nothing: None = None) -> None: ...

    assert props(f) == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "nothing": {"type": "null", "default": None},
        },
        "required": ["s", "i", "n", "b"],
        "additionalProperties": False,
    }


def test_optional_and_union_defaults() -> None:
    def f(a: int | None = None, b: str | None = "x", c: int | str = 3) -> None: ...

    p = props(f)["properties"]
    assert p["a"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert p["b"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "x"}
    assert p["c"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 3}
    assert "required" not in props(f)


def test_collections() -> None:
    def f(a: list[int], b: tuple[str, ...], c: set[str], d: dict[str, float],
          e: tuple[int, str], g: list, h: dict) -> None: ...

    p = props(f)["properties"]
    assert p["a"] == {"type": "array", "items": {"type": "integer"}}
    assert p["b"] == {"type": "array", "items": {"type": "string"}}
    assert p["c"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert p["d"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["e"] == {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                      "items": False, "minItems": 2, "maxItems": 2}
    assert p["g"] == {"type": "array"}
    assert p["h"] == {"type": "object"}


def test_literal_enum_annotated() -> None:
    def f(mode: Literal["a", "b"], color: Color = Color.RED, level: Level = Level.LOW,
          city: Annotated[str, "City name"] = "Oslo",
          n: Annotated[int, {"minimum": 0, "maximum": 10}] = 1) -> None: ...

    p = props(f)["properties"]
    assert p["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert p["color"] == {"type": "string", "enum": ["red", "green"], "default": "red"}
    assert p["level"] == {"type": "integer", "enum": [1, 2], "default": 1}
    assert p["city"] == {"type": "string", "description": "City name", "default": "Oslo"}
    assert p["n"] == {"type": "integer", "minimum": 0, "maximum": 10, "default": 1}


def test_formats() -> None:
    def f(when: dt.datetime, day: dt.date, ident: uuid.UUID) -> None: ...

    p = props(f)["properties"]
    assert p["when"] == {"type": "string", "format": "date-time"}
    assert p["day"] == {"type": "string", "format": "date"}
    assert p["ident"] == {"type": "string", "format": "uuid"}


def test_typeddict_and_dataclass_nested_and_lists_of_them() -> None:
    def f(point: Point, partial: PartialPoint, address: Address, stops: list[Address]) -> None: ...

    p = props(f)["properties"]
    assert p["point"] == {"title": "Point", "type": "object",
                          "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                          "required": ["x", "y"]}
    assert p["partial"] == {"title": "PartialPoint", "type": "object",
                            "properties": {"x": {"type": "number"}}}
    address = {
        "title": "Address", "type": "object",
        "properties": {
            "street": {"type": "string", "description": "Street and number."},
            "city": {"type": "string", "default": "Berlin"},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            "zip_code": {"type": "string", "description": "Postal code", "default": ""},
        },
        "required": ["street"],
        "additionalProperties": False,  # its constructor takes nothing else
    }
    assert p["address"] == address
    assert p["stops"] == {"type": "array", "items": address}


def test_loader_builds_python_values() -> None:
    def f(color: Color, address: Address, when: dt.date, pair: tuple[int, str], s: set[int],
          stops: list[Address] | None = None) -> None: ...

    desc = describe_function(f)
    loaded = desc.load_arguments({
        "color": "green", "address": {"street": "Main 1"}, "when": "2026-01-02",
        "pair": [1, "a"], "s": [1, 2, 2], "stops": [{"street": "A", "city": "B"}],
    })
    assert loaded["color"] is Color.GREEN
    assert loaded["address"] == Address(street="Main 1")
    assert loaded["when"] == dt.date(2026, 1, 2)
    assert loaded["pair"] == (1, "a")
    assert loaded["s"] == {1, 2}
    assert loaded["stops"] == [Address(street="A", city="B")]


def test_scalars_are_converted_only_where_their_python_type_differs() -> None:
    def f(i: int, n: float, raw: bytes, when: dt.datetime, ints: list[int], maybe: float | None = None) -> None: ...

    desc = describe_function(f)
    loaded = desc.load_arguments({"i": 3.0, "n": 3, "raw": "aGk=", "when": "2026-01-02T03:04:05Z",
                                  "ints": [1.0, 2], "maybe": 4})
    assert loaded["i"] == 3 and type(loaded["i"]) is int
    assert loaded["n"] == 3.0 and type(loaded["n"]) is float
    assert loaded["raw"] == b"hi"
    assert loaded["when"] == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert loaded["ints"] == [1, 2] and all(type(v) is int for v in loaded["ints"])
    assert type(loaded["maybe"]) is float
    plain = desc.load_arguments({"i": 3, "n": 2.5, "raw": "", "when": "2026-01-02T03:04:05+01:00", "ints": []})
    assert plain["i"] == 3 and plain["n"] == 2.5 and plain["raw"] == b""
    assert desc.load_arguments({"i": 2.5, "n": True, "raw": "aGk=", "when": "2026-01-02", "ints": []})["n"] is True
    with pytest.raises(ValidationError) as info:  # the error is named after the parameter
        desc.load_arguments({"i": 1, "n": 1.0, "raw": "not base64!", "when": "2026-01-02", "ints": []})
    assert list(info.value.messages) == ["raw"]  # type: ignore[call-overload]


def test_context_parameter_is_hidden() -> None:
    def f(city: str, ctx: ToolContext, other: ToolContext | None = None) -> None: ...

    desc = describe_function(f)
    assert list(desc.input_schema["properties"]) == ["city"]
    assert desc.context_params == ("ctx", "other")


def test_google_docstring() -> None:
    def f(a: int, b: str = "x") -> int:
        """Do a thing.

        More words about it.

        Args:
            a: The first
                value.
            b (str): The second.

        Returns:
            The answer.
        """

    desc = describe_function(f)
    assert desc.description == "Do a thing.\n\nMore words about it."
    assert desc.input_schema["properties"]["a"]["description"] == "The first value."
    assert desc.input_schema["properties"]["b"]["description"] == "The second."
    assert desc.output_schema == {"type": "integer", "description": "The answer."}


def test_numpy_docstring() -> None:
    def f(a: int, b: str) -> None:
        """Do a numpy thing.

        Parameters
        ----------
        a : int
            The first.
        b : str
            The second.
        """

    desc = describe_function(f)
    assert desc.description == "Do a numpy thing."
    assert desc.input_schema["properties"]["a"]["description"] == "The first."
    assert desc.input_schema["properties"]["b"]["description"] == "The second."


def test_sphinx_docstring() -> None:
    def f(a: int, b: str) -> None:
        """Do a sphinx thing.

        :param a: The first.
        :param b: The second.
        :returns: nothing
        """

    desc = describe_function(f)
    assert desc.description == "Do a sphinx thing."
    assert desc.input_schema["properties"]["a"]["description"] == "The first."
    assert desc.input_schema["properties"]["b"]["description"] == "The second."


def test_annotated_description_wins_over_docstring() -> None:
    def f(a: Annotated[int, "From Annotated"]) -> None:
        """Doc.

        Args:
            a: From docstring.
        """

    assert props(f)["properties"]["a"]["description"] == "From Annotated"


def test_output_schemas() -> None:
    def a() -> dict: ...
    def b() -> list[Point]: ...
    def c() -> None: ...
    def d(): ...
    def e() -> object: ...

    assert describe_function(a).output_schema == {"type": "object"}
    assert describe_function(b).output_schema["items"]["title"] == "Point"
    assert describe_function(c).output_schema is None
    assert describe_function(d).output_schema is None
    assert describe_function(e).output_schema is None


def test_typeddict_fields_marked_required_or_not_required() -> None:
    def make(order: Order, draft: Draft) -> Order: ...

    desc = describe_function(make)
    order = {"title": "Order", "type": "object", "required": ["id"], "properties": {
        "id": {"type": "string"}, "note": {"type": "string"}, "size": {"type": "integer", "description": "How many"}}}
    assert desc.input_schema["properties"]["order"] == order
    assert desc.input_schema["properties"]["draft"] == {"title": "Draft", "type": "object", "required": ["id"],
                                                        "properties": {"id": {"type": "string"},
                                                                       "title": {"type": "string"}}}
    assert desc.output_schema == order  # a result of that type is described too (it had no schema)


def test_unannotated_and_any_accept_anything() -> None:
    def f(a, b: Any = None) -> None: ...

    assert props(f)["properties"] == {"a": {}, "b": {"default": None}}


@pytest.mark.parametrize(
    "source, fragment",
    [
        ("def f(*args): ...", "*args"),
        ("def f(**kwargs): ...", "**kwargs"),
        ("def f(a: object): ...", "'a'"),
        ("def f(a: dict[int, str]): ...", "'a'"),
        ("def f(a, /): ...", "positional-only"),
        ("def f(a: 'Missing'): ...", "type hints"),
    ],
)
def test_rejected_signatures_name_function_and_parameter(source: str, fragment: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(SignatureError) as info:
        describe_function(namespace["f"])
    assert "'f'" in str(info.value)
    assert fragment in str(info.value)


def test_recursive_dataclass_is_rejected() -> None:
    @dataclass
    class Node:
        children: list[Node]

    def f(node: Node) -> None: ...

    with pytest.raises(SignatureError, match="recursive"):
        describe_function(f)


def test_async_detected() -> None:
    async def f() -> None: ...

    assert describe_function(f).is_async
