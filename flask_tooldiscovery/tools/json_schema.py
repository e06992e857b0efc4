"""Reading and checking JSON Schema documents: compiled validators (cached), per-parameter
validation errors with JSON pointers, and helpers dialects use to read a property's type."""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for

from ..errors import ToolDiscoveryError

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")


class InvalidSchemaError(ToolDiscoveryError, ValueError):
    """A tool's input or output schema is not a valid JSON Schema."""


@dataclass(frozen=True)
class ArgumentError:
    """One way the arguments fail the input schema."""

    #: JSON Pointer to the offending value ("" is the arguments object itself).
    path: str
    #: The top-level parameter concerned, or ``None`` for the arguments object as a whole.
    parameter: str | None
    message: str
    #: The JSON Schema keyword that failed (``required``, ``type``, ``enum``...).
    keyword: str

    def as_dict(self) -> dict[str, str]:
        """``{path, message, keyword}`` as the explorer's F7 answer writes it."""
        return {"path": self.path, "message": self.message, "keyword": self.keyword}


def _canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)


def check_schema(schema: Any, *, what: str = "schema") -> None:
    """Raise :class:`InvalidSchemaError` unless ``schema`` is a valid JSON Schema.

    Schemas made of the common keywords (what signatures, marshmallow and pydantic produce) are
    accepted by :func:`plainly_valid` without jsonschema's meta-schema pass; anything else, and
    every invalid schema, goes through that pass, so the verdict and the message are its own."""
    if not isinstance(schema, (dict, bool)):
        raise InvalidSchemaError(f"{what} must be a JSON object, not {type(schema).__name__}")
    if plainly_valid(schema):
        return
    try:
        compile_validator(_canonical(schema))
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise InvalidSchemaError(
            f"{what} is not a valid JSON Schema: {exc.message}" + (f" (at /{where})" if where else "")
        ) from None


_DRAFT_2020_12 = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
_SIMPLE_TYPES = frozenset(("array", "boolean", "integer", "null", "number", "object", "string"))
#: Keywords whose value is one schema / a non-empty list of schemas / an object of schemas.
_ONE_SCHEMA = frozenset(("items", "contains", "additionalProperties", "propertyNames", "if", "then", "else",
                         "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"))
_SCHEMA_LISTS = frozenset(("prefixItems", "allOf", "anyOf", "oneOf"))
_SCHEMA_MAPS = frozenset(("properties", "$defs", "dependentSchemas"))
_STRINGS = frozenset(("title", "description", "format", "contentEncoding", "contentMediaType", "$comment"))
_NUMBERS = frozenset(("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"))
_COUNTS = frozenset(("maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains",
                     "maxProperties", "minProperties"))
_BOOLEANS = frozenset(("uniqueItems", "deprecated", "readOnly", "writeOnly"))
_ANY_VALUE = frozenset(("const", "default"))
_ARRAYS = frozenset(("enum", "examples"))
_MAX_DEPTH = 64


