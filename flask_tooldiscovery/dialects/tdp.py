"""Dialect ``tdp``: the Vrooli Tool Discovery Protocol 1.0 manifest, and its execute endpoint.

``TOOLDISCOVERY_TDP_WIRE`` picks the wire form: ``"spec"`` (snake_case JSON as the protocol
document shows it) or ``"protojson"`` (what Vrooli's reference server emits and its consumer
parses). The marshmallow schemas below produce the spec form; :func:`to_protojson` is the thin
layer that rewrites it.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from typing import Any

from flask import Blueprint, Response, current_app, request
from marshmallow import fields

from ..json_schema import primary_type, split_nullable
from ..tool import Tool
from ..wire import (
    ToolList,
    WireError,
    WireSchema,
    dump_tool,
    json_response,
    limit_body_size,
    method_guard,
    read_json_body,
    register_json_errors,
)

DIALECT = "tdp"
PROTOCOL_VERSION = "1.0"
CACHE = {"Cache-Control": "public, max-age=60"}
WIRE_FORMS = ("spec", "protojson")

#: The keys a parameter (property) schema may carry, in both wire forms.
PROPERTY_KEYS = ("type", "description", "enum", "default", "items", "properties", "required",
                 "format", "minimum", "maximum", "minLength", "maxLength", "pattern")


def property_schema(schema: Any) -> dict[str, Any]:
    """Map any JSON Schema into TDP's ParameterSchema: one ``type`` string, string ``enum``s,
    only :data:`PROPERTY_KEYS` (``anyOf`` nullables unwrapped, ``const`` as a one-value enum)."""
    if not isinstance(schema, dict):
        return {"type": "string"}
    inner, _ = split_nullable(schema)
    variants = inner.get("anyOf") or inner.get("oneOf")
    if isinstance(variants, list) and variants and "type" not in inner:
        first = next((v for v in variants if isinstance(v, dict) and v.get("type") != "null"), {})
        inner = {**first, **{k: v for k, v in inner.items() if k not in ("anyOf", "oneOf")}}
    out: dict[str, Any] = {"type": primary_type(inner)}
    if isinstance(inner.get("description"), str):
        out["description"] = inner["description"]
    enum = inner.get("enum")
    if "const" in inner and enum is None:
        enum = [inner["const"]]
    if isinstance(enum, list):
        out["enum"] = [v if isinstance(v, str) else json.dumps(v) for v in enum if v is not None]
    if "default" in schema or "default" in inner:
        out["default"] = schema.get("default", inner.get("default"))
    if out["type"] == "array":
        items = inner.get("items")
        if not isinstance(items, dict):
            prefix = inner.get("prefixItems")
            items = prefix[0] if isinstance(prefix, list) and prefix else None
        if isinstance(items, dict):
            out["items"] = property_schema(items)
    if out["type"] == "object" and isinstance(inner.get("properties"), dict):
        out["properties"] = {k: property_schema(v) for k, v in inner["properties"].items()}
        required = [r for r in inner.get("required") or () if r in out["properties"]]
        if required:
            out["required"] = required
    for key in ("format", "pattern"):
        if isinstance(inner.get(key), str):
            out[key] = inner[key]
    for key in ("minimum", "maximum"):
        if isinstance(inner.get(key), (int, float)) and not isinstance(inner.get(key), bool):
            out[key] = inner[key]
    for key in ("minLength", "maxLength"):
        if isinstance(inner.get(key), int) and not isinstance(inner.get(key), bool):
            out[key] = inner[key]
    return out


# -- wire schemas (spec form) -------------------------------------------------------------


class ScenarioSchema(WireSchema):
    """The manifest's ``scenario``: the server identity."""
    name = fields.String(required=True)
    version = fields.String(required=True)
    description = fields.String(required=True)
    base_url = fields.String()


class CategorySchema(WireSchema):
    """A tool category."""
    id = fields.String(required=True)
    name = fields.String(required=True)
    description = fields.String()
    icon = fields.String()
    display_order = fields.Integer()


class ToolExampleSchema(WireSchema):
    """A usage example: description, input, expected output."""
    description = fields.String()
    input = fields.Dict()
    expected_output = fields.Raw()


