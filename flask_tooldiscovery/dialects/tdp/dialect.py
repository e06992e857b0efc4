"""Dialect ``tdp``: the Vrooli Tool Discovery Protocol 1.0 manifest, and its execute endpoint.

``TOOLDISCOVERY_TDP_WIRE``: ``"spec"`` (the protocol document's form) or ``"protojson"`` (:mod:`.tdp_protojson`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Response, request
from marshmallow import fields
from werkzeug.exceptions import RequestEntityTooLarge

from ...errors import BadRequest, CoreError, PayloadTooLarge, Unavailable
from ...identity.sources import Authenticator
from ...lint.protocols import TDP
from ...schema.json_schema import primary_type, split_nullable
from ...serving.openapi import arguments_body, body_required, one_of, openapi_post
from ...serving.pipeline import Pipeline, UnknownTool
from ...serving.wire import WireSchema, json_response
from ...settings import DialectSettings, Settings, choice, parse_str, setting
from ...tools.model import Tool
from .. import Dialect, Protocol, status_name
from .driver import TdpDriver
from .protojson import to_protojson

NAME = "tdp"


@dataclass(frozen=True)
class TdpSettings(DialectSettings):
    """TDP's own keys (its categories are the core's ``TOOLDISCOVERY_CATEGORIES``)."""

    wire: str = setting("TDP_WIRE", "spec", choice("spec", "protojson"), "TDP wire form: spec or protojson.")
    base_url: str | None = setting("TDP_BASE_URL", None, parse_str, "scenario.base_url of the manifest.")
CACHE = {"Cache-Control": "public, max-age=60"}
ATTACHMENTS = "_context_attachments"


def property_schema(schema: Any) -> dict[str, Any]:
    """Map any JSON Schema into TDP's ParameterSchema: one ``type`` string, string ``enum``s, only
    the keys TDP knows (``anyOf`` nullables unwrapped, ``const`` as a one-value enum)."""
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
    enum = [inner["const"]] if "const" in inner and inner.get("enum") is None else inner.get("enum")
    if isinstance(enum, list):
        out["enum"] = [v if isinstance(v, str) else json.dumps(v) for v in enum if v is not None]
    if "default" in schema or "default" in inner:
        out["default"] = schema.get("default", inner.get("default"))
    if out["type"] == "array":
        items, prefix = inner.get("items"), inner.get("prefixItems")
        items = items if isinstance(items, dict) else prefix[0] if isinstance(prefix, list) and prefix else None
        if isinstance(items, dict):
            out["items"] = property_schema(items)
    if out["type"] == "object" and isinstance(inner.get("properties"), dict):
        out["properties"] = {k: property_schema(v) for k, v in inner["properties"].items()}
        if required := [r for r in inner.get("required") or () if r in out["properties"]]:
            out["required"] = required
    for key, kinds in (("format", str), ("pattern", str), ("minimum", (int, float)), ("maximum", (int, float)),
                       ("minLength", int), ("maxLength", int)):
        if isinstance(inner.get(key), kinds) and not isinstance(inner.get(key), bool):
            out[key] = inner[key]
    return out


_CATEGORY: dict[str, fields.Field[Any]] = {k: fields.String() for k in ("id", "name", "description", "icon")}
_CATEGORIES = WireSchema.from_dict(_CATEGORY)(many=True)
_PROTO_CATEGORIES = WireSchema.from_dict({**_CATEGORY, "display_order": fields.Integer()})(many=True)  # protojson only
_EXAMPLES = WireSchema.from_dict({"description": fields.String(), "input": fields.Dict(),
                                  "expected_output": fields.Raw()})(many=True)


def _metadata(tool: Tool, key: str, convert: type[Any], hint: str = "") -> Any:
    value = tool.metadata.get(key)
    value = tool.hint(hint) if value is None and hint else value
    return None if value is None else convert(value)


class ToolMetadataSchema(WireSchema):
    """The metadata block, read from a :class:`Tool`'s options."""
    enabled_by_default = fields.Function(lambda tool: bool(tool.metadata.get("enabled_by_default", True)))
    requires_approval = fields.Function(lambda tool: bool(tool.metadata.get("requires_approval", False)))
    timeout_seconds = fields.Function(lambda tool: math.ceil(tool.timeout) if tool.timeout else None)
    rate_limit_per_minute = fields.Function(lambda tool: _metadata(tool, "rate_limit_per_minute", int))
    cost_estimate = fields.Function(lambda tool: _metadata(tool, "cost_estimate", str))
    long_running = fields.Function(lambda tool: _metadata(tool, "long_running", bool))
    idempotent = fields.Function(lambda tool: _metadata(tool, "idempotent", bool, "idempotentHint"))
    modifies_state = fields.Function(lambda tool: _metadata(tool, "modifies_state", bool))
    sensitive_output = fields.Function(lambda tool: _metadata(tool, "sensitive_output", bool))
    tags = fields.Function(lambda tool: list(tool.tags) or None)
    examples = fields.Function(lambda tool: _EXAMPLES.dump(tool.examples) if tool.examples else None)


