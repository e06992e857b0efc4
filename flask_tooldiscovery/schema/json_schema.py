"""Reading JSON Schema documents: every subschema (walked or rebuilt), a property's one type and
whether it is nullable, and a copy with local references inlined (for wire formats without ``$ref``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
#: The Python types of JSON's scalars (a value of one of them holds nothing to convert or walk).
JSON_SCALARS = frozenset((str, int, float, bool, type(None)))
#: Keywords whose value is a map of names to schemas / a list of schemas / one schema.
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SINGLE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
           "unevaluatedItems", "unevaluatedProperties", "additionalItems")


def walk(schema: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every subschema of ``schema`` (itself first) with its path of keys: ``("properties", "line",
    "items")`` for the items of parameter ``line``, list members by their index."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key, value in schema.items():
        if key in _MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from walk(sub, (*path, key, str(name)))
        elif key in _LISTS or (key == "items" and isinstance(value, list)):
            for i, sub in enumerate(value if isinstance(value, list) else []):
                yield from walk(sub, (*path, key, str(i)))
        elif key in _SINGLE:
            yield from walk(value, (*path, key))


def rebuild(node: Any, fix: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of ``node`` with ``fix`` applied bottom-up to every subschema (the root last)."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key, value in node.items():
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: rebuild(sub, fix) for name, sub in value.items()}
        elif (key in _LISTS or key == "items") and isinstance(value, list):
            out[key] = [rebuild(sub, fix) for sub in value]
        elif key in _SINGLE:
            out[key] = rebuild(value, fix)
    return fix(out)


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
        return {k: v if type(v) in JSON_SCALARS else _without_defs(v)
                for k, v in node.items() if k != "$defs" and k != "definitions"}
    if isinstance(node, list):
        return [n if type(n) in JSON_SCALARS else _without_defs(n) for n in node]
    return node

