"""Dialect ``opal``: Optimizely Opal tool discovery and execution.

``GET <prefix>/discovery`` (and ``/discovery/``) lists the tools as Opal "functions";
``POST <prefix>/tools/<name>`` (and ``<prefix>/discovery/tools/<name>``) runs one.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, current_app, request
from marshmallow import fields

from ..auth import AuthError, require_bearer
from ..json_schema import inline_refs, primary_type, split_nullable
from ..tool import Tool
from ..wire import (
    ToolList,
    WireError,
    WireSchema,
    json_response,
    limit_body_size,
    method_guard,
    read_json_body,
    register_json_errors,
)

DIALECT = "opal"
NO_CACHE = {"Cache-Control": "no-cache, no-store, must-revalidate"}
OPAL_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def describe_parameter(name: str, schema: dict[str, Any]) -> str:
    """A parameter's description, always a non-empty string; enum values and the default are
    written into it since Opal parameters carry no ``enum`` or ``default`` keys."""
    inner, _ = split_nullable(schema)
    text = str(inner.get("description") or schema.get("description") or "").strip()
    if not text:
        text = f"The {name.replace('_', ' ')} parameter."
    enum = inner.get("enum")
    if isinstance(enum, list) and enum:
        text = f"{text.rstrip('.')}. One of: {', '.join(str(v) for v in enum)}."
    if "default" in schema and schema["default"] is not None:
        text = f"{text.rstrip('.')}. Defaults to {schema['default']}."
    return text


class OpalParameterSchema(WireSchema):
    """One entry of an Opal function's ``parameters`` array."""
    name = fields.String(required=True)
    type = fields.String(required=True)
    description = fields.String(required=True)
    required = fields.Boolean(required=True)
    in_context = fields.Boolean(dump_default=False)
    schema = fields.Dict()


class OpalAuthRequirementSchema(WireSchema):
    """One of a function's ``auth_requirements`` (OAuth provider and scope bundle)."""
    provider = fields.String(required=True)
    scope_bundle = fields.String()
    required = fields.Boolean(dump_default=True)


class OpalFunctionSchema(WireSchema):
    """A registry :class:`Tool` dumped as an Opal function."""

    name = fields.String(required=True)
    description = fields.Method("get_description")
    parameters = fields.Method("get_parameters")
    endpoint = fields.Method("get_endpoint")
    http_method = fields.Constant("POST")
    auth_requirements = fields.Method("get_auth_requirements")
    hints = fields.Method("get_hints")

    def get_description(self, tool: Tool) -> str:
        return (tool.description or "").strip() or (tool.title or f"The {tool.name} tool.")

    def get_endpoint(self, tool: Tool) -> str:
        return f"/tools/{tool.name}"

    def get_parameters(self, tool: Tool) -> list[dict[str, Any]]:
        schema = tool.resolved_input_schema
        required = set(schema.get("required") or ())
        params = []
        for name, prop in (schema.get("properties") or {}).items():
            prop = prop if isinstance(prop, dict) else {}
            ptype = primary_type(prop)
            ptype = ptype if ptype in OPAL_TYPES else "string"
            param: dict[str, Any] = {
                "name": name,
                "type": ptype,
                "description": describe_parameter(name, prop),
                "required": name in required,
                "in_context": False,
            }
            if ptype in ("array", "object"):
                param["schema"] = split_nullable(prop)[0]
            params.append(param)
        return _PARAMETERS.dump(params)

    def get_auth_requirements(self, tool: Tool) -> list[dict[str, Any]] | None:
        reqs = tool.metadata.get("auth_requirements")
        return _AUTH_REQUIREMENTS.dump(reqs) if reqs else None

    def get_hints(self, tool: Tool) -> list[str] | None:
        if not tool.annotations:
            return None
        hints = set()
        if tool.hint("idempotentHint"):
            hints.add("idempotent")
        if tool.hint("openWorldHint"):
            hints.add("open_world")
        if tool.hint("readOnlyHint") is False or tool.hint("destructiveHint"):
            hints.add("write")
        return sorted(hints)


_PARAMETERS = OpalParameterSchema(many=True)
_AUTH_REQUIREMENTS = OpalAuthRequirementSchema(many=True)


class OpalDiscoverySchema(WireSchema):
    """The discovery document: ``functions`` and the server identity."""
    functions = ToolList(OpalFunctionSchema(), key="opal", required=True)
    name = fields.String()
    description = fields.String()
    version = fields.String()


def _error(status: int, message: str, **extra: Any) -> WireError:
    # "detail" mirrors the official SDK's error key; "error" is the readable message.
    body = {"error": message, "detail": message, **extra}
    headers = {"WWW-Authenticate": 'Bearer realm="opal"'} if status == 401 else None
    return WireError(status, body, headers)


_DISCOVERY = OpalDiscoverySchema()


def discovery_document(ext: Any, tools: list[Tool] | None = None) -> dict[str, Any]:
    """The discovery document for the current app (``tools``: already resolved tools)."""
    return _DISCOVERY.dump({
        "functions": ext.tools().latest() if tools is None else tools,
        "name": ext.setting("SERVER_NAME"),
        "description": ext.setting("SERVER_DESCRIPTION") or None,
        "version": ext.setting("SERVER_VERSION"),
    })


export_document = discovery_document