def _plain_json(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is made of JSON's own types only (so encoding it cannot fail)."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if depth > _MAX_DEPTH:
        return False
    if kind is list:
        return all(_plain_json(v, depth + 1) for v in value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    return False


def _plain_schema(node: Any, depth: int) -> bool:
    kind = type(node)
    if kind is bool:
        return True
    if kind is not dict or depth > _MAX_DEPTH:
        return False
    for key, value in node.items():
        vtype = type(value)
        if key in _SCHEMA_MAPS:
            if vtype is not dict or not all(type(k) is str and _plain_schema(v, depth + 1) for k, v in value.items()):
                return False
        elif key in _ONE_SCHEMA:
            if not _plain_schema(value, depth + 1):
                return False
        elif key in _SCHEMA_LISTS:
            if vtype is not list or not value or not all(_plain_schema(v, depth + 1) for v in value):
                return False
        elif key == "type":
            if vtype is str:
                if value not in _SIMPLE_TYPES:
                    return False
            elif vtype is not list or not value or not all(type(t) is str and t in _SIMPLE_TYPES for t in value) \
                    or len(set(value)) != len(value):
                return False
        elif key == "required":
            if vtype is not list or not all(type(v) is str for v in value) or len(set(value)) != len(value):
                return False
        elif key in _STRINGS:
            if vtype is not str:
                return False
        elif key in _NUMBERS:
            if vtype not in (int, float):
                return False
        elif key in _COUNTS:
            if vtype is not int or value < 0:
                return False
        elif key in _BOOLEANS:
            if vtype is not bool:
                return False
        elif key in _ARRAYS:
            if vtype is not list or not _plain_json(value, depth):
                return False
        elif key in _ANY_VALUE:
            if not _plain_json(value, depth):
                return False
        elif key == "multipleOf":
            if vtype not in (int, float) or not value > 0:
                return False
        elif key == "pattern":
            if vtype is not str:
                return False
            try:
                re.compile(value)
            except re.error:
                return False
        else:  # "$ref", "$id", "patternProperties", other drafts' keywords, unknown ones...
            return False
    return True


def plainly_valid(schema: Any) -> bool:
    """True when ``schema`` is certainly a valid draft 2020-12 JSON Schema by a quick walk: every
    keyword one of the common ones, with the value the meta-schema asks for, every value made of
    JSON's own types. ``False`` means "not sure", never "invalid": ask :func:`check_schema`."""
    return _plain_schema(_without_draft(schema), 0)


def _without_draft(schema: Any) -> Any:
    """``schema`` without its ``$schema`` when that names draft 2020-12; ``None`` (which neither
    :func:`_plain_schema` nor :func:`_compile` vouches for) when it names another draft."""
    if type(schema) is not dict or "$schema" not in schema:
        return schema
    if schema["$schema"] not in _DRAFT_2020_12:
        return None
    return {k: v for k, v in schema.items() if k != "$schema"}


@lru_cache(maxsize=1024)
def compile_validator(canonical_schema: str) -> Validator:
    """A validator for a schema given as canonical JSON text (cached: compiled once per schema).

    Draft 2020-12 unless the schema's ``$schema`` names another draft; formats are checked.
    """
    schema = json.loads(canonical_schema)
    cls = validator_for(schema, default=Draft202012Validator)
    if not plainly_valid(schema):
        cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


#: Validators by schema object: a tool's schema is looked up by identity, without encoding it
#: (the entry keeps the schema alive, so its id cannot be reused while it is there), with the
#: quick check compiled for it (``None`` when it has none).
_BY_ID: OrderedDict[int, tuple[Any, Validator, Check | None]] = OrderedDict()
_BY_ID_MAX = 16_384
_BY_ID_LOCK = threading.Lock()
_ACCEPT_ALL: dict[str, Any] = {}


def _entry(schema: dict[str, Any] | None) -> tuple[Any, Validator, Check | None]:
    if schema is None:
        schema = _ACCEPT_ALL
    found = _BY_ID.get(id(schema))
    if found is not None and found[0] is schema:
        return found
    validator = compile_validator(_canonical(schema))
    entry = (schema, validator, quick_check(schema))
    with _BY_ID_LOCK:
        _BY_ID[id(schema)] = entry
        if len(_BY_ID) > _BY_ID_MAX:
            _BY_ID.popitem(last=False)
    return entry


def validator_for_schema(schema: dict[str, Any] | None) -> Validator:
    """The cached validator of ``schema`` (``None`` accepts everything). A schema must not be
    changed in place once it has been used (tools' schemas never are)."""
    return _entry(schema)[1]


#: ``check(value) -> True`` only when ``value`` is valid (``False``: not valid, or not sure).
Check = Callable[[Any], bool]
_NUMBER_TYPES = (int, float)
_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) in _NUMBER_TYPES,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}
_ANNOTATIONS = frozenset(("title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
                          "$comment", "contentEncoding", "contentMediaType"))
_JSON_VALUE_TYPES = (str, int, float, bool, type(None), list, dict)


