"""Dialect ``oxp``: the Open eXecution Protocol 1.0 (``/health``, ``/tools``, ``/tools/call``).

Responses follow the component schemas of the OXP 1.0 OpenAPI document (after its errata):
``items`` (not ``tools``), closed ``ToolDefinition``s, a ``CallToolResponse`` that carries either
``value`` or ``error``, 400 / 422 / 200-with-failure kept apart.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, current_app, request
from marshmallow import RAISE, Schema, ValidationError, fields, post_dump, validate

from ..auth import AuthError, bearer_token, secrets_equal, verify_jwt
from ..invoke import Outcome
from ..json_schema import inline_refs
from ..tool import Tool, parse_version
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

DIALECT = "oxp"
SCHEMA_URN = "urn:oxp:1.0"
ACCEPTED_SCHEMAS = {
    SCHEMA_URN,
    "https://github.com/ArcadeAI/oxp/blob/main/spec/http/1.0/openapi.json",
    "https://raw.githubusercontent.com/ArcadeAI/oxp/main/spec/http/1.0/openapi.json",
    "https://github.com/openexecprotocol/oxp/blob/main/spec/http/1.0/openapi.json",
    "https://raw.githubusercontent.com/openexecprotocol/oxp/main/spec/http/1.0/openapi.json",
}
TOOL_ID = re.compile(r"^([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)(?:@([0-9]+|[0-9]+\.[0-9]+\.[0-9]+))?$")
_NOT_ID = re.compile(r"[^A-Za-z0-9_]+")


def sanitize(text: str) -> str:
    """Keep ``[A-Za-z0-9_]``; runs of anything else become one ``_``."""
    return _NOT_ID.sub("_", text).strip("_") or "Tool"


def default_toolkit(server_name: str) -> str:
    """``"example-tools"`` -> ``"ExampleTools"``."""
    parts = [p for p in _NOT_ID.split(server_name or "") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Tools"


def toolkit_of(tool: Tool) -> str:
    """The sanitized toolkit of ``tool``: its own, the configured one, or one from SERVER_NAME."""
    configured = current_app.config.get("TOOLDISCOVERY_OXP_TOOLKIT")
    base = tool.toolkit or configured or default_toolkit(
        str(current_app.config.get("TOOLDISCOVERY_SERVER_NAME") or ""))
    return sanitize(base)


def tool_id(tool: Tool, *, with_version: bool = True) -> str:
    """``Toolkit.Tool@x.y.z`` (or without the version)."""
    ident = f"{toolkit_of(tool)}.{sanitize(tool.name)}"
    return f"{ident}@{tool.version}" if with_version else ident


# -- wire schemas ---------------------------------------------------------------------------


class ToolDefinitionSchema(WireSchema):
    """A registry :class:`Tool` dumped as an OXP ``ToolDefinition`` (a closed object)."""

    keep_none = ("output_schema",)

    id = fields.Method("get_id")
    name = fields.Method("get_name")
    description = fields.Method("get_description")
    version = fields.String()
    input_schema = fields.Method("get_input_schema")
    output_schema = fields.Method("get_output_schema")
    requirements = fields.Raw()

    def get_id(self, tool: Tool) -> str:
        return tool_id(tool)

    def get_name(self, tool: Tool) -> str:
        return f"{toolkit_of(tool)}_{sanitize(tool.name)}"[:64]

    def get_description(self, tool: Tool) -> str:
        return (tool.description or "").strip() or tool.title or f"The {tool.name} tool."

    def get_input_schema(self, tool: Tool) -> dict[str, Any]:
        return tool.resolved_input_schema or {"type": "object"}

    def get_output_schema(self, tool: Tool) -> dict[str, Any] | None:
        return inline_refs(tool.output_schema) if tool.output_schema else None


class ListToolsResponseSchema(WireSchema):
    """``GET /tools``'s body: ``$schema`` and ``items``."""
    schema = fields.String(data_key="$schema", dump_default=SCHEMA_URN)
    # A definition depends on the toolkit settings, so they are part of the memo key.
    items = ToolList(ToolDefinitionSchema(), key=lambda: (
        "oxp", current_app.config.get("TOOLDISCOVERY_OXP_TOOLKIT"),
        current_app.config.get("TOOLDISCOVERY_SERVER_NAME")))


