"""Documents that are not a dialect's own: an OpenAI function-calling tool list, an OpenAPI 3.1
document of one mounted dialect's call routes (served by the ``openapi`` dialect), and the lint
behind ``flask tools check``."""

from __future__ import annotations

import re
from typing import Any

from ..serving.identity import Authenticator
from ..serving.verifiers import ApiKeyVerifier, JwksVerifier, JwtVerifier
from ..tools.json_schema import inline_refs
from ..tools.schema_check import InvalidSchemaError, check_schema

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


def security_schemes(authenticator: Authenticator | None) -> dict[str, Any]:
    """OpenAPI security schemes of a dialect's credentials, by name (any one of them lets a call in);
    a verifier of another kind (the identity hook) is named by the scheme of its challenge."""
    schemes: dict[str, Any] = {}
    for verifier in authenticator.verifiers if authenticator is not None else ():
        if isinstance(verifier, ApiKeyVerifier):
            schemes["apiKey"] = {"type": "apiKey", "in": "header", "name": verifier.header}
        elif isinstance(verifier, (JwtVerifier, JwksVerifier)):
            schemes["jwt"] = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
        else:
            schemes[verifier.scheme.lower()] = {"type": "http", "scheme": verifier.scheme.lower()}
    return schemes


def openapi_document(ext: Any, server_url: str | None = None) -> dict[str, Any]:
    """An OpenAPI 3.1 document of the call routes of the dialect ``TOOLDISCOVERY_OPENAPI_DIALECT``
    names (``utcp``: one operation per tool), which must be mounted: ``servers`` is ``server_url``
    when given, and the security schemes are those of that dialect's credentials.
    ``ValueError`` when that dialect is not mounted or describes no routes."""
    settings = ext.settings
    name = settings.openapi_dialect
    describe = ext.dialect(name).openapi_paths if name in settings.dialects else None
    if describe is None:
        raise ValueError(f"TOOLDISCOVERY_OPENAPI_DIALECT is {name!r}: the OpenAPI document describes the call "
                         "routes of a mounted dialect that has an OpenAPI description (utcp, opal...)")
    pipe = ext.pipeline(name)
    info = {"title": settings.server_name, "version": settings.server_version}
    if settings.server_description:
        info["description"] = settings.server_description
    document: dict[str, Any] = {"openapi": "3.1.0", "info": info}
    if server_url:
        document["servers"] = [{"url": server_url}]
    document["paths"] = describe(pipe)
    schemes = security_schemes(pipe.authenticator)
    if schemes:
        document["components"] = {"securitySchemes": schemes}
        document["security"] = [{scheme: []} for scheme in schemes]
    return document


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
