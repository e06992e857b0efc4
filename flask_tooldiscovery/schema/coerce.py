"""JSON values and Python values: string arguments turned into declared types (for clients that
send everything as strings), and a tool's return value turned into JSON-ready data."""

from __future__ import annotations

import ast
import base64
import dataclasses
import datetime as _dt
import decimal
import enum
import json
import math
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from .hooks import RICH
from .json_schema import primary_type, split_nullable

_INT = re.compile(r"^[+-]?\d+$")
#: Types whose values are JSON as they are (subclasses, such as enums, take the long way).
_PLAIN = frozenset({str, int, bool, type(None)})


def to_jsonable(value: Any, *, bytes_mime_type: str | None = None) -> Any:
    """Turn a tool's return value into JSON-ready data (dataclasses, enums, sets, dates...).

    Rich results (registered by :mod:`flask_tooldiscovery.tools.results`: ``Image``, ``Audio``,
    ``File``, ``ResourceLink``) become their canonical form; ``bytes`` become base64 text, or, with
    ``bytes_mime_type`` (the tool's
    ``result_mime_type``), the canonical form of an image, audio or file of that type.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:  # the common return value: a dict of plain values, copied in one pass
        return {k if type(k) is str else str(k):
                v if type(v) in _PLAIN else to_jsonable(v, bytes_mime_type=bytes_mime_type)
                for k, v in value.items()}
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError("NaN and infinity cannot be sent as JSON")
        return value
    if isinstance(value, RICH[0].base):
        return value.to_json()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, bytes_mime_type=bytes_mime_type) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v, bytes_mime_type=bytes_mime_type) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        if bytes_mime_type is not None:
            return RICH[0].from_bytes(bytes(value), bytes_mime_type).to_json()
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name), bytes_mime_type=bytes_mime_type)
                for f in dataclasses.fields(value)}
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json"))
    raise TypeError(f"a value of type {type(value).__name__} cannot be sent as JSON")


def _parse_literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


#: A compiled coercion: a value in, the value with its strings turned into declared types out.
Coercion = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


#: The only kinds of value a coercion changes (a number, a boolean or ``null`` stays as it is).
_COERCIBLE = (str, dict, list)


def coerce_value(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Best-effort: a string turned into the type ``schema`` declares, when it parses cleanly.

    Strings that do not parse are returned unchanged so that validation reports them.
    """
    return coercion(schema)(value)


def coercion(schema: Mapping[str, Any] | None) -> Coercion:
    """:func:`coerce_value` for ``schema`` as a function, the schema read once (a property's
    own coercion is compiled the first time a value for it arrives), for a tool's every call."""
    if not isinstance(schema, Mapping) or not schema:
        return _same
    inner, nullable = split_nullable(dict(schema))
    target = primary_type(inner, default="")
    if target == "string" and not nullable:
        return _same  # a string stays the string it is (and nothing else is ever coerced)
    container: Coercion = _same

    def from_text(value: str) -> Any:
        text = value.strip()
        if nullable and text in ("null", "None", ""):
            return None
        if target == "integer" and _INT.match(text):
            return int(text)
        if target == "number":
            if _INT.match(text):
                return int(text)
            try:
                number = float(text)
            except ValueError:
                return value
            return number if math.isfinite(number) else value
        if target == "boolean":
            lowered = text.lower()
            if lowered in ("true", "1", "yes"):
                return True
            if lowered in ("false", "0", "no"):
                return False
            return value
        if target in ("array", "object"):
            parsed = _parse_literal(text)
            if isinstance(parsed, tuple):
                parsed = list(parsed)
            if target == "array" and isinstance(parsed, (set, frozenset)):
                parsed = list(parsed)
            if (target == "array" and isinstance(parsed, list)) or (
                target == "object" and isinstance(parsed, dict)
            ):
                return container(parsed)
        return value

    if target == "object":
        props = inner.get("properties") or {}
        extra = inner.get("additionalProperties")
        # One coercion per declared property (never more than the schema has); the others' one.
        compiled: dict[str, Coercion] = {name: coercion(sub) for name, sub in props.items()} \
            if isinstance(props, Mapping) else {}
        other = coercion(extra if isinstance(extra, Mapping) else None)
        #: The properties whose values may change (``None``: any may: the others' do too).
        changing = frozenset(name for name, each in compiled.items() if each is not _same) \
            if other is _same else None

        def coerce_object(value: Any) -> Any:
            if isinstance(value, str):
                return from_text(value)
            if isinstance(value, dict):
                if changing is None:
                    return {k: compiled.get(k, other)(v) for k, v in value.items()}
                if changing.isdisjoint(value):
                    return value  # nothing in it can change
                for name, item in value.items():
                    if name in changing and isinstance(item, _COERCIBLE):
                        return {k: compiled[k](v) if k in changing and isinstance(v, _COERCIBLE) else v
                                for k, v in value.items()}
                return value  # nothing in it can change (the usual JSON client's: numbers sent as numbers)
            return value

        container = coerce_object
        return coerce_object
    if target == "array":
        items = inner.get("items")
        each: list[Coercion] = []

        def coerce_array(value: Any) -> Any:
            if isinstance(value, str):
                return from_text(value)
            if isinstance(value, list):
                if not each:
                    each.append(coercion(items if isinstance(items, Mapping) else None))
                return [each[0](v) for v in value]
            return value

        container = coerce_array
        return coerce_array

    def coerce_scalar(value: Any) -> Any:
        return from_text(value) if isinstance(value, str) else value

    return coerce_scalar
