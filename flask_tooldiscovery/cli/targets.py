"""What each target model or platform refuses in a tool's schema, and the simplified schema it
accepts: ``flask tools check --target NAME`` and ``flask tools export --target NAME``.

A target is a consumer of tool definitions: a model vendor's function-calling API (OpenAI strict
mode, Anthropic, Gemini) or a protocol's clients (MCP, Opal, OXP, TDP). Each has a lint (names and
schemas, as sentences) and a simplifier that returns a schema the target accepts. Simplifying keeps
the arguments' shape (a model that follows the simplified schema sends what the tool takes);
constraints the target cannot express move into descriptions, and the tool still checks them. Where
a rule cannot be met without changing the shape (a free-form object in OpenAI strict mode), the
lint keeps saying so and the export falls back to the target's lenient form.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..tools.json_schema import inline_refs, primary_type, split_nullable
from ..tools.model import Tool

Schema = dict[str, Any]

_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SINGLE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
           "unevaluatedItems", "unevaluatedProperties", "additionalItems")


def walk(schema: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Schema]]:
    """Every subschema of ``schema`` (itself first) with its path of keys."""
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


def _uses_refs(schema: Any) -> bool:
    return any("$ref" in node or "$defs" in node or "definitions" in node for _, node in walk(schema))


def _is_object(node: Schema) -> bool:
    return node.get("type") == "object" or ("type" not in node and "properties" in node)


def _note(node: Schema, *sentences: str) -> None:
    text = " ".join(s for s in sentences if s)
    if text:
        node["description"] = f"{node['description'].rstrip()} {text}" if node.get("description") else text


def _constraint(key: str, value: Any) -> str:
    words = {"minLength": "At least {} characters.", "maxLength": "At most {} characters.",
             "default": "Default: {}.", "uniqueItems": "Items must be unique.", "contentEncoding": "Encoded as {}.",
             "exclusiveMinimum": "Greater than {}.", "exclusiveMaximum": "Less than {}.",
             "minProperties": "At least {} entries.", "maxProperties": "At most {} entries.",
             "format": "Format: {}.", "multipleOf": "A multiple of {}.", "const": "Always {}."}
    shown = value if isinstance(value, str) and key in ("contentEncoding", "format") else json.dumps(value)
    return words[key].format(shown) if key in words else ""


def _merge_all_of(node: Schema) -> Schema:
    """``allOf`` members merged into one schema (properties and required united)."""
    members = node.get("allOf")
    if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
        return node
    out = {k: v for k, v in node.items() if k != "allOf"}
    for member in members:
        member = _merge_all_of(member)
        for key, value in member.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
            else:
                out.setdefault(key, value)
    return out


def _prepare(schema: Schema | None) -> Schema:
    """The schema with ``$ref``s inlined, ``$schema`` dropped and a root object type."""
    out: Schema = inline_refs(copy.deepcopy(schema or {}))
    out.pop("$schema", None)
    if "type" not in out and not any(k in out for k in ("anyOf", "oneOf", "allOf")):
        out["type"] = "object"
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def _root_object(schema: Schema) -> Schema:
    """A root union (``anyOf``/``oneOf``/``allOf``) merged into one object schema that accepts what
    any branch does: properties united, only the properties every branch requires required."""
    schema = _merge_all_of(schema)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(branches, list):
        return schema
    out: Schema = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    out["type"], out["properties"] = "object", dict(out.get("properties") or {})
    requireds = []
    for branch in (_merge_all_of(b) for b in branches if isinstance(b, dict)):
        for name, prop in (branch.get("properties") or {}).items():
            out["properties"].setdefault(name, prop)
        requireds.append(set(branch.get("required") or ()))
    common = set.intersection(*requireds) if requireds else set()
    out["required"] = [n for n in out["properties"] if n in common]
    return out


def _enum_type(node: Schema) -> None:
    """An ``enum`` without ``type`` gets the one type its values share (``integer`` for ``[1, 2]``)."""
    values = node.get("enum")
    if "type" in node or not isinstance(values, list) or not values:
        return
    kinds = {primary_type({"enum": [v]}, default="") for v in values}
    if len(kinds) == 1 and "" not in kinds:
        node["type"] = kinds.pop()
    elif kinds == {"integer", "number"}:
        node["type"] = "number"


def _rebuild(node: Any, fix: Callable[[Schema], Schema]) -> Any:
    """``fix`` applied bottom-up to every subschema of ``node``."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key, value in node.items():
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: _rebuild(sub, fix) for name, sub in value.items()}
        elif (key in _LISTS or key == "items") and isinstance(value, list):
            out[key] = [_rebuild(sub, fix) for sub in value]
        elif key in _SINGLE:
            out[key] = _rebuild(value, fix)
    return fix(out)