def _same(a: Any, b: Any) -> bool:
    """jsonschema's equality for scalars (``True`` is not ``1``; ``1`` is ``1.0``); ``False``
    for containers (not sure: jsonschema decides)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) in (list, dict) or type(b) in (list, dict):
        return False
    return bool(a == b)


# The checks below are plain loops: a generator per check would cost more than the check itself.


def _any_type(tests: list[Callable[[Any], bool]]) -> Check:
    def check(v: Any) -> bool:
        for test in tests:  # noqa: SIM110 (a loop: no generator per call)
            if test(v):
                return True
        return False

    return check


def _properties(props: dict[str, Check]) -> Check:
    pairs = tuple(props.items())

    def check(v: Any) -> bool:
        if type(v) is dict:
            for name, each in pairs:
                if name in v and not each(v[name]):
                    return False
        return True

    return check


def _required(names: tuple[str, ...]) -> Check:
    def check(v: Any) -> bool:
        if type(v) is dict:
            for name in names:
                if name not in v:
                    return False
        return True

    return check


def _additional(known: frozenset[str], extra: Check) -> Check:
    def check(v: Any) -> bool:
        if type(v) is dict:
            for name, item in v.items():
                if name not in known and not extra(item):
                    return False
        return True

    return check


def _items(each: Check) -> Check:
    return lambda v: type(v) is not list or all(each(item) for item in v)


def _any_of(options: list[Check]) -> Check:
    return lambda v: any(o(v) for o in options)


def _one_of_values(allowed: list[Any]) -> Check:
    return lambda v: any(_same(v, a) for a in allowed)


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda v, b: bool(v >= b), "maximum": lambda v, b: bool(v <= b),
    "exclusiveMinimum": lambda v, b: bool(v > b), "exclusiveMaximum": lambda v, b: bool(v < b)}


def _bound(key: str, bound: Any) -> Check:
    compare = _COMPARE[key]
    return lambda v: type(v) not in _NUMBER_TYPES or compare(v, bound)


def _size(key: str, n: int) -> Check:
    kind: Any = str if key.endswith("Length") else list
    low = key.startswith("min")

    def check(v: Any) -> bool:
        if type(v) is not kind:
            return True
        size = len(v)
        return size >= n if low else size <= n

    return check


def _all_of(checks: list[Check]) -> Check:
    if len(checks) == 1:
        only = checks[0]
        return lambda v: type(v) in _JSON_VALUE_TYPES and only(v)
    every = tuple(checks)

    def check(v: Any) -> bool:
        if type(v) not in _JSON_VALUE_TYPES:
            return False
        for each in every:  # noqa: SIM110 (a loop: no generator per call)
            if not each(v):
                return False
        return True

    return check


def _compile(schema: Any, depth: int = 0) -> Check | None:
    if schema is True:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if type(schema) is not dict or depth > 32:
        return None
    checks: list[Check] = []
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            names = [value] if type(value) is str else value
            if type(names) is not list or not names or not all(n in _TYPE_TESTS for n in names):
                return None
            tests = [_TYPE_TESTS[n] for n in names]
            checks.append(tests[0] if len(tests) == 1 else _any_type(tests))
        elif key == "properties":
            if type(value) is not dict:
                return None
            props: dict[str, Check] = {}
            for name, sub in value.items():
                compiled = _compile(sub, depth + 1)
                if compiled is None:
                    return None
                props[name] = compiled
            checks.append(_properties(props))
        elif key == "required":
            if type(value) is not list:
                return None
            checks.append(_required(tuple(value)))
        elif key == "additionalProperties":
            extra = _compile(value, depth + 1)
            if extra is None:
                return None
            checks.append(_additional(frozenset(schema.get("properties") or ()), extra))
        elif key == "items":
            each = _compile(value, depth + 1)
            if each is None:
                return None
            checks.append(_items(each))
        elif key == "anyOf":
            if type(value) is not list or not value:
                return None
            options = [_compile(sub, depth + 1) for sub in value]
            if any(o is None for o in options):
                return None
            checks.append(_any_of([o for o in options if o is not None]))
        elif key in ("enum", "const"):
            allowed = value if key == "enum" else [value]
            if type(allowed) is not list:
                return None
            checks.append(_one_of_values(allowed))
        elif key in _COMPARE:
            if type(value) not in _NUMBER_TYPES:
                return None
            checks.append(_bound(key, value))
        elif key in ("minLength", "maxLength", "minItems", "maxItems"):
            if type(value) is not int:
                return None
            checks.append(_size(key, value))
        else:  # format, pattern, patternProperties, prefixItems, $ref, oneOf...: jsonschema decides
            return None
    return _all_of(checks)


def quick_check(schema: Any) -> Check | None:
    """A check that says quickly that a value is valid against ``schema`` (a draft 2020-12 schema
    made of the common keywords), or ``None``. It only ever answers ``True`` for a value
    jsonschema accepts; on ``False`` jsonschema is asked, and its errors are the answer."""
    return _compile(_without_draft(schema))


def _pointer(parts: Iterable[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _as_json(value: Any, limit: int = 60) -> str:
    """A value as JSON text (``null``, ``true``, ``"text"``), shortened: messages go to JSON
    clients and models, who know JSON, not Python reprs."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_message(instance: Any, wanted: Iterable[Any]) -> str:
    return f"{_as_json(instance)} is not of type " + " or ".join(f"'{t}'" for t in wanted)