class ToolErrorSchema(WireSchema):
    """``ToolError``: why a tool that ran failed."""
    message = fields.String(required=True)
    developer_message = fields.String()
    can_retry = fields.Boolean()
    additional_prompt_content = fields.String()
    retry_after_ms = fields.Integer()


class CallToolResultSchema(WireSchema):
    """``CallToolResponse``: ``value`` on success, ``error`` on failure, never both."""

    call_id = fields.String(required=True)
    duration = fields.Float()
    success = fields.Boolean(required=True)
    value = fields.Raw(allow_none=True)
    error = fields.Nested(ToolErrorSchema)

    keep_none = ("value",)  # a tool may return null; that is still a value

    @post_dump
    def _one_of(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        data.pop("error" if data["success"] else "value", None)
        return data


class CallToolResponseSchema(WireSchema):
    """``POST /tools/call``'s body: ``$schema`` and ``result``."""
    schema = fields.String(data_key="$schema", dump_default=SCHEMA_URN)
    result = fields.Nested(CallToolResultSchema)


# -- request schemas (load) -----------------------------------------------------------------


class _Open(Schema):
    class Meta:
        unknown = "include"


class AuthorizationItemSchema(_Open):
    """One ``context.authorization`` entry (provider id and token)."""
    id = fields.String(required=True)
    token = fields.String(required=True)


class SecretItemSchema(_Open):
    """One ``context.secrets`` entry (id and value)."""
    id = fields.String(required=True)
    value = fields.String(required=True)


class CallContextSchema(_Open):
    """A call's ``context``: authorization tokens, secrets, user id."""
    authorization = fields.List(fields.Nested(AuthorizationItemSchema))
    secrets = fields.List(fields.Nested(SecretItemSchema))
    user_id = fields.String()


class CallToolRequestSchema(Schema):
    """``CallToolRequest`` (closed): only ``tool_id`` is required."""

    class Meta:
        unknown = RAISE

    call_id = fields.String()
    trace_id = fields.String()
    tool_id = fields.String(required=True, validate=validate.Regexp(
        TOOL_ID, error="Not a valid tool id (Toolkit.Tool[@version])."))
    input = fields.Dict(keys=fields.String())
    context = fields.Nested(CallContextSchema)


_CALL_REQUEST = CallToolRequestSchema()
_CALL_RESPONSE = CallToolResponseSchema()


# -- errors ---------------------------------------------------------------------------------


def server_error(message: str, status: int = 400, **extra: Any) -> WireError:
    """A ``ServerErrorResponse``."""
    return WireError(status, {"$schema": SCHEMA_URN, "message": message, **extra})


def _flatten(messages: Any, prefix: str = "") -> list[str]:
    if isinstance(messages, dict):
        out = []
        for key, value in messages.items():
            out += _flatten(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [f"{prefix}: {' '.join(messages)}" if prefix else " ".join(messages)]
    if isinstance(messages, list):
        return [m for item in messages for m in _flatten(item, prefix)]
    return [f"{prefix}: {messages}"]


def authenticate() -> None:
    """Enforce the configured server auth (JWT and/or API key); with neither, allow all."""
    cfg = current_app.config
    secret = cfg.get("TOOLDISCOVERY_OXP_JWT_SECRET")
    api_key = cfg.get("TOOLDISCOVERY_OXP_API_KEY")
    if not secret and not api_key:
        return
    reasons = []
    if api_key:
        presented = request.headers.get("OXP-API-Key")
        if presented is not None and secrets_equal(presented, api_key):
            return
        reasons.append("API key missing" if presented is None else "API key wrong")
    if secret:
        token = bearer_token(request)
        if token is not None:
            try:
                verify_jwt(
                    token, secret,
                    audience=cfg.get("TOOLDISCOVERY_OXP_JWT_AUDIENCE"),
                    require_exp=bool(cfg.get("TOOLDISCOVERY_OXP_JWT_REQUIRE_EXP", True)),
                    claims=cfg.get("TOOLDISCOVERY_OXP_JWT_CLAIMS") or None,
                )
                return
            except AuthError as exc:
                reasons.append(exc.reason)
        else:
            reasons.append("bearer token missing")
    current_app.logger.info("oxp request refused: %s", "; ".join(reasons))
    challenge = 'Bearer realm="oxp"' if secret else 'OXP-API-Key realm="oxp"'
    if secret and bearer_token(request) is not None:
        challenge += ', error="invalid_token"'
    raise WireError(401, {"$schema": SCHEMA_URN, "message": "Unauthorized"},
                    {"WWW-Authenticate": challenge})


def resolve(tools: list[Tool], ident: str) -> Tool | None:
    """The tool ``Toolkit.Tool[@version]`` names: ``@x.y.z`` exact, ``@x`` is ``x.0.0``, none
    the latest."""
    match = TOOL_ID.match(ident)
    if not match:
        return None
    toolkit, name, version = match.groups()
    cfg = current_app.config
    key = ("oxp-id", cfg.get("TOOLDISCOVERY_OXP_TOOLKIT"), cfg.get("TOOLDISCOVERY_SERVER_NAME"))

    def parts(tool: Tool) -> tuple[str, str]:
        return tool.memo(key, lambda: (toolkit_of(tool), sanitize(tool.name)))

    candidates = [t for t in tools if parts(t) == (toolkit, name)]
    if not candidates:
        return None
    if version is None:
        return max(candidates, key=lambda t: t.version_tuple)
    wanted = parse_version(version)
    return next((t for t in candidates if t.version_tuple == wanted), None)


def missing_requirements(tool: Tool, context: dict[str, Any]) -> dict[str, Any]:
    """The requirements ``tool`` declares that ``context`` lacks (empty when none)."""
    req = tool.requirements or {}
    missing: dict[str, Any] = {}
    tokens = {a["id"]: a.get("token") for a in context.get("authorization", [])}
    secrets = {s["id"]: s.get("value") for s in context.get("secrets", [])}
    auth_missing = [a for a in req.get("authorization", []) if not tokens.get(a["id"])]
    if auth_missing:
        missing["authorization"] = [{"id": a["id"], "url": str(a.get("url", ""))} for a in auth_missing]
    secrets_missing = [{"id": s["id"]} for s in req.get("secrets", []) if not secrets.get(s["id"])]
    if secrets_missing:
        missing["secrets"] = secrets_missing
    if req.get("user_id") and not context.get("user_id"):
        missing["user_id"] = True
    return missing


_LIST = ListToolsResponseSchema()


def list_document(tools: list[Tool]) -> dict[str, Any]:
    """``GET /tools``'s body for ``tools`` (every version)."""
    doc = _LIST.dump({"items": tools})
    if current_app.config.get("TOOLDISCOVERY_OXP_LEGACY_TOOLS_KEY"):
        doc["tools"] = doc["items"]
    return doc


def export_document(ext: Any) -> dict[str, Any]:
    """What ``GET /tools`` answers now."""
    return list_document(list(ext.tools()))


def security_warning(config: Any, ext: Any) -> str | None:
    """Why this dialect would run tools for anyone, or ``None``."""
    if not (config.get("TOOLDISCOVERY_OXP_JWT_SECRET") or config.get("TOOLDISCOVERY_OXP_API_KEY")):
        return ("oxp runs tools without authentication: set TOOLDISCOVERY_OXP_JWT_SECRET or "
                "TOOLDISCOVERY_OXP_API_KEY")
    return None


def lint_tool(tool: Tool) -> list[str]:
    """Where ``tool``'s names change on their way into OXP ids."""
    problems = []
    if sanitize(tool.name) != tool.name:
        problems.append(f"name {tool.name!r} appears in OXP ids as {sanitize(tool.name)!r}")
    if tool.toolkit and sanitize(tool.toolkit) != tool.toolkit:
        problems.append(f"toolkit {tool.toolkit!r} appears in OXP ids as {sanitize(tool.toolkit)!r}")
    return problems


def openapi_paths(ext: Any, prefix: str) -> dict[str, Any]:
    """The OpenAPI path item of ``POST /tools/call``."""
    ids = [tool_id(t) for t in ext.tools()]
    return {
        f"{prefix}/tools/call": {"post": {
            "operationId": "oxp_call_tool", "tags": ["oxp"], "summary": "Call a tool (OXP 1.0)",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "properties": {
                    "$schema": {"type": "string"},
                    "request": {"type": "object", "properties": {
                        "tool_id": {"type": "string", "enum": ids}, "call_id": {"type": "string"},
                        "trace_id": {"type": "string"}, "input": {"type": "object"},
                        "context": {"type": "object"}}, "required": ["tool_id"]}},
                "required": ["request"]}}}},
            "responses": {"200": {"description": "The call's result."},
                          "400": {"description": "ServerErrorResponse"},
                          "401": {"description": "Unauthorized."},
                          "422": {"description": "ValidationErrorResponse"}},
        }},
    }


