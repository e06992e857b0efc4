"""Python type annotations -> JSON Schema, and back: each annotation's schema and the converter
that turns a validated JSON value into the Python value it names (enum members, dataclass
instances, tuples, sets, datetimes, bytes from base64, pydantic models)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as _dt
import enum
import inspect
import types
import typing
import uuid
from collections import abc
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from ..errors import UnsupportedType as UnsupportedType
from .docstrings import docstring_params
from .hooks import RICH
from .json_schema import inline_refs

Converter = Callable[[Any], Any] | None


class Changes:
    """A converter that changes only values of some exact types and passes every other value as
    it is, saying so: an ``int`` parameter's converter changes only a float (JSON's ``3.0`` is an
    integer, the function gets ``3``), so a loader that reads ``types`` calls ``fn`` for a float
    and makes no call at all for the ``3`` it almost always gets."""

    __slots__ = ("fn", "types")

    def __init__(self, types: tuple[type, ...], fn: Callable[[Any], Any]) -> None:
        self.types = types
        self.fn = fn

    def __call__(self, value: Any) -> Any:
        return self.fn(value) if type(value) in self.types else value


_SIMPLE: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_FORMATTED: dict[type, tuple[str, Callable[[Any], Any]]] = {
    _dt.datetime: ("date-time", lambda v: _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))),
    _dt.date: ("date", _dt.date.fromisoformat),
    _dt.time: ("time", _dt.time.fromisoformat),
    uuid.UUID: ("uuid", uuid.UUID),
}
_ARRAY_ORIGINS = {list, abc.Sequence, abc.MutableSequence, abc.Iterable, abc.Collection}
_SET_ORIGINS = {set, frozenset, abc.Set, abc.MutableSet}
_MAP_ORIGINS = {dict, abc.Mapping, abc.MutableMapping}


def jsonable_default(value: Any) -> tuple[bool, Any]:
    """(True, json value) when ``value`` can be written as a JSON Schema ``default``."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, (tuple, set, frozenset)):
        value = list(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return True, value.isoformat()
    if isinstance(value, uuid.UUID):
        return True, str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return True, value
    if isinstance(value, list):
        items = [jsonable_default(v) for v in value]
        return (all(ok for ok, _ in items), [v for _, v in items])
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items2 = {k: jsonable_default(v) for k, v in value.items()}
        return (all(ok for ok, _ in items2.values()), {k: v for k, (_, v) in items2.items()})
    return False, None


def _infer_type(values: list[Any]) -> dict[str, Any]:
    types_seen = set()
    for v in values:
        if isinstance(v, bool):
            types_seen.add("boolean")
        elif isinstance(v, int):
            types_seen.add("integer")
        elif isinstance(v, float):
            types_seen.add("number")
        elif isinstance(v, str):
            types_seen.add("string")
        elif v is None:
            types_seen.add("null")
        else:
            raise UnsupportedType(f"literal value {v!r}")
    if types_seen == {"integer", "number"}:
        types_seen = {"number"}
    if len(types_seen) == 1:
        return {"type": types_seen.pop()}
    return {"type": sorted(types_seen)} if types_seen else {}


def _from_base64(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError("not valid base64 text") from None


def _integral(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def _field_type(hint: Any) -> Any:
    """A TypedDict field's type without ``Required[...]``/``NotRequired[...]``."""
    while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
        hint = typing.get_args(hint)[0]
    return hint


def _field_required(hint: Any, listed: bool) -> bool:
    """Whether a TypedDict field is required: as ``Required``/``NotRequired`` mark it, else as the
    class's ``__required_keys__`` lists it (which misses the marks under ``from __future__ import
    annotations`` before Python 3.12)."""
    origin = typing.get_origin(hint)
    return True if origin is typing.Required else False if origin is typing.NotRequired else listed


class SchemaBuilder:
    """Builds (schema, converter) pairs for annotations, guarding against recursive types."""

    def __init__(self) -> None:
        self._stack: list[Any] = []

    def build(self, tp: Any) -> tuple[dict[str, Any], Converter]:
        if tp is inspect.Parameter.empty or tp is Any:
            return {}, None
        if tp is None or tp is type(None):
            return {"type": "null"}, None
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)

        if origin is typing.Annotated:
            schema, conv = self.build(args[0])
            schema = dict(schema)
            for meta in args[1:]:
                if isinstance(meta, str):
                    schema["description"] = meta
                elif isinstance(meta, dict):
                    schema.update(meta)
            return schema, conv

        if tp in _SIMPLE:
            if tp is int:  # JSON Schema calls 3.0 an integer; the function gets 3
                return {"type": "integer"}, Changes((float,), _integral)
            if tp is float:  # JSON's 3 is a number; the function gets 3.0 (and a bool stays a bool)
                return {"type": "number"}, Changes((int,), float)
            return {"type": _SIMPLE[tp]}, None
        if tp is bytes:  # base64 text on the wire, bytes in Python
            return {"type": "string", "contentEncoding": "base64"}, Changes((str,), _from_base64)
        if tp in _FORMATTED:
            fmt, parse = _FORMATTED[tp]
            return {"type": "string", "format": fmt}, Changes((str,), parse)

        if origin is Literal:
            values = [a.value if isinstance(a, enum.Enum) else a for a in args]
            schema = _infer_type(values)
            schema["enum"] = values
            return schema, None

        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            values = [m.value for m in tp]
            schema = _infer_type(values)
            schema["enum"] = values
            return schema, lambda v: tp(v)

        if origin in (Union, types.UnionType):
            return self._union(args)

        if tp in (list, tuple, set, frozenset) or origin in _ARRAY_ORIGINS | _SET_ORIGINS | {tuple}:
            return self._array(tp, origin, args)

        if tp is dict or origin in _MAP_ORIGINS:
            return self._mapping(args)

        if typing.is_typeddict(tp):
            return self._guarded(tp, self._typeddict)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return self._guarded(tp, self._dataclass)
        if hasattr(tp, "model_json_schema"):  # a pydantic v2 model as a parameter type
            # The model's own $defs would dangle once nested under a property: inline them.
            model_schema: dict[str, Any] = inline_refs(tp.model_json_schema())
            return model_schema, lambda v: tp.model_validate(v)
        raise UnsupportedType(repr(tp))

    def _guarded(
        self, tp: Any, fn: Callable[[Any], tuple[dict[str, Any], Converter]]
    ) -> tuple[dict[str, Any], Converter]:
        if tp in self._stack:
            raise UnsupportedType(f"recursive type {tp.__name__}")
        self._stack.append(tp)
        try:
            return fn(tp)
        finally:
            self._stack.pop()

    def _union(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Converter]:
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
        built = [self.build(m) for m in members]
        if len(built) == 1:
            schema, conv = built[0]
            if not nullable:
                return schema, conv
            out = {"anyOf": [schema, {"type": "null"}]}
            if "description" in schema:
                out["description"] = schema["description"]
            return out, (None if conv is None else (lambda v: None if v is None else conv(v)))
        variants = [s for s, _ in built] + ([{"type": "null"}] if nullable else [])
        return {"anyOf": variants}, None

    def _array(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> tuple[dict[str, Any], Converter]:
        container = origin or tp
        schema: dict[str, Any] = {"type": "array"}
        if container is tuple:
            if args and not (len(args) == 2 and args[1] is Ellipsis):
                if args == ((),):
                    return {"type": "array", "maxItems": 0}, lambda v: tuple(v)
                parts = [self.build(a) for a in args]
                schema.update(
                    prefixItems=[s for s, _ in parts], items=False,
                    minItems=len(parts), maxItems=len(parts),
                )
                convs = [c for _, c in parts]
                return schema, lambda v: tuple(c(x) if c else x for c, x in zip(convs, v, strict=False))
            item_conv: Converter = None
            if args:
                schema["items"], item_conv = self.build(args[0])
            return schema, (lambda v: tuple(item_conv(x) for x in v)) if item_conv else tuple
        item_conv = None
        if args:
            schema["items"], item_conv = self.build(args[0])
        if container in _SET_ORIGINS:
            schema["uniqueItems"] = True
            make = frozenset if container is frozenset else set
            return schema, (lambda v: make(item_conv(x) for x in v)) if item_conv else make
        return schema, (lambda v: [item_conv(x) for x in v]) if item_conv else None

    def _mapping(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Converter]:
        schema: dict[str, Any] = {"type": "object"}
        if not args:
            return schema, None
        key, value = args
        if key not in (str, Any):
            raise UnsupportedType(f"mapping keys of type {key!r} (JSON object keys are strings)")
        if value is Any:
            return schema, None
        schema["additionalProperties"], conv = self.build(value)
        return schema, (lambda v: {k: conv(x) for k, x in v.items()}) if conv else None

    def _object(
        self, fields: list[tuple[str, Any, bool, Any, str | None]]
    ) -> tuple[dict[str, Any], dict[str, Converter]]:
        props: dict[str, Any] = {}
        required: list[str] = []
        convs: dict[str, Converter] = {}
        for fname, ftype, is_required, default, desc in fields:
            schema, conv = self.build(ftype)
            schema = dict(schema)
            if desc and "description" not in schema:
                schema["description"] = desc
            if is_required:
                required.append(fname)
            elif default is not dataclasses.MISSING:
                ok, value = jsonable_default(default)
                if ok:
                    schema["default"] = value
            props[fname] = schema
            if conv:
                convs[fname] = conv
        out: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        return out, convs

    def _typeddict(self, tp: Any) -> tuple[dict[str, Any], Converter]:
        hints = typing.get_type_hints(tp, include_extras=True)
        required_keys = getattr(tp, "__required_keys__", set(hints))
        docs = docstring_params(tp.__doc__)
        fields = [
            (k, _field_type(v), _field_required(v, k in required_keys), dataclasses.MISSING, docs.get(k))
            for k, v in hints.items()
        ]
        schema, convs = self._object(fields)
        schema = {"title": tp.__name__, **schema}
        return schema, lambda v: _apply(convs, v)

    def _dataclass(self, tp: Any) -> tuple[dict[str, Any], Converter]:
        hints = typing.get_type_hints(tp, include_extras=True)
        docs = docstring_params(tp.__doc__)
        fields = []
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            default = f.default
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            desc = f.metadata.get("description") or docs.get(f.name)
            fields.append((f.name, hints[f.name], not has_default,
                           default if has_default else dataclasses.MISSING, desc))
        schema, convs = self._object(fields)
        # Its constructor takes its fields and nothing else: another key is refused before it is called.
        schema = {"title": tp.__name__, **schema, "additionalProperties": False}

        def load(value: Any) -> Any:
            if not isinstance(value, Mapping):
                return value
            return tp(**_apply(convs, value))

        return schema, load


def _apply(converters: dict[str, Converter], value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` with each key's converter applied (keys without one are kept as they are)."""
    out = {}
    for key, item in value.items():
        convert = converters.get(key)
        out[key] = convert(item) if convert is not None else item
    return out


class ReturnSchemaBuilder(SchemaBuilder):
    """A return annotation's schema: rich result types (registered by :mod:`flask_tooldiscovery.tools.results`)
    as their canonical form, and ``bytes`` as an image, audio or file when the tool declares their MIME type."""

    def __init__(self, bytes_mime_type: str | None) -> None:
        super().__init__()
        self.bytes_mime_type = bytes_mime_type

    def build(self, tp: Any) -> tuple[dict[str, Any], Converter]:
        rich = RICH[0].schema_for_type(tp, self.bytes_mime_type)
        return (rich, None) if rich is not None else super().build(tp)
