"""Gemini function declarations (an OpenAPI 3.0 schema subset): what they refuse in a schema, and
the simplified schema they accept (``nullable`` for null, string enums, one type or ``anyOf``)."""

from __future__ import annotations

import json
import re

from ..schema.json_schema import split_nullable, walk
from .schema_rewrite import (
    ANY_SCALAR,
    Schema,
    constraint,
    note,
    rewrite,
    uses_refs,
    vendor_form,
    where,
)

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
_PARAMETER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_KEYS = {"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
         "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
         "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}
_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def lint(schema: Schema) -> list[str]:
    out = [] if schema.get("type") == "object" else ["parameters must be an object schema (type 'object')"]
    if uses_refs(schema):
        out.append("$ref/$defs are not supported: every definition must be inlined")
    for name in schema.get("properties") or {}:
        if not _PARAMETER.match(name):
            out.append(f"parameter name {name!r} must start with a letter or '_' and hold only letters, digits, '_'")
    for path, node in walk(schema):
        here = where(path)
        for key in sorted(set(node) - _KEYS - {"$ref", "$defs", "definitions"}):
            out.append(f"{here}: keyword {key!r} is not supported")
        kind = node.get("type")
        if kind is None and not any(k in node for k in ("anyOf", "enum", "$ref")) and path[-2:-1] != ("$defs",):
            out.append(f"{here}: no type; Gemini needs one (or anyOf)")
        if kind is not None and not (isinstance(kind, str) and kind in _TYPES):
            out.append(f"{here}: type {kind!r} is not supported (one of {', '.join(sorted(_TYPES))}; "
                       f"nullable: true for null)")
        fmt = node.get("format")
        if fmt is not None and fmt not in _FORMATS.get(str(kind), set()):
            out.append(f"{here}: format {fmt!r} is not supported for type {kind!r}")
        if isinstance(node.get("enum"), list) and not all(isinstance(v, str) for v in node["enum"]):
            out.append(f"{here}: enum values must be strings")
    return out


def _fix(node: Schema) -> Schema:
    if node.get("type") == "null" and len(node) == 1:
        return node  # a union's null branch: the union becomes nullable
    node = vendor_form(node)
    inner, nullable = split_nullable(node)
    node = dict(inner)
    notes = []
    kinds = node.get("type")
    if isinstance(kinds, list):
        kinds = [k for k in kinds if k != "null"]
        nullable = nullable or len(kinds) < len(node["type"])
        node.pop("type")
        if len(kinds) == 1:
            node["type"] = kinds[0]
        elif kinds:
            node["anyOf"] = [{"type": k} for k in kinds]
    if isinstance(node.get("anyOf"), list) and any(b.get("type") == "null" for b in node["anyOf"]):
        node["anyOf"], nullable = [b for b in node["anyOf"] if b.get("type") != "null"], True
    if node.get("type") == "null":
        node.pop("type")
        nullable = True
    if "const" in node:
        value = node.pop("const")
        if isinstance(value, str):
            node.update(type="string", enum=[value])
        else:
            notes.append(constraint("const", value))
    if isinstance(node.get("enum"), list) and not all(isinstance(v, str) for v in node["enum"]):
        notes.append(f"One of {json.dumps(node.pop('enum'))}.")
    prefix = node.pop("prefixItems", None)
    if node.get("items") is False:
        node.pop("items")
    if isinstance(prefix, list) and prefix and "items" not in node:
        node["items"] = prefix[0] if len(prefix) == 1 else {"anyOf": prefix}
    if not any(k in node for k in ("type", "anyOf", "enum")):
        node["anyOf"] = [dict(a) for a in ANY_SCALAR if a["type"] != "null"]
        notes.append("Any JSON value.")
    fmt = node.get("format")
    if fmt is not None and fmt not in _FORMATS.get(str(node.get("type")), set()):
        notes.append(constraint("format", node.pop("format")))
    for key in sorted(set(node) - _KEYS):
        notes.append(constraint(key, node.pop(key)))
    if nullable:
        node["nullable"] = True
    note(node, *notes)
    return node


def simplify(schema: Schema) -> Schema:
    return rewrite(schema, _fix)
