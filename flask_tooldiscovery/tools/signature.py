"""A Python function's signature and docstring -> JSON Schema (and back to Python values).

:func:`describe_function` reads type hints and the docstring once, at decoration time, and returns
the input schema, the output schema, the names of injected :class:`~.tool.ToolContext` parameters
and a loader that turns validated JSON arguments into the Python values the function declared
(enum members, dataclass instances, tuples, sets, datetimes).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as _dt
import enum
import functools
import inspect
import re
import types
import typing
import uuid
from collections import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

import docstring_parser
import docstring_parser.google
import docstring_parser.rest
from marshmallow import ValidationError

from ..errors import ToolDiscoveryError
from .json_schema import inline_refs
from .model import ToolContext
from .results import kind_of, schema_for_type, schema_of

Converter = Callable[[Any], Any] | None

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


class SignatureError(ToolDiscoveryError, TypeError):
    """A function cannot be offered as a tool; the message names the function and parameter."""


class _Unsupported(ToolDiscoveryError):
    """Internal: an annotation has no JSON Schema form."""


@dataclass(frozen=True)
class FunctionDescription:
    """What :func:`describe_function` learned about a function."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    context_params: tuple[str, ...]
    load_arguments: Callable[[Mapping[str, Any]], dict[str, Any]]
    is_async: bool


def is_async_callable(func: Callable[..., Any]) -> bool:
    """True for ``async def`` functions, also behind ``functools.partial`` or ``__call__``."""
    while isinstance(func, functools.partial):
        func = func.func
    if type(func) is types.FunctionType:  # its type's __call__ is a slot wrapper, never a coroutine function
        return inspect.iscoroutinefunction(func)
    return inspect.iscoroutinefunction(func) or (
        callable(func) and inspect.iscoroutinefunction(type(func).__call__)
    )


def _jsonable_default(value: Any) -> tuple[bool, Any]:
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
        items = [_jsonable_default(v) for v in value]
        return (all(ok for ok, _ in items), [v for _, v in items])
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items2 = {k: _jsonable_default(v) for k, v in value.items()}
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
            raise _Unsupported(f"literal value {v!r}")
    if types_seen == {"integer", "number"}:
        types_seen = {"number"}
    if len(types_seen) == 1:
        return {"type": types_seen.pop()}
    return {"type": sorted(types_seen)} if types_seen else {}


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_context(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and args[0] is ToolContext
    return False


def _from_base64(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError("not valid base64 text") from None


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


class _SchemaBuilder:
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
                return {"type": "integer"}, _integral
            if tp is float:
                return {"type": "number"}, lambda v: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
            return {"type": _SIMPLE[tp]}, None
        if tp is bytes:  # base64 text on the wire, bytes in Python
            return {"type": "string", "contentEncoding": "base64"}, _from_base64
        if tp in _FORMATTED:
            fmt, parse = _FORMATTED[tp]
            return {"type": "string", "format": fmt}, lambda v: parse(v) if isinstance(v, str) else v

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
        raise _Unsupported(repr(tp))

    def _guarded(
        self, tp: Any, fn: Callable[[Any], tuple[dict[str, Any], Converter]]
    ) -> tuple[dict[str, Any], Converter]:
        if tp in self._stack:
            raise _Unsupported(f"recursive type {tp.__name__}")
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
            raise _Unsupported(f"mapping keys of type {key!r} (JSON object keys are strings)")
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
                ok, value = _jsonable_default(default)
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
        docs = _docstring_params(tp.__doc__)
        fields = [
            (k, v, k in required_keys, dataclasses.MISSING, docs.get(k)) for k, v in hints.items()
        ]
        schema, convs = self._object(fields)
        schema = {"title": tp.__name__, **schema}
        return schema, lambda v: _apply(convs, v)

    def _dataclass(self, tp: Any) -> tuple[dict[str, Any], Converter]:
        hints = typing.get_type_hints(tp, include_extras=True)
        docs = _docstring_params(tp.__doc__)
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
        schema = {"title": tp.__name__, **schema}

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


#: A line that may open a section in the ReST (``:``), Epydoc (``@``) or NumPy (a ``---``
#: underline, a ``.. deprecated::`` directive) styles.
_OTHER_STYLES = re.compile(r"^(?:[:@]|-|\.\.)", re.MULTILINE)
_GOOGLE = docstring_parser.google.GoogleParser()


def _parse_doc(text: str) -> docstring_parser.Docstring:
    """``docstring_parser.parse(text)`` (style auto-detected), without running the four parsers
    when the answer is known: auto-detection keeps the parse with the most sections, the first of
    ReST, Google, NumPy, Epydoc on a tie, and a text with no line that can open a ReST, Epydoc or
    NumPy section gives those three no section at all."""
    if _OTHER_STYLES.search(text):
        return docstring_parser.parse(text)
    if ":" not in text:  # no Google section title either ("Args:"): no style finds a section
        return docstring_parser.rest.parse(text)
    try:
        google = _GOOGLE.parse(text)  # what docstring_parser.google.parse does, without a new parser
    except docstring_parser.ParseError:
        return docstring_parser.parse(text)
    return google if google.meta else docstring_parser.rest.parse(text)


def _docstring_params(doc: str | None) -> dict[str, str]:
    if not doc:
        return {}
    parsed = _parse_doc(inspect.cleandoc(doc))
    return {p.arg_name: p.description for p in parsed.params if p.description}


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str], str | None]:
    """(description, parameter descriptions, returns description) from a Google, NumPy or
    Sphinx style docstring."""
    if not doc:
        return "", {}, None
    parsed = _parse_doc(inspect.cleandoc(doc))
    text = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    params: dict[str, str] = {}
    for p in parsed.params:
        if p.description:
            # NumPy/Google allow "name (type)"; docstring_parser already splits the type off.
            params[p.arg_name.split(" ")[0].lstrip("*")] = " ".join(p.description.split())
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return text.strip(), params, returns


