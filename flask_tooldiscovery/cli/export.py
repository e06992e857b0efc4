"""Documents that are not a dialect's own: an OpenAI function-calling tool list, the OpenAPI 3.1
document of one mounted dialect's call routes (as the ``openapi`` dialect serves it), and the lint
behind ``flask tools check``."""

from __future__ import annotations

import re
from typing import Any

from ..dialects.openapi import NAME, describe
from ..schema.check import InvalidSchemaError, check_schema
from ..schema.json_schema import inline_refs

_OPENAI_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def openai_tools(ext: Any) -> list[dict[str, Any]]:
    """The tools as OpenAI's function-calling ``tools`` list."""
    out = []
    for tool in ext.tools().latest():
        parameters = inline_refs(tool.input_schema or {"type": "object", "properties": {}})
        parameters.setdefault("type", "object")
        parameters.pop("$schema", None)
        out.append({"type": "function", "function": {
            "name": _OPENAI_NAME.sub("_", tool.name)[:64],
            "description": tool.description or tool.title or tool.name,
            "parameters": parameters,
        }})
    return out


def openapi_document(ext: Any, server_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the call routes of the dialect ``TOOLDISCOVERY_OPENAPI_DIALECT``
    names (:func:`~..dialects.openapi.describe`); ``ValueError`` when that dialect is not mounted
    or describes no routes."""
    return describe(ext.pipeline(NAME), server_url)


def lint(ext: Any) -> list[tuple[str, str, str]]:
    """``(tool, dialect or "all", problem)`` for every tool and every mounted dialect."""
    found: list[tuple[str, str, str]] = []
    tools = list(ext.tools())
    for tool in tools:
        label = f"{tool.name}@{tool.version}"
        if not (tool.description or "").strip():
            found.append((label, "all", "no description"))
        for what, schema in (("input schema", tool.input_schema), ("output schema", tool.output_schema)):
            if schema is None:
                continue
            try:
                check_schema(schema, what=what)
            except InvalidSchemaError as exc:
                found.append((label, "all", str(exc)))
        props = (inline_refs(tool.input_schema or {}).get("properties") or {})
        for pname, prop in props.items():
            if isinstance(prop, dict) and not prop.get("description") and not any(
                    isinstance(v, dict) and v.get("description") for v in prop.get("anyOf", [])):
                found.append((label, "all", f"parameter {pname!r} has no description"))
        for dialect in ext.settings.dialects:
            check = ext.dialect(dialect).lint_tool
            for problem in (check(tool) if check else []):
                found.append((label, dialect, problem))
    return found
