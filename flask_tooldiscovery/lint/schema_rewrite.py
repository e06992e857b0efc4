"""Schema rewriting shared by the targets: references inlined, ``allOf`` merged, a root union made
one object, constraints a target cannot express written into descriptions, and the lint's way of
naming a place in a schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from ..schema.json_schema import inline_refs, primary_type, rebuild, walk

Schema = dict[str, Any]
#: Any JSON scalar, as the branches of an ``anyOf`` (for a schema without a type).
ANY_SCALAR = [{"type": t} for t in ("string", "number", "boolean", "null")]


def where(path: tuple[str, ...]) -> str:
    """``("properties", "line", "properties", "start")`` -> ``"parameter 'line.start'"``; other paths
    as JSON pointers."""
    if not path:
        return "the input schema"
    if all(k == "properties" for k in path[::2]) and len(path) % 2 == 0:
        return f"parameter {'.'.join(path[1::2])!r}"
    return "/" + "/".join(path)


def dangling_refs(schema: Any) -> list[str]:
    """Local ``$ref``s that point nowhere in ``schema``."""
    out = []
    for path, node in walk(schema):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            target: Any = schema
            for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            if target is None:
                out.append(f"{where(path)}: $ref {ref!r} points to nothing in the schema")
    return out


def uses_refs(schema: Any) -> bool:
    return any("$ref" in node or "$defs" in node or "definitions" in node for _, node in walk(schema))


def is_object(node: Schema) -> bool:
    return node.get("type") == "object" or ("type" not in node and "properties" in node)


def note(node: Schema, *sentences: str) -> None:
    text = " ".join(s for s in sentences if s)
    if text:
        node["description"] = f"{node['description'].rstrip()} {text}" if node.get("description") else text


def constraint(key: str, value: Any) -> str:
    words = {"minLength": "At least {} characters.", "maxLength": "At most {} characters.",
             "default": "Default: {}.", "uniqueItems": "Items must be unique.", "contentEncoding": "Encoded as {}.",
             "exclusiveMinimum": "Greater than {}.", "exclusiveMaximum": "Less than {}.",
             "minProperties": "At least {} entries.", "maxProperties": "At most {} entries.",
             "format": "Format: {}.", "multipleOf": "A multiple of {}.", "const": "Always {}."}
    shown = value if isinstance(value, str) and key in ("contentEncoding", "format") else json.dumps(value)
    return words[key].format(shown) if key in words else ""


def merge_all_of(node: Schema) -> Schema:
    """``allOf`` members merged into one schema (properties and required united)."""
    members = node.get("allOf")
    if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
        return node
    out = {k: v for k, v in node.items() if k != "allOf"}
    for member in members:
        member = merge_all_of(member)
        for key, value in member.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
            else:
                out.setdefault(key, value)
    return out


def prepare(schema: Schema | None) -> Schema:
    """The schema with ``$ref``s inlined, ``$schema`` dropped and a root object type."""
    out: Schema = inline_refs(copy.deepcopy(schema or {}))
    out.pop("$schema", None)
    if "type" not in out and not any(k in out for k in ("anyOf", "oneOf", "allOf")):
        out["type"] = "object"
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def root_object(schema: Schema) -> Schema:
    """A root union (``anyOf``/``oneOf``/``allOf``) merged into one object schema that accepts what
    any branch does: properties united, only the properties every branch requires required."""
    schema = merge_all_of(schema)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(branches, list):
        return schema
    out: Schema = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    out["type"], out["properties"] = "object", dict(out.get("properties") or {})
    requireds = []
    for branch in (merge_all_of(b) for b in branches if isinstance(b, dict)):
        for name, prop in (branch.get("properties") or {}).items():
            out["properties"].setdefault(name, prop)
        requireds.append(set(branch.get("required") or ()))
    common = set.intersection(*requireds) if requireds else set()
    out["required"] = [n for n in out["properties"] if n in common]
    return out


def enum_type(node: Schema) -> None:
    """An ``enum`` without ``type`` gets the one type its values share (``integer`` for ``[1, 2]``)."""
    values = node.get("enum")
    if "type" in node or not isinstance(values, list) or not values:
        return
    kinds = {primary_type({"enum": [v]}, default="") for v in values}
    if len(kinds) == 1 and "" not in kinds:
        node["type"] = kinds.pop()
    elif kinds == {"integer", "number"}:
        node["type"] = "number"


def vendor_form(node: Schema) -> Schema:
    """``node`` with its ``allOf`` merged, an ``enum`` without type typed and ``oneOf`` written as
    ``anyOf``: the first step of the vendors' fixes (neither takes ``allOf`` or ``oneOf``)."""
    node = merge_all_of(node)
    enum_type(node)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    return node


def rewrite(schema: Schema, fix: Callable[[Schema], Schema]) -> Schema:
    """``schema`` prepared (:func:`prepare`), its root made one object (:func:`root_object`), then
    ``fix`` applied bottom-up to every subschema."""
    fixed: Schema = rebuild(root_object(prepare(schema)), fix)
    return fixed