class _ReturnSchemaBuilder(_SchemaBuilder):
    """A return annotation's schema: rich result types (:mod:`.results`) as their canonical form,
    and ``bytes`` as an image, audio or file when the tool declares their MIME type."""

    def __init__(self, bytes_mime_type: str | None) -> None:
        super().__init__()
        self.bytes_mime_type = bytes_mime_type

    def build(self, tp: Any) -> tuple[dict[str, Any], Converter]:
        rich = schema_for_type(tp, self.bytes_mime_type)
        return (rich, None) if rich is not None else super().build(tp)


def _resolved(tp: Any, depth: int = 0) -> bool:
    """True when ``typing.get_type_hints`` would return ``tp`` as it is (or an equal rebuild):
    nothing in it is a string or a forward reference to evaluate."""
    if isinstance(tp, (str, typing.ForwardRef)) or depth > 16:
        return False
    origin = typing.get_origin(tp)
    if origin is None or origin is Literal:  # a class, a value; Literal's arguments are values
        return True
    if origin is typing.Annotated:  # the metadata are left alone; the annotated type is evaluated
        return _resolved(tp.__origin__, depth + 1)
    return all(_resolved(arg, depth + 1) for arg in getattr(tp, "__args__", ()))


@functools.lru_cache(maxsize=4096)
def _annotation_code(text: str) -> types.CodeType:
    return compile(text, "<string>", "eval")


#: What ``typing`` refuses as a parameter or return annotation (left to ``get_type_hints`` to say).
_NOT_ANNOTATIONS: tuple[Any, ...] = (typing.ClassVar, typing.Final, typing.Generic, typing.Protocol)


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """``typing.get_type_hints(func, include_extras=True)`` for a plain function, without its
    costs (it compiles every string annotation anew and rebuilds every generic alias): a string
    is evaluated in the function's globals from a cached compiled form, and the result is used
    when it is a type or a parametrized form holding nothing left to evaluate; in any other case
    (and for anything but a plain function) ``get_type_hints`` answers, errors included."""
    annotations = getattr(func, "__annotations__", None) if type(func) is types.FunctionType else None
    if not isinstance(annotations, dict) or hasattr(func, "__wrapped__"):
        return typing.get_type_hints(func, include_extras=True)
    namespace = getattr(func, "__globals__", {})
    hints: dict[str, Any] = {}
    for name, value in annotations.items():
        if isinstance(value, str):
            try:
                value = eval(_annotation_code(value), namespace, namespace)  # what ForwardRef does
            except Exception:
                return typing.get_type_hints(func, include_extras=True)
        if value is None:
            value = type(None)
        origin = typing.get_origin(value)
        plain = value is Any or (isinstance(value, type) and value not in _NOT_ANNOTATIONS) or (
            origin is not None and origin not in _NOT_ANNOTATIONS)
        if not plain or not _resolved(value):
            return typing.get_type_hints(func, include_extras=True)
        hints[name] = value
    return hints