def _errors_of(error: jsonschema.ValidationError) -> list[ArgumentError]:
    path = list(error.absolute_path)
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return [ArgumentError(_pointer(path), str(path[0]) if path else None,
                              _type_message(error.instance, wanted), "type")]
    if error.validator == "required" and isinstance(error.instance, dict):
        required: Any = error.validator_value
        missing = [n for n in required if n not in error.instance]
        return [
            ArgumentError(
                _pointer([*path, n]),
                str(path[0]) if path else n,
                "Missing required parameter." if not path else f"Missing required property {n!r}.",
                "required",
            )
            for n in missing
        ]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        parent: Any = error.schema
        known = set((parent.get("properties") or {}).keys())
        extras = [k for k in error.instance if k not in known]
        if extras and not parent.get("patternProperties"):
            return [
                ArgumentError(
                    _pointer([*path, k]),
                    str(path[0]) if path else k,
                    "Unexpected parameter." if not path else f"Unexpected property {k!r}.",
                    "additionalProperties",
                )
                for k in extras
            ]
    if error.context and error.validator in ("anyOf", "oneOf"):
        # Say what was expected rather than "... is not valid under any of the given schemas".
        own = [e for e in error.context if not e.relative_path]
        if own and all(e.validator == "type" for e in own):
            wanted = []
            for e in own:
                for t in e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]:
                    if t not in wanted:
                        wanted.append(t)
            return [ArgumentError(
                _pointer(path), str(path[0]) if path else None, _type_message(error.instance, wanted), "type",
            )]
        best = jsonschema.exceptions.best_match(error.context)
        if best is not None and best.validator != "type":
            return _errors_of(best)
    return [
        ArgumentError(
            _pointer(path), str(path[0]) if path else None, error.message, str(error.validator)
        )
    ]


def validate_arguments(
    schema: dict[str, Any] | None, arguments: Any, *, limit: int | None = None
) -> list[ArgumentError]:
    """Every way ``arguments`` fails ``schema``, sorted by path; empty when valid.

    With ``limit``, at most that many are returned; one more entry (keyword ``limit``) says how
    many were left out (counted up to :data:`MAX_COUNTED`), so a huge bad input gets a small answer.
    """
    _, validator, check = _entry(schema)
    if check is not None and check(arguments):
        return []
    seen: set[tuple[str, str]] = set()
    out: list[ArgumentError] = []
    more = 0
    for error in validator.iter_errors(arguments):
        if limit is not None and len(out) >= limit:
            more += 1
            if more >= MAX_COUNTED:
                break
            continue
        for item in _errors_of(error):
            key = (item.path, item.message)
            if key not in seen:
                seen.add(key)
                out.append(item)
    out.sort(key=lambda e: e.path)
    if limit is not None and len(out) > limit:
        more += len(out) - limit
        out = out[:limit]
    if more:
        count = f"{more}" if more < MAX_COUNTED else f"at least {MAX_COUNTED}"
        out.append(ArgumentError("", None, f"... and {count} more errors not shown.", "limit"))
    return out