class ToolMetadataSchema(WireSchema):
    """The metadata block, read from a :class:`Tool`'s options."""

    enabled_by_default = fields.Method("get_enabled_by_default")
    requires_approval = fields.Method("get_requires_approval")
    timeout_seconds = fields.Method("get_timeout_seconds")
    rate_limit_per_minute = fields.Method("get_rate_limit")
    cost_estimate = fields.Method("get_cost_estimate")
    long_running = fields.Method("get_long_running")
    idempotent = fields.Method("get_idempotent")
    tags = fields.Method("get_tags")
    examples = fields.Method("get_examples")

    def get_enabled_by_default(self, tool: Tool) -> bool:
        return bool(tool.metadata.get("enabled_by_default", True))

    def get_requires_approval(self, tool: Tool) -> bool:
        return bool(tool.metadata.get("requires_approval", False))

    def get_timeout_seconds(self, tool: Tool) -> int | None:
        return math.ceil(tool.timeout) if tool.timeout else None

    def get_rate_limit(self, tool: Tool) -> int | None:
        value = tool.metadata.get("rate_limit_per_minute")
        return int(value) if value is not None else None

    def get_cost_estimate(self, tool: Tool) -> str | None:
        value = tool.metadata.get("cost_estimate")
        return str(value) if value is not None else None

    def get_long_running(self, tool: Tool) -> bool | None:
        value = tool.metadata.get("long_running")
        return bool(value) if value is not None else None

    def get_idempotent(self, tool: Tool) -> bool | None:
        value = tool.metadata.get("idempotent")
        if value is None:
            value = tool.hint("idempotentHint")
        return bool(value) if value is not None else None

    def get_tags(self, tool: Tool) -> list[str] | None:
        return list(tool.tags) or None

    def get_examples(self, tool: Tool) -> list[dict[str, Any]] | None:
        return _EXAMPLES.dump(tool.examples) if tool.examples else None


_EXAMPLES = ToolExampleSchema(many=True)
_METADATA = ToolMetadataSchema()


class TdpToolSchema(WireSchema):
    """A registry :class:`Tool` as a TDP ToolDefinition (spec form)."""
    name = fields.String(required=True)
    description = fields.Method("get_description")
    category = fields.String()
    parameters = fields.Method("get_parameters")
    metadata = fields.Function(lambda tool: _METADATA.dump(tool))

    def get_description(self, tool: Tool) -> str:
        return (tool.description or "").strip() or tool.title or f"The {tool.name} tool."

    def get_parameters(self, tool: Tool) -> dict[str, Any]:
        schema = tool.resolved_input_schema
        props = {k: property_schema(v) for k, v in (schema.get("properties") or {}).items()}
        out: dict[str, Any] = {"type": "object", "properties": props}
        required = [r for r in schema.get("required") or () if r in props]
        if required:
            out["required"] = required
        if isinstance(schema.get("additionalProperties"), bool):
            out["additionalProperties"] = schema["additionalProperties"]
        return out


class ManifestSchema(WireSchema):
    """The manifest (spec form)."""
    protocol_version = fields.Constant(PROTOCOL_VERSION)
    scenario = fields.Nested(ScenarioSchema)
    tools = ToolList(TdpToolSchema(), key="tdp")
    categories = fields.List(fields.Nested(CategorySchema(exclude=("display_order",))))
    generated_at = fields.String()


# -- protojson layer -----------------------------------------------------------------------


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0
    ) or (isinstance(value, (list, dict)) and not value)