def describe_function(
    func: Callable[..., Any], *, name: str | None = None, derive_input: bool = True,
    result_mime_type: str | None = None,
) -> FunctionDescription:
    """Read ``func`` once: its input and output schemas, context parameters and argument loader.

    With ``derive_input=False`` (an explicit input schema replaces derivation) parameters are not
    turned into a schema and ``**kwargs`` is allowed; context parameters are still found.
    """
    tool_name = name or getattr(func, "__name__", None) or type(func).__name__
    label = f"tool {tool_name!r} (function {getattr(func, '__qualname__', tool_name)})"
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise SignatureError(f"{label}: cannot read its signature: {exc}") from None
    try:
        hints = _type_hints(func)
    except Exception as exc:  # NameError for unresolvable forward references, and friends
        raise SignatureError(f"{label}: cannot resolve its type hints: {exc}") from None
    description, param_docs, returns_doc = parse_docstring(inspect.getdoc(func))

    builder = _SchemaBuilder()
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Callable[[Any], Any]] = {}
    context_params: list[str] = []
    for pname, param in signature.parameters.items():
        if not derive_input:
            if _is_context(hints.get(pname, param.annotation)):
                context_params.append(pname)
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise SignatureError(
                f"{label}: parameter {star}{pname} is not allowed; tools take named parameters only"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise SignatureError(
                f"{label}: parameter {pname!r} is positional-only; tools are called with keywords"
            )
        annotation = hints.get(pname, param.annotation)
        if _is_context(annotation):
            context_params.append(pname)
            continue
        try:
            schema, conv = builder.build(annotation)
        except _Unsupported as exc:
            raise SignatureError(
                f"{label}: parameter {pname!r} has annotation {annotation!r} that cannot be "
                f"expressed as JSON Schema ({exc})"
            ) from None
        schema = dict(schema)
        if pname in param_docs and "description" not in schema:
            schema["description"] = param_docs[pname]
        if param.default is param.empty:
            required.append(pname)
        else:
            ok, value = _jsonable_default(param.default)
            if ok:
                schema["default"] = value
        properties[pname] = schema
        if conv is not None:
            converters[pname] = conv

    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False

    output_schema: dict[str, Any] | None = None
    ret = hints.get("return", signature.return_annotation)
    if ret not in (inspect.Signature.empty, None, type(None)):
        try:
            output_schema = dict(_ReturnSchemaBuilder(result_mime_type).build(ret)[0]) or None
        except _Unsupported:
            output_schema = None
    elif result_mime_type is not None:  # no annotation: the declared MIME type says what it returns
        output_schema = schema_of(kind_of(result_mime_type), result_mime_type)
    if output_schema is not None and returns_doc and "description" not in output_schema:
        output_schema["description"] = returns_doc

    def load_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not converters:  # plain JSON values all through: nothing to convert
            return dict(arguments)
        loaded, errors = {}, {}
        for key, value in arguments.items():
            try:
                loaded[key] = converters[key](value) if key in converters else value
            except (ValueError, TypeError) as exc:  # named after the parameter, as validation errors are
                errors[key] = [str(exc).splitlines()[0] if str(exc) else type(exc).__name__]
        if errors:
            raise ValidationError(errors)
        return loaded

    return FunctionDescription(
        name=tool_name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        context_params=tuple(context_params),
        load_arguments=load_arguments,
        is_async=is_async_callable(func),
    )