class TdpToolSchema(WireSchema):
    """A registry :class:`Tool` as a TDP ToolDefinition (spec form)."""
    name = fields.String(required=True)
    description = fields.Function(lambda tool: tool.description_or_title)
    category = fields.String()
    parameters = fields.Method("get_parameters")
    metadata = fields.Function(ToolMetadataSchema().dump)

    def get_parameters(self, tool: Tool) -> dict[str, Any]:
        schema = tool.resolved_input_schema
        props = {k: property_schema(v) for k, v in (schema.get("properties") or {}).items()}
        required, extra = [r for r in schema.get("required") or () if r in props], schema.get("additionalProperties")
        return {"type": "object", "properties": props, **({"required": required} if required else {}),
                **({"additionalProperties": extra} if isinstance(extra, bool) else {})}


_TOOL = TdpToolSchema()


def manifest_document(pipe: Pipeline) -> dict[str, Any]:
    """The manifest in the configured wire form."""
    settings, options = pipe.settings, TdpSettings.of(pipe.settings)
    protojson = options.wire == "protojson"
    doc = {
        "protocol_version": "1.0",
        "scenario": {"name": settings.server_name, "version": settings.server_version,
                     "description": settings.server_description,
                     **({"base_url": options.base_url} if options.base_url else {})},
        "tools": [pipe.dump(NAME, t, _TOOL.dump) for t in pipe.tools().latest()],
        "categories": (_PROTO_CATEGORIES if protojson else _CATEGORIES).dump(pipe.core.categories()),
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return to_protojson(doc) if protojson else doc


def _failed(message: str, code: str) -> dict[str, Any]:
    return {"success": False, "error": message, "code": code, "is_async": False}


def error_response(exc: CoreError) -> tuple[Any, int]:
    """Execute route: its result shape (success, error, code); elsewhere, or a body too large: error, message."""
    unknown = exc.name if isinstance(exc, UnknownTool) else None
    if (request.endpoint or "").endswith(".execute") and not isinstance(exc, PayloadTooLarge):
        code = exc.extra.get("code") or ("unknown_tool" if unknown is not None else "rate_limited" if exc.status == 429
                                         else "internal_error" if exc.status >= 500 else "invalid_args")
        # approval_required (428, with approval_state and prompt), invalid_approval (400)
        return {**_failed(exc.message if unknown is None else f"unknown tool: {unknown}", code), **exc.extra,
                "code": code}, exc.status
    message = (f"tool not found: {unknown}" if unknown is not None else
               "scenario unavailable: the tool list could not be produced" if isinstance(exc, Unavailable) else
               str(RequestEntityTooLarge.description) if isinstance(exc, PayloadTooLarge) else exc.message)
    return {"error": status_name(exc.status), "message": message}, exc.status


def security_warning(settings: Settings, authenticator: Authenticator | None) -> str | None:
    """TDP has no authentication of its own: a warning unless the identity layer guards it."""
    if authenticator is not None:
        return None
    return ("tdp's POST /api/v1/tools/execute runs tools without authentication (TDP has none of its own): use the "
            "identity layer, keep it on a private network or guard it in front of the app")


#: The body of every error answer: the execute route's result shape (``success: false``, ``error``,
#: ``code``; an approval's ``approval_state`` and ``prompt``), or ``error`` and ``message`` for a
#: body too large or another method.
ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {
    "success": {"const": False}, "error": {"type": "string"}, "code": {"type": "string"},
    "message": {"type": "string"}, "is_async": {"type": "boolean"}}}


