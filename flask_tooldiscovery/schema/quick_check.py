"""A check compiled once per schema that says quickly that a value is valid: tried before
jsonschema on every call, it only ever answers ``True`` for a value jsonschema accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .check import without_draft

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


#: The Python types of a JSON value of each type, as the flat check below takes them (an integral
#: float is not taken for an integer there: jsonschema decides).
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "null": (type(None),),
    "array": (list,), "object": (dict,)}
_FLAT_KEYS = frozenset(("type", "properties", "required", "additionalProperties")) | _ANNOTATIONS
_TYPE_ONLY = frozenset(("type",)) | _ANNOTATIONS


def _flat_object(schema: dict[str, Any]) -> Check | None:
    """The usual input schema (an object whose properties each declare one type, some required,
    other properties allowed or not) as one check, or ``None`` for any other schema."""
    props, required = schema.get("properties") or {}, schema.get("required") or []
    extra = schema.get("additionalProperties", True)
    if (schema.get("type") != "object" or not _FLAT_KEYS.issuperset(schema) or type(props) is not dict
            or type(required) is not list or type(extra) is not bool):
        return None
    types: dict[str, tuple[type, ...]] = {}
    for name, sub in props.items():
        kind = sub.get("type") if type(sub) is dict else None
        if type(kind) is not str or kind not in _EXACT_TYPES or not _TYPE_ONLY.issuperset(sub):
            return None
        types[name] = _EXACT_TYPES[kind]
    needed = tuple(required)

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return False
        for name in needed:
            if name not in v:
                return False
        for name, item in v.items():
            allowed = types.get(name)
            if allowed is None:
                if not extra:
                    return False
            elif type(item) not in allowed:
                return False
        return True

    return check


def quick_check(schema: Any) -> Check | None:
    """A check that says quickly that a value is valid against ``schema`` (a draft 2020-12 schema
    made of the common keywords), or ``None``. It only ever answers ``True`` for a value
    jsonschema accepts; on ``False`` jsonschema is asked, and its errors are the answer."""
    schema = without_draft(schema)
    return (_flat_object(schema) if type(schema) is dict else None) or _compile(schema)
