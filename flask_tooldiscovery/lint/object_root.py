"""Targets that take the input schema as an object at the root: Anthropic, MCP and OXP clients as
it is (references inlined, a root union merged), Opal and TDP with one type per parameter."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ..schema.json_schema import primary_type, rebuild, split_nullable, walk
from .schema_rewrite import Schema, dangling_refs, enum_type, note, prepare, root_object, uses_refs, where

ANTHROPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MCP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
WORD_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def root_lint(schema: Schema) -> list[str]:
    out = []
    if schema.get("type") != "object":
        out.append("input_schema must be an object schema: type 'object' at the root")
    combined = [k for k in ("anyOf", "oneOf", "allOf") if k in schema]
    if combined:
        out.append(f"{'/'.join(combined)} at the root is not supported")
    return out + dangling_refs(schema)


def refs_lint(schema: Schema, who: str) -> list[str]:
    return [f"$ref/$defs: {who} do not all resolve references; inline them"] if uses_refs(schema) else []


def object_simplify(schema: Schema) -> Schema:
    out = root_object(prepare(schema))
    out["type"] = "object"
    return out


# -- Opal and TDP: flat parameters of one type each -----------------------------------------------

def first_branch_type(schema: Schema) -> str:
    """The type a union keeps when its first branch that is not ``null`` wins (TDP's reading)."""
    inner, _ = split_nullable(schema)
    branches = inner.get("anyOf") or inner.get("oneOf")
    if isinstance(branches, list) and "type" not in inner:
        first = next((b for b in branches if isinstance(b, dict) and b.get("type") != "null"), {})
        inner = {**first, **{k: v for k, v in inner.items() if k not in ("anyOf", "oneOf")}}
    return primary_type(inner)


def one_type_lint(schema: Schema, who: str, nested: bool, kept: Callable[[Schema], str] = primary_type) -> list[str]:
    """What a client of one type per parameter loses of ``schema``; ``kept`` names the type it keeps of a union."""
    out = root_lint(schema)
    params = schema.get("properties") or {}
    nodes = [p for p in walk(schema) if p[0]] if nested else [(("properties", n), s) for n, s in params.items()]
    for path, node in nodes:
        inner, _ = split_nullable(node)
        if isinstance(inner.get("anyOf") or inner.get("oneOf"), list):
            out.append(f"{where(path)}: a union; {who} keeps one type ({kept(inner)!r})")
        elif isinstance(inner.get("type"), list) and len([t for t in inner["type"] if t != "null"]) > 1:
            out.append(f"{where(path)}: several types; {who} keeps one")
        if nested and isinstance(inner.get("enum"), list) and not all(isinstance(v, str) for v in inner["enum"]):
            out.append(f"{where(path)}: non-string enum values; {who} sends them as strings")
    return out


def _one_type_fix(node: Schema, kept: Callable[[Schema], str]) -> Schema:
    if node.get("type") == "object" and "anyOf" not in node and "oneOf" not in node:
        return node
    inner, _ = split_nullable(node)
    enum_type(inner)
    branches = inner.get("anyOf") or inner.get("oneOf")
    if isinstance(branches, list):
        kind = kept(inner)
        chosen = next((b for b in branches if isinstance(b, dict) and primary_type(b) == kind), {"type": kind})
        rest = {k: v for k, v in inner.items() if k not in ("anyOf", "oneOf")}
        inner = {**chosen, **rest}
        note(inner, "Other forms accepted: " + ", ".join(sorted({primary_type(b) for b in branches})) + ".")
    if isinstance(inner.get("type"), list):
        inner["type"] = next((t for t in inner["type"] if t != "null"), "string")
    if isinstance(inner.get("enum"), list) and not all(isinstance(v, str) for v in inner["enum"]):
        note(inner, f"One of {json.dumps(inner.pop('enum'))}.")
    return inner


def one_type_simplify(schema: Schema, kept: Callable[[Schema], str] = primary_type) -> Schema:
    """``schema`` as a client of one type per parameter reads it: each union reduced to the branch of
    the type ``kept`` names, the others said in its description."""
    root = object_simplify(schema)
    properties = root.get("properties") or {}
    root["properties"] = {name: rebuild(prop, lambda node: _one_type_fix(node, kept))
                          for name, prop in properties.items()}
    return root