def security_warning(config: Any, ext: Any) -> str | None:
    """Why this dialect would run tools for anyone, or ``None``."""
    if not config.get("TOOLDISCOVERY_OPAL_BEARER_TOKEN"):
        return "opal runs tools without authentication: set TOOLDISCOVERY_OPAL_BEARER_TOKEN"
    return None


_OPAL_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def lint_tool(tool: Tool) -> list[str]:
    """Problems Opal would have with ``tool``."""
    problems = []
    if not _OPAL_NAME.match(tool.name):
        problems.append(f"name {tool.name!r} is not letters, digits and underscores")
    schema = tool.resolved_input_schema
    for name, prop in (schema.get("properties") or {}).items():
        inner, _ = split_nullable(prop if isinstance(prop, dict) else {})
        if isinstance(inner.get("anyOf") or inner.get("oneOf"), list):
            problems.append(f"parameter {name!r} is a union; Opal sees it as {primary_type(inner)!r}")
    return problems


def openapi_paths(ext: Any, prefix: str) -> dict[str, Any]:
    """OpenAPI path items of the per-tool execution endpoints."""
    paths: dict[str, Any] = {}
    for tool in ext.tools().latest():
        paths[f"{prefix}/tools/{tool.name}"] = {"post": {
            "operationId": f"opal_{tool.name}", "summary": tool.description.split("\n")[0],
            "tags": ["opal"],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "properties": {"parameters": tool.resolved_input_schema,
                                                 "auth": {"type": "object"},
                                                 "environment": {"type": "object"}},
                "required": ["parameters"]}}}},
            "responses": {"200": {"description": "The tool's return value.",
                                  "content": {"application/json": {"schema": inline_refs(tool.output_schema or {})}}},
                          "400": {"description": "Malformed body or invalid parameters."},
                          "401": {"description": "Bearer token missing or wrong."},
                          "500": {"description": "The tool failed."}},
        }}
    return paths


def unavailable() -> WireError:
    """The answer when a tools provider fails."""
    return _error(503, "The tool list is unavailable right now.")


def make_blueprint(ext: Any) -> Blueprint:
    """The Opal blueprint: discovery and tool execution."""
    bp = Blueprint("tooldiscovery_opal", __name__)
    bp.before_request(limit_body_size)

    @bp.after_request
    def cors(response: Response) -> Response:
        response.headers["Access-Control-Allow-Origin"] = "*"
        if request.method == "OPTIONS":
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response.headers["Access-Control-Allow-Headers"] = (
                "Authorization, Content-Type, x-opal-thread-id, "
                "x-opal-workflow-execution-id, x-opal-agent-execution-id"
            )
            response.headers["Access-Control-Max-Age"] = "600"
        return response

    register_json_errors(bp, lambda status, message: _error(status, message).body)

    def discovery() -> Response:
        tools = ext.tools_or(unavailable).latest()
        return json_response(discovery_document(ext, tools), 200, NO_CACHE)

    for rule in ("/discovery", "/discovery/"):
        bp.add_url_rule(rule, endpoint="discovery" if rule == "/discovery" else "discovery_slash",
                        view_func=discovery, methods=["GET"], strict_slashes=True)
        method_guard(bp, rule, ["GET"], endpoint=f"discovery_guard{rule.count('/')}")

    def call_tool(name: str) -> Response:
        token = ext.setting("OPAL_BEARER_TOKEN")
        if token:
            try:
                require_bearer(request, token)
            except AuthError as exc:
                current_app.logger.info("opal call to %s refused: %s", name, exc.reason)
                raise _error(401, "Unauthorized: a valid bearer token is required.") from None
        tool = ext.tools_or(unavailable).get(name)
        if tool is None:
            raise _error(404, f"Tool not found: {name}")
        body = read_json_body(lambda msg: _error(400, msg))
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise _error(400, "The request body must be a JSON object.")
        if "parameters" in body:
            parameters = body["parameters"]
            if parameters is None:
                parameters = {}
            if not isinstance(parameters, dict):
                raise _error(400, "'parameters' must be a JSON object.")
        else:
            parameters = body
        auth: dict[str, Any] | None = body["auth"] if isinstance(body.get("auth"), dict) else None
        environment = body.get("environment") if isinstance(body.get("environment"), dict) else None
        raw_credentials = (auth or {}).get("credentials")
        credentials: dict[str, Any] = raw_credentials if isinstance(raw_credentials, dict) else {}
        provider = (auth or {}).get("provider")
        context = ext.make_context(
            DIALECT,
            user_id=credentials.get("user_id"),
            authorization={str(provider): credentials["access_token"]}
            if provider and credentials.get("access_token") else {},
            extra={
                "auth": auth,
                "environment": environment,
                "headers": {k.lower(): v for k, v in request.headers.items() if k.lower().startswith("x-opal-")},
            },
        )
        outcome = ext.call(tool, parameters, context, coerce=True)
        if outcome.status == "invalid":
            raise _error(400, outcome.error_message, parameter_errors=outcome.parameter_errors)
        if outcome.status == "failure":
            extra = {"can_retry": True} if outcome.failure and outcome.failure.can_retry else {}
            raise _error(500, outcome.error_message, **extra)
        return json_response(outcome.value, 200, NO_CACHE)

    for rule in ("/tools/<path:name>", "/discovery/tools/<path:name>"):
        endpoint = "call" if rule.startswith("/tools") else "call_under_discovery"
        bp.add_url_rule(rule, endpoint=endpoint, view_func=call_tool, methods=["POST"])
        method_guard(bp, rule, ["POST"], endpoint=endpoint + "_guard")
    return bp