def make_blueprint(ext: Any) -> Blueprint:
    """The OXP blueprint: health, list and call."""
    bp = Blueprint("tooldiscovery_oxp", __name__)
    bp.before_request(limit_body_size)
    register_json_errors(bp, lambda status, message: server_error(message, status).body)

    def all_tools() -> list[Tool]:
        return list(ext.tools_or(lambda: server_error("The tool list is unavailable right now.", 503)))

    @bp.get("/health")
    def health() -> Response:
        ext.tools_or(lambda: WireError(503, {"status": "unavailable", "message": "A tools provider failed."}))
        return json_response({"status": "ok"})

    method_guard(bp, "/health", ["GET"], endpoint="health_guard")

    @bp.get("/tools")
    def list_tools() -> Response:
        authenticate()
        body = request.get_data(cache=True)
        if body.strip():  # the optional request body may name the client's OXP version
            data = read_json_body(lambda m: server_error(m))
            if isinstance(data, dict) and data.get("$schema") not in (None, *ACCEPTED_SCHEMAS):
                raise server_error(f"Unsupported $schema: {data.get('$schema')!r}; this server speaks {SCHEMA_URN}.")
        return json_response(list_document(all_tools()))

    method_guard(bp, "/tools", ["GET"], endpoint="tools_guard")

    @bp.post("/tools/call")
    def call_tool() -> Response:
        authenticate()
        body = read_json_body(lambda m: server_error(m), allow_empty=False)
        if not isinstance(body, dict):
            raise server_error("The request body must be a JSON object.")
        version = body.get("$schema")
        if version is not None and version not in ACCEPTED_SCHEMAS:
            raise server_error(f"Unsupported $schema: {version!r}; this server speaks {SCHEMA_URN}.")
        if "request" in body:
            raw = body["request"]
            extra = sorted(set(body) - {"$schema", "request"})
            if extra:
                raise server_error(f"Unexpected key(s) beside 'request': {', '.join(extra)}.")
        else:  # the flat form of an unmerged spec revision
            raw = {k: v for k, v in body.items() if k != "$schema"}
        if not isinstance(raw, dict):
            raise server_error("'request' must be a JSON object.")
        try:
            call = _CALL_REQUEST.load(raw)
        except ValidationError as exc:
            raise server_error("Malformed call request: " + "; ".join(_flatten(exc.messages))) from None
        tool = resolve(all_tools(), call["tool_id"])
        if tool is None:
            raise server_error(f"Tool not found: {call['tool_id']}")
        context = call.get("context") or {}
        missing = missing_requirements(tool, context)
        if missing:
            raise server_error(
                f"The call lacks requirements of {tool_id(tool)}: {', '.join(sorted(missing))}.",
                missing_requirements=missing,
            )
        ctx = ext.make_context(
            DIALECT,
            call_id=call.get("call_id"),
            trace_id=call.get("trace_id"),
            user_id=context.get("user_id"),
            secrets={s["id"]: s["value"] for s in context.get("secrets", [])},
            authorization={a["id"]: a["token"] for a in context.get("authorization", [])},
        )
        outcome: Outcome = ext.call(tool, call.get("input") or {}, ctx)
        if outcome.status == "invalid":
            raise WireError(422, {"$schema": SCHEMA_URN, "message": outcome.error_message,
                                  "parameter_errors": outcome.parameter_errors})
        failure = outcome.failure
        result = {
            "call_id": outcome.call_id,
            "duration": round(outcome.duration_ms, 3),
            "success": outcome.ok,
            "value": outcome.value,
            "error": None if outcome.ok or failure is None else {
                "message": failure.message,
                "developer_message": failure.developer_message,
                "can_retry": failure.can_retry,
                "additional_prompt_content": failure.additional_prompt_content,
                "retry_after_ms": failure.retry_after_ms,
            },
        }
        return json_response(_CALL_RESPONSE.dump({"result": result}))

    method_guard(bp, "/tools/call", ["POST"], endpoint="call_guard")
    return bp