def openapi_paths(pipe: Pipeline) -> dict[str, Any]:
    """The OpenAPI path item of the execute endpoint: a body shape per tool (its name and arguments)."""
    tools = pipe.tools().latest()
    bodies = [{"type": "object", "properties": {"tool_name": {"const": t.name}, "arguments": arguments_body(
        {"type": "object", **t.resolved_input_schema})}, "required": ["tool_name", "arguments"] if body_required(
        t.resolved_input_schema) else ["tool_name"]} for t in tools]  # null arguments: none
    return {f"{pipe.prefix}/api/v1/tools/execute": openapi_post(
        pipe, tools, operation_id="tdp_execute", tags=[NAME], summary="Execute a tool (TDP)",
        schema=one_of(bodies), error_schema=ERROR_SCHEMA, responses={
            "200": "success, result, is_async", "400": "invalid_args", "404": "unknown_tool, not_found",
            "500": "internal_error"})}


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The TDP blueprint: manifest, single tool and execute (OPTIONS answered empty, as ever)."""
    bp = pipe.blueprint(__name__)
    protojson = TdpSettings.of(pipe.settings).wire == "protojson"

    def discovery(name: str | None = None) -> Response:
        if request.method == "OPTIONS":
            return Response(status=204)
        if name is None:
            return pipe.send(pipe.document(("manifest",), lambda _: manifest_document(pipe)), CACHE)
        if not name:
            raise BadRequest("tool name is required")
        spec: dict[str, Any] = pipe.dump(NAME, pipe.find(name), _TOOL.dump)  # shared: never mutate it
        return pipe.send(pipe.document(("tool", name), lambda _: to_protojson(spec) if protojson else spec), CACHE)

    pipe.route("/api/v1/tools", "discovery", ["GET", "OPTIONS"], endpoint="manifest")(discovery)
    # Other methods get TDP's JSON 405 on the manifest and execute rules only (Flask's page here), as ever.
    pipe.route("/api/v1/tools/", "discovery", ["GET", "OPTIONS"], endpoint="no_name", guard_methods=False,
               defaults={"name": ""})(discovery)
    pipe.route("/api/v1/tools/<path:name>", "discovery", ["GET", "OPTIONS"], endpoint="tool",
               guard_methods=False)(discovery)

    @pipe.route("/api/v1/tools/execute", "call", ["POST", "OPTIONS"], endpoint="execute")
    def execute() -> Response:
        if request.method == "OPTIONS":
            return Response(status=200)
        body = pipe.body(required=True)
        if not isinstance(body, dict):
            raise BadRequest("The request body must be a JSON object.")
        name, arguments = body.get("tool_name"), {} if body.get("arguments") is None else body["arguments"]
        if not isinstance(name, str) or not name:
            raise BadRequest("'tool_name' is required.")
        if not isinstance(arguments, dict):
            raise BadRequest("'arguments' must be a JSON object.")
        tool, extra = pipe.find(name), {}
        if ATTACHMENTS in arguments:  # agent-inbox adds the chat's skills to every call: context, not arguments
            extra["context_attachments"] = arguments[ATTACHMENTS]
            if ATTACHMENTS not in (tool.resolved_input_schema.get("properties") or {}):
                arguments = {k: v for k, v in arguments.items() if k != ATTACHMENTS}
        # Enum values travel as strings in TDP, so string arguments are coerced to declared types.
        outcome = pipe.invoke(tool, arguments, pipe.context(extra=extra), coerce=True)
        if outcome.ok:
            result = outcome.value if isinstance(outcome.value, dict) else {"value": outcome.value}
            return json_response({"success": True, "result": result, "is_async": False})
        not_found = outcome.failure is not None and outcome.failure.not_found
        code, status = (("invalid_args", 400) if outcome.status == "invalid" else
                        ("not_found", 404) if not_found else ("internal_error", 500))
        return json_response(_failed(outcome.error_message, code), status)

    return bp


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, default_prefix="", error_response=error_response,
                  protocol=Protocol("Tool Discovery Protocol", ("1.0",)), driver=TdpDriver(),
                  target=TDP,
                  export_document=lambda pipe, root: manifest_document(pipe), security_warning=security_warning,
                  lint_tool=TDP.lint_tool,
                  openapi_paths=openapi_paths, settings=TdpSettings)
