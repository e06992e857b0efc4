"""OpenAI function calling in strict mode: what it refuses in a schema, and the simplified schema
it accepts (every property required, objects closed, unsupported keywords moved into descriptions)."""

from __future__ import annotations

import json
import re

from ..schema.json_schema import walk
from .schema_rewrite import (
    ANY_SCALAR,
    Schema,
    constraint,
    is_object,
    note,
    rewrite,
    vendor_form,
    where,
)

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
_REFUSED = {"default", "minLength", "maxLength", "uniqueItems", "contentEncoding", "contentMediaType",
            "patternProperties", "unevaluatedProperties", "propertyNames", "minProperties", "maxProperties",
            "allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
            "prefixItems", "contains", "minContains", "maxContains", "unevaluatedItems", "additionalItems"}


def lint(schema: Schema) -> list[str]:
    out = []
    if not is_object(schema):
        out.append("the root must be an object schema (type: object), not a union")
    depth = max((len([k for k in p if k == "properties"]) for p, _ in walk(schema)), default=0)
    if depth > 10:
        out.append(f"properties nest {depth} levels deep; at most 10")
    for path, node in walk(schema):
        here = where(path)
        for key in sorted(set(node) & _REFUSED):
            out.append(f"{here}: keyword {key!r} is not supported in strict mode")
        if isinstance(node.get("format"), str) and node["format"] not in _FORMATS:
            out.append(f"{here}: format {node['format']!r} is not supported in strict mode")
        if not any(k in node for k in ("type", "anyOf", "enum", "const", "$ref")) and path[-2:-1] != ("$defs",):
            out.append(f"{here}: no type (any value) cannot be expressed in strict mode")
        if is_object(node):
            props = node.get("properties") or {}
            if node.get("additionalProperties") is not False:
                out.append(f"{here}: objects need additionalProperties: false")
            missing = [n for n in props if n not in (node.get("required") or ())]
            if missing:
                out.append(f"{here}: every property must be required (not: {', '.join(missing)})")
    return out


def _fix(node: Schema) -> Schema:
    node = vendor_form(node)
    prefix = node.pop("prefixItems", None)
    if isinstance(prefix, list) and prefix:
        unique = [json.loads(s) for s in dict.fromkeys(json.dumps(p, sort_keys=True) for p in prefix)]
        node["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
    notes = [constraint(k, node.pop(k)) for k in sorted(set(node) & _REFUSED)]
    if isinstance(node.get("format"), str) and node["format"] not in _FORMATS:
        notes.append(constraint("format", node.pop("format")))
    if not any(k in node for k in ("type", "anyOf", "enum", "const", "$ref", "properties")):
        node["anyOf"] = [dict(a) for a in ANY_SCALAR]
    if is_object(node) and node.get("properties"):  # a free-form object stays one: strict mode refuses it
        node["type"], node["required"], node["additionalProperties"] = "object", list(node["properties"]), False
    note(node, *notes)
    return node


def simplify(schema: Schema) -> Schema:
    fixed = rewrite(schema, _fix)
    if not fixed.get("properties") and fixed.get("additionalProperties") in (None, True):  # no parameters
        fixed.update(type="object", properties={}, required=[], additionalProperties=False)
    return fixed