def typed_value(value: Any) -> dict[str, Any]:
    """A JSON value as a ``google.protobuf.Value``-style wrapper (int64 as a string)."""
    if value is None:
        return {"nullValue": "NULL_VALUE"}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, dict):
        return {"objectValue": {"fields": {str(k): typed_value(v) for k, v in value.items()}}}
    if isinstance(value, (list, tuple)):
        return {"listValue": {"values": [typed_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _proto_property(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default":
            out["default"] = typed_value(value)
        elif key == "items":
            out["items"] = _proto_property(value)
        elif key == "properties":
            out["properties"] = {k: _proto_property(v) for k, v in value.items()}
        elif not _is_zero(value):
            out[key] = value
    return out


def _proto_object(data: dict[str, Any], nested: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        handler = (nested or {}).get(key)
        if handler is not None and value is not None:
            value = handler(value)
        if _is_zero(value):
            continue
        out[_camel(key)] = value
    return out


def _proto_example(example: dict[str, Any]) -> dict[str, Any]:
    return _proto_object(example, {
        "input": lambda v: {"fields": {k: typed_value(x) for k, x in v.items()}} if v else {},
        "expected_output": lambda v: v if isinstance(v, str) else json.dumps(v),
    })


def _proto_tool(tool: dict[str, Any]) -> dict[str, Any]:
    return _proto_object(tool, {
        "parameters": lambda p: {k: v for k, v in {
            "type": p.get("type"),
            "properties": {k: _proto_property(s) for k, s in (p.get("properties") or {}).items()},
            "required": p.get("required"),
            "additionalProperties": p.get("additionalProperties"),
        }.items() if not _is_zero(v)},
        "metadata": lambda m: _proto_object(m, {
            "examples": lambda xs: [_proto_example(x) for x in xs]}),
    })


def to_protojson(manifest: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a spec-form manifest the way protobuf's JSON encoding writes it."""
    return _proto_object(manifest, {
        "scenario": _proto_object,
        "tools": lambda ts: [_proto_tool(t) for t in ts],
        "categories": lambda cs: [_proto_object(c) for c in cs],
    })


# -- blueprint -----------------------------------------------------------------------------


def _wire() -> str:
    wire = str(current_app.config.get("TOOLDISCOVERY_TDP_WIRE") or "spec").lower()
    if wire not in WIRE_FORMS:
        raise ValueError(f"TOOLDISCOVERY_TDP_WIRE must be one of {WIRE_FORMS}, not {wire!r}")
    return wire


_MANIFEST = ManifestSchema()
_TOOL = TdpToolSchema()


def manifest_document(ext: Any, toolset: Any = None) -> dict[str, Any]:
    """The manifest for the current app, in the configured wire form."""
    cfg = current_app.config
    toolset = ext.tools() if toolset is None else toolset
    doc = _MANIFEST.dump({
        "scenario": {
            "name": cfg["TOOLDISCOVERY_SERVER_NAME"],
            "version": cfg["TOOLDISCOVERY_SERVER_VERSION"],
            "description": cfg["TOOLDISCOVERY_SERVER_DESCRIPTION"] or "",
            "base_url": cfg.get("TOOLDISCOVERY_TDP_BASE_URL") or None,
        },
        "tools": toolset.latest(),
        "categories": ext.categories(),
        "generated_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    })
    if _wire() == "protojson":
        categories = {c["id"]: c for c in ext.categories()}
        doc = to_protojson(doc)
        for cat in doc.get("categories", []):  # displayOrder is a protojson-only key
            order = categories.get(cat["id"], {}).get("display_order")
            if order:
                cat["displayOrder"] = int(order)
    return doc


export_document = manifest_document


def security_warning(config: Any, ext: Any) -> str | None:
    """TDP has no authentication: always a warning."""
    return ("tdp's POST /api/v1/tools/execute has no authentication of its own: keep it on a "
            "private network or guard it in front of the app")


_TDP_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _lossy(schema: Any, where: str, out: list[str]) -> None:
    if not isinstance(schema, dict):
        return
    inner, _ = split_nullable(schema)
    if isinstance(inner.get("anyOf") or inner.get("oneOf"), list):
        out.append(f"{where}: a union keeps only its first branch in TDP")
    enum = inner.get("enum")
    if isinstance(enum, list) and any(not isinstance(v, str) for v in enum if v is not None):
        out.append(f"{where}: non-string enum values are sent as strings")
    if isinstance(inner.get("type"), list) and len([t for t in inner["type"] if t != "null"]) > 1:
        out.append(f"{where}: several types; TDP keeps one")
    for key, sub in (inner.get("properties") or {}).items():
        _lossy(sub, f"{where}.{key}", out)
    if isinstance(inner.get("items"), dict):
        _lossy(inner["items"], f"{where}[]", out)


def lint_tool(tool: Tool) -> list[str]:
    """Where ``tool`` loses information in TDP's restricted schema."""
    problems = []
    if not _TDP_NAME.match(tool.name):
        problems.append(f"name {tool.name!r} is not letters, digits and underscores")
    schema = tool.resolved_input_schema
    for name, prop in (schema.get("properties") or {}).items():
        _lossy(prop, f"parameter {name!r}", problems)
    return problems


def openapi_paths(ext: Any, prefix: str) -> dict[str, Any]:
    """The OpenAPI path item of the execute endpoint."""
    names = [t.name for t in ext.tools().latest()]
    return {f"{prefix}/api/v1/tools/execute": {"post": {
        "operationId": "tdp_execute", "tags": ["tdp"], "summary": "Execute a tool (TDP)",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "properties": {"tool_name": {"type": "string", "enum": names},
                                             "arguments": {"type": "object"}},
            "required": ["tool_name"]}}}},
        "responses": {"200": {"description": "success, result, is_async"},
                      "400": {"description": "invalid_args"}, "404": {"description": "unknown_tool"},
                      "500": {"description": "internal_error"}},
    }}}


def _error(status: int, message: str) -> WireError:
    names = {400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
             413: "Payload Too Large", 503: "Service Unavailable"}
    return WireError(status, {"error": names.get(status, "Error"), "message": message})


def _exec_error(status: int, code: str, message: str) -> WireError:
    return WireError(status, {"success": False, "error": message, "code": code, "is_async": False})


def make_blueprint(ext: Any) -> Blueprint:
    """The TDP blueprint: manifest, single tool and execute."""
    bp = Blueprint("tooldiscovery_tdp", __name__)
    bp.before_request(limit_body_size)
    register_json_errors(bp, lambda status, message: _error(status, message).body)

    def tools():
        return ext.tools_or(lambda: _error(503, "scenario unavailable: the tool list could not be produced"))

    @bp.route("/api/v1/tools", methods=["GET", "OPTIONS"])
    def get_manifest() -> Response:
        if request.method == "OPTIONS":
            return Response(status=204)
        return json_response(manifest_document(ext, tools()), 200, CACHE)

    @bp.route("/api/v1/tools/", methods=["GET", "OPTIONS"])
    def no_name() -> Response:
        if request.method == "OPTIONS":
            return Response(status=204)
        raise _error(400, "tool name is required")

    @bp.route("/api/v1/tools/<path:name>", methods=["GET", "OPTIONS"])
    def get_tool(name: str) -> Response:
        if request.method == "OPTIONS":
            return Response(status=204)
        tool = tools().get(name)
        if tool is None:
            raise _error(404, f"tool not found: {name}")
        doc = dump_tool(_TOOL, tool, "tdp")
        if _wire() == "protojson":
            doc = _proto_tool(doc)
        return json_response(doc, 200, CACHE)

    @bp.route("/api/v1/tools/execute", methods=["POST", "OPTIONS"])
    def execute() -> Response:
        if request.method == "OPTIONS":
            return Response(status=200)
        body = read_json_body(lambda m: _exec_error(400, "invalid_args", m), allow_empty=False)
        if not isinstance(body, dict):
            raise _exec_error(400, "invalid_args", "The request body must be a JSON object.")
        name = body.get("tool_name")
        if not isinstance(name, str) or not name:
            raise _exec_error(400, "invalid_args", "'tool_name' is required.")
        arguments = body.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _exec_error(400, "invalid_args", "'arguments' must be a JSON object.")
        tools = ext.tools_or(lambda: _exec_error(503, "internal_error", "The tool list is unavailable right now."))
        tool = tools.get(name)
        if tool is None:
            raise _exec_error(404, "unknown_tool", f"unknown tool: {name}")
        # Enum values travel as strings in TDP, so string arguments are coerced to declared types.
        outcome = ext.call(tool, arguments, ext.make_context(DIALECT), coerce=True)
        if outcome.status == "invalid":
            raise _exec_error(400, "invalid_args", outcome.error_message)
        if outcome.status == "failure":
            raise _exec_error(500, "internal_error", outcome.error_message)
        result = outcome.value if isinstance(outcome.value, dict) else {"value": outcome.value}
        return json_response({"success": True, "result": result, "is_async": False})

    for rule, allowed, endpoint in (("/api/v1/tools", ["GET"], "manifest_guard"),
                                    ("/api/v1/tools/execute", ["POST"], "execute_guard")):
        method_guard(bp, rule, allowed, endpoint=endpoint)
    return bp