# -- OpenAI strict mode -------------------------------------------------------------------------

_OPENAI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OPENAI_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
_OPENAI_REFUSED = {"default", "minLength", "maxLength", "uniqueItems", "contentEncoding", "contentMediaType",
                   "patternProperties", "unevaluatedProperties", "propertyNames", "minProperties", "maxProperties",
                   "allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                   "prefixItems", "contains", "minContains", "maxContains", "unevaluatedItems", "additionalItems"}
_ANY = [{"type": t} for t in ("string", "number", "boolean", "null")]


def _openai_lint(schema: Schema) -> list[str]:
    out = []
    if not _is_object(schema):
        out.append("the root must be an object schema (type: object), not a union")
    depth = max((len([k for k in p if k == "properties"]) for p, _ in walk(schema)), default=0)
    if depth > 10:
        out.append(f"properties nest {depth} levels deep; at most 10")
    for path, node in walk(schema):
        here = where(path)
        for key in sorted(set(node) & _OPENAI_REFUSED):
            out.append(f"{here}: keyword {key!r} is not supported in strict mode")
        if isinstance(node.get("format"), str) and node["format"] not in _OPENAI_FORMATS:
            out.append(f"{here}: format {node['format']!r} is not supported in strict mode")
        if not any(k in node for k in ("type", "anyOf", "enum", "const", "$ref")) and path[-2:-1] != ("$defs",):
            out.append(f"{here}: no type (any value) cannot be expressed in strict mode")
        if _is_object(node):
            props = node.get("properties") or {}
            if node.get("additionalProperties") is not False:
                out.append(f"{here}: objects need additionalProperties: false")
            missing = [n for n in props if n not in (node.get("required") or ())]
            if missing:
                out.append(f"{here}: every property must be required (not: {', '.join(missing)})")
    return out


def _openai_fix(node: Schema) -> Schema:
    node = _merge_all_of(node)
    _enum_type(node)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    prefix = node.pop("prefixItems", None)
    if isinstance(prefix, list) and prefix:
        unique = [json.loads(s) for s in dict.fromkeys(json.dumps(p, sort_keys=True) for p in prefix)]
        node["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
    notes = [_constraint(k, node.pop(k)) for k in sorted(set(node) & _OPENAI_REFUSED)]
    if isinstance(node.get("format"), str) and node["format"] not in _OPENAI_FORMATS:
        notes.append(_constraint("format", node.pop("format")))
    if not any(k in node for k in ("type", "anyOf", "enum", "const", "$ref", "properties")):
        node["anyOf"] = [dict(a) for a in _ANY]
    if _is_object(node) and node.get("properties"):  # a free-form object stays one: strict mode refuses it
        node["type"], node["required"], node["additionalProperties"] = "object", list(node["properties"]), False
    _note(node, *notes)
    return node


def _openai_simplify(schema: Schema) -> Schema:
    fixed: Schema = _rebuild(_root_object(_prepare(schema)), _openai_fix)
    if not fixed.get("properties") and fixed.get("additionalProperties") in (None, True):  # no parameters
        fixed.update(type="object", properties={}, required=[], additionalProperties=False)
    return fixed


# -- Gemini (an OpenAPI 3.0 schema subset) ------------------------------------------------------

_GEMINI_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
_GEMINI_PARAMETER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_GEMINI_KEYS = {"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
                "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
                "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}
_GEMINI_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
_GEMINI_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def _gemini_lint(schema: Schema) -> list[str]:
    out = [] if schema.get("type") == "object" else ["parameters must be an object schema (type 'object')"]
    if _uses_refs(schema):
        out.append("$ref/$defs are not supported: every definition must be inlined")
    for name in schema.get("properties") or {}:
        if not _GEMINI_PARAMETER.match(name):
            out.append(f"parameter name {name!r} must start with a letter or '_' and hold only letters, digits, '_'")
    for path, node in walk(schema):
        here = where(path)
        for key in sorted(set(node) - _GEMINI_KEYS - {"$ref", "$defs", "definitions"}):
            out.append(f"{here}: keyword {key!r} is not supported")
        kind = node.get("type")
        if kind is None and not any(k in node for k in ("anyOf", "enum", "$ref")) and path[-2:-1] != ("$defs",):
            out.append(f"{here}: no type; Gemini needs one (or anyOf)")
        if kind is not None and not (isinstance(kind, str) and kind in _GEMINI_TYPES):
            out.append(f"{here}: type {kind!r} is not supported (one of {', '.join(sorted(_GEMINI_TYPES))}; "
                       f"nullable: true for null)")
        fmt = node.get("format")
        if fmt is not None and fmt not in _GEMINI_FORMATS.get(str(kind), set()):
            out.append(f"{here}: format {fmt!r} is not supported for type {kind!r}")
        if isinstance(node.get("enum"), list) and not all(isinstance(v, str) for v in node["enum"]):
            out.append(f"{here}: enum values must be strings")
    return out


def _gemini_fix(node: Schema) -> Schema:
    if node.get("type") == "null" and len(node) == 1:
        return node  # a union's null branch: the union becomes nullable
    node = _merge_all_of(node)
    _enum_type(node)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
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
            notes.append(_constraint("const", value))
    if isinstance(node.get("enum"), list) and not all(isinstance(v, str) for v in node["enum"]):
        notes.append(f"One of {json.dumps(node.pop('enum'))}.")
    prefix = node.pop("prefixItems", None)
    if node.get("items") is False:
        node.pop("items")
    if isinstance(prefix, list) and prefix and "items" not in node:
        node["items"] = prefix[0] if len(prefix) == 1 else {"anyOf": prefix}
    if not any(k in node for k in ("type", "anyOf", "enum")):
        node["anyOf"] = [dict(a) for a in _ANY if a["type"] != "null"]
        notes.append("Any JSON value.")
    fmt = node.get("format")
    if fmt is not None and fmt not in _GEMINI_FORMATS.get(str(node.get("type")), set()):
        notes.append(_constraint("format", node.pop("format")))
    for key in sorted(set(node) - _GEMINI_KEYS):
        notes.append(_constraint(key, node.pop(key)))
    if nullable:
        node["nullable"] = True
    _note(node, *notes)
    return node


def _gemini_simplify(schema: Schema) -> Schema:
    fixed: Schema = _rebuild(_root_object(_prepare(schema)), _gemini_fix)
    return fixed


# -- Anthropic, MCP, OXP: an object schema at the root ------------------------------------------

_ANTHROPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MCP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_WORD_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _root_lint(schema: Schema) -> list[str]:
    out = []
    if schema.get("type") != "object":
        out.append("input_schema must be an object schema: type 'object' at the root")
    combined = [k for k in ("anyOf", "oneOf", "allOf") if k in schema]
    if combined:
        out.append(f"{'/'.join(combined)} at the root is not supported")
    return out + dangling_refs(schema)


def _refs_lint(schema: Schema, who: str) -> list[str]:
    return [f"$ref/$defs: {who} do not all resolve references; inline them"] if _uses_refs(schema) else []


def _object_simplify(schema: Schema) -> Schema:
    out = _root_object(_prepare(schema))
    out["type"] = "object"
    return out


# -- Opal and TDP: flat parameters of one type each -----------------------------------------------

def _one_type_lint(schema: Schema, who: str, nested: bool) -> list[str]:
    out = _root_lint(schema)
    params = schema.get("properties") or {}
    nodes = [p for p in walk(schema) if p[0]] if nested else [(("properties", n), s) for n, s in params.items()]
    for path, node in nodes:
        inner, _ = split_nullable(node)
        if isinstance(inner.get("anyOf") or inner.get("oneOf"), list):
            out.append(f"{where(path)}: a union; {who} keeps one type ({primary_type(inner)!r})")
        elif isinstance(inner.get("type"), list) and len([t for t in inner["type"] if t != "null"]) > 1:
            out.append(f"{where(path)}: several types; {who} keeps one")
        if nested and isinstance(inner.get("enum"), list) and not all(isinstance(v, str) for v in inner["enum"]):
            out.append(f"{where(path)}: non-string enum values; {who} sends them as strings")
    return out


def _one_type_fix(node: Schema) -> Schema:
    if node.get("type") == "object" and "anyOf" not in node and "oneOf" not in node:
        return node
    inner, _ = split_nullable(node)
    _enum_type(inner)
    branches = inner.get("anyOf") or inner.get("oneOf")
    if isinstance(branches, list):
        kind = primary_type(inner)
        chosen = next((b for b in branches if isinstance(b, dict) and primary_type(b) == kind), {"type": kind})
        rest = {k: v for k, v in inner.items() if k not in ("anyOf", "oneOf")}
        inner = {**chosen, **rest}
        _note(inner, "Other forms accepted: " + ", ".join(sorted({primary_type(b) for b in branches})) + ".")
    if isinstance(inner.get("type"), list):
        inner["type"] = next((t for t in inner["type"] if t != "null"), "string")
    if isinstance(inner.get("enum"), list) and not all(isinstance(v, str) for v in inner["enum"]):
        _note(inner, f"One of {json.dumps(inner.pop('enum'))}.")
    return inner


def _one_type_simplify(schema: Schema) -> Schema:
    root = _object_simplify(schema)
    root["properties"] = {name: _rebuild(prop, _one_type_fix) for name, prop in (root.get("properties") or {}).items()}
    return root


@dataclass(frozen=True)
class Target:
    """One consumer of tool definitions: its name rule, schema lint and simplifier."""

    name: str
    #: What it is, for messages and ``--help``.
    title: str
    name_pattern: re.Pattern[str]
    lint_schema: Callable[[Schema], list[str]]
    simplify: Callable[[Schema], Schema]
    #: The dialect whose discovery document ``export --target`` writes (``None``: a vendor's tool list).
    dialect: str | None = None

    def lint_name(self, name: str) -> list[str]:
        if self.name_pattern.match(name):
            return []
        return [f"name {name!r} does not match {self.name_pattern.pattern} (exported as {safe_name(self, name)!r})"]

    def lint_tool(self, tool: Tool) -> list[str]:
        """Every problem this target has with ``tool``."""
        return self.lint_name(tool.name) + self.lint_schema(tool.input_schema or {"type": "object"})


def safe_name(target: Target, name: str) -> str:
    """``name`` made to match the target's rule (others replaced by ``_``, cut to 64)."""
    if target.name_pattern.match(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:64] or "tool"
    return cleaned if target.name_pattern.match(cleaned) else f"_{cleaned}"[:64]


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("mcp", "MCP clients", _MCP_NAME, lambda s: _root_lint(s) + _refs_lint(s, "MCP clients"),
           _object_simplify, dialect="mcp"),
    Target("openai-strict", "OpenAI function calling, strict mode", _OPENAI_NAME,
           lambda s: _openai_lint(s) + dangling_refs(s), _openai_simplify),
    Target("anthropic", "Anthropic tool use", _ANTHROPIC_NAME, _root_lint, _object_simplify),
    Target("gemini", "Gemini function declarations", _GEMINI_NAME, _gemini_lint, _gemini_simplify),
    Target("opal", "Optimizely Opal", _WORD_NAME, lambda s: _one_type_lint(s, "Opal", nested=False),
           _one_type_simplify, dialect="opal"),
    Target("oxp", "OXP clients", _WORD_NAME, lambda s: _root_lint(s) + _refs_lint(s, "OXP clients"),
           _object_simplify, dialect="oxp"),
    Target("tdp", "TDP clients", _WORD_NAME, lambda s: _one_type_lint(s, "TDP", nested=True),
           _one_type_simplify, dialect="tdp"),
)}


def lint(tools: list[Tool], targets: list[str]) -> list[tuple[str, str, str]]:
    """``(tool, target, problem)`` for every tool and every target named."""
    return [(f"{tool.name}@{tool.version}", name, problem)
            for tool in tools for name in targets for problem in TARGETS[name].lint_tool(tool)]


def _openai(tool: Tool, target: Target) -> dict[str, Any]:
    simplified = target.simplify(tool.input_schema)
    strict = not target.lint_schema(simplified)
    return {"type": "function", "function": {
        "name": safe_name(target, tool.name), "description": tool.description_or_title,
        "parameters": simplified if strict else _prepare(tool.input_schema), "strict": strict}}


def _gemini(tool: Tool, target: Target) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": safe_name(target, tool.name), "description": tool.description_or_title}
    parameters = target.simplify(tool.input_schema)
    if parameters.get("properties"):  # a function without parameters leaves them unset
        declaration["parameters"] = parameters
    return declaration


def export(ext: Any, name: str) -> Any:
    """The tool list (or discovery document) ``name`` accepts, its schemas simplified. Dialect
    targets need a request context (their documents hold URLs)."""
    target = TARGETS[name]
    tools = ext.tools().latest()
    if name == "openai-strict":
        return [_openai(t, target) for t in tools]
    if name == "anthropic":
        return [{"name": safe_name(target, t.name), "description": t.description_or_title,
                 "input_schema": target.simplify(t.input_schema)} for t in tools]
    if name == "gemini":
        return {"functionDeclarations": [_gemini(t, target) for t in tools]}
    dialect = ext.dialect(str(target.dialect))
    document = dialect.export_document(ext.pipeline(dialect.name))
    if name == "mcp":  # tools/list, each input schema self-contained without references
        by_name = {t.name: t for t in tools}
        document = {**document, "tools": [
            {**entry, "inputSchema": target.simplify(by_name[entry["name"]].input_schema),
             **({"outputSchema": inline_refs(entry["outputSchema"])} if entry.get("outputSchema") else {})}
            for entry in document["tools"]]}
    return document


__all__ = ["TARGETS", "Target", "dangling_refs", "export", "lint", "safe_name", "walk", "where"]