#: How far errors past the limit are counted before counting stops.
MAX_COUNTED = 10_000


def parameter_errors(errors: Iterable[ArgumentError]) -> dict[str, str]:
    """``{parameter: message}``; errors about the object as a whole go under ``""``... joined."""
    out: dict[str, str] = {}
    for err in errors:
        key = err.parameter if err.parameter is not None else ""
        out[key] = f"{out[key]} {err.message}" if key in out else err.message
    return out


def split_nullable(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the non-null schema, nullable?) for ``anyOf: [X, {type: null}]`` and ``type: [X, null]``."""
    if not isinstance(schema, dict):
        return {}, False
    variants = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(variants, list):
        non_null = [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")]
        if len(non_null) == 1 and len(non_null) < len(variants):
            merged = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            merged.update({k: v for k, v in non_null[0].items() if k not in merged})
            return merged, True
    stype = schema.get("type")
    if isinstance(stype, list) and "null" in stype:
        rest = [t for t in stype if t != "null"]
        if len(rest) == 1:
            return {**schema, "type": rest[0]}, True
    return schema, False


def primary_type(schema: dict[str, Any], default: str = "string") -> str:
    """The one JSON type a client should assume for ``schema`` (after removing ``null``)."""
    inner, _ = split_nullable(schema)
    stype = inner.get("type")
    if isinstance(stype, list):
        stype = next((t for t in stype if t != "null"), None)
    if isinstance(stype, str) and stype in JSON_TYPES:
        return stype
    if inner.get("enum"):
        first = inner["enum"][0]
        return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(first), default)
    if "properties" in inner:
        return "object"
    if "items" in inner or "prefixItems" in inner:
        return "array"
    return default


def inline_refs(schema: Any, *, max_depth: int = 32) -> Any:
    """A copy of ``schema`` with local ``$ref``s (``#/$defs/...``, ``#/definitions/...``)
    replaced by what they point to and the definitions removed. A definition met again inside
    itself (a recursive model) is not expanded again: it becomes ``{"type": ...}`` with a
    description naming it, so a tree of two recursive fields stays small; past ``max_depth``
    nested expansions a reference becomes an unconstrained ``{}``. For wire formats that
    exclude ``$ref``."""
    if not isinstance(schema, dict):
        return schema
    if "$defs" not in schema and "definitions" not in schema:  # nothing to resolve: a copy without defs
        return _without_defs(schema)
    defs: dict[str, Any] = {}
    for section in ("$defs", "definitions"):
        for name, value in (schema.get(section) or {}).items():
            defs[f"#/{section}/{name}"] = value

    def recursive(ref: str) -> dict[str, Any]:
        target = defs[ref] if isinstance(defs[ref], dict) else {}
        name = target.get("title") or ref.rsplit("/", 1)[-1]
        out = {k: target[k] for k in ("type",) if k in target}
        out["description"] = f"A {name}, of the same shape as the enclosing one (recursive)."
        return out

    def walk(node: Any, expanding: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, expanding) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in defs:
            if len(expanding) >= max_depth:
                return {}
            siblings = {k: walk(v, expanding) for k, v in node.items() if k not in ("$ref", "$defs", "definitions")}
            target = recursive(ref) if ref in expanding else walk(defs[ref], (*expanding, ref))
            return {**target, **siblings} if isinstance(target, dict) else target
        return {k: walk(v, expanding) for k, v in node.items() if k not in ("$defs", "definitions")}

    return walk(schema, ())


def _without_defs(node: Any) -> Any:
    """A copy of ``node`` with every ``$defs``/``definitions`` dropped (what :func:`inline_refs`
    makes when the root defines nothing a reference could point to)."""
    if isinstance(node, dict):
        return {k: v if type(v) in _SCALARS else _without_defs(v)
                for k, v in node.items() if k != "$defs" and k != "definitions"}
    if isinstance(node, list):
        return [n if type(n) in _SCALARS else _without_defs(n) for n in node]
    return node


_SCALARS = frozenset((str, int, float, bool, type(None)))
