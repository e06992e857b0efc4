"""Dialect ``explorer``: an MCP-shaped JSON API (F2, F3, F4, F7) and the embedded explorer page
(F1, F6), served from package templates and static files.

``GET /`` page, ``GET /tools``, ``GET /tools/<name>``, ``POST /tools/<name>/call`` (only when
``TOOLDISCOVERY_ALLOW_EXECUTE`` is true, behind the auth hook) and ``POST /tools/<name>/validate``.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Response, current_app, render_template, request
from marshmallow import fields

from ..auth import AuthError, HookCall
from ..invoke import check_arguments
from ..tool import Tool
from ..wire import (
    WireError,
    WireSchema,
    dump_tool,
    json_response,
    limit_body_size,
    parse_json,
    register_json_errors,
)

DIALECT = "explorer"
ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


class ToolSummarySchema(WireSchema):
    """F2 summary: ``annotations`` omitted when the tool has none, never null."""

    name = fields.String(required=True)
    description = fields.Function(lambda tool: tool.description or "")
    annotations = fields.Function(lambda tool: dict(tool.annotations) if tool.annotations else None)


class ToolDetailSchema(ToolSummarySchema):
    """F2 detail: the summary plus ``inputSchema`` (and ``outputSchema`` when the tool has one)."""

    inputSchema = fields.Function(lambda tool: tool.input_schema or {"type": "object"})
    outputSchema = fields.Function(lambda tool: tool.output_schema or None)


class CallResultSchema(WireSchema):
    """F3 result, MCP-shaped."""

    content = fields.List(fields.Dict())
    structuredContent = fields.Raw()
    isError = fields.Boolean(required=True)
    errors = fields.List(fields.Dict())
    _meta = fields.Dict(data_key="_meta")


_SUMMARY = ToolSummarySchema()
_DETAIL = ToolDetailSchema()
_RESULT = CallResultSchema()


def export_document(ext: Any) -> list[dict[str, Any]]:
    """Every tool in F2's detail form."""
    return [dump_tool(_DETAIL, t, "explorer-detail") for t in ext.tools().latest()]


def security_warning(config: Any, ext: Any) -> str | None:
    """Why this dialect would run tools for anyone, or ``None``."""
    if config.get("TOOLDISCOVERY_ALLOW_EXECUTE") and ext.current_auth_hook is None:
        return ("explorer runs tools for anyone (TOOLDISCOVERY_ALLOW_EXECUTE is on and no auth hook "
                "is set): set one with @discovery.auth_hook")
    return None


def openapi_paths(ext: Any, prefix: str) -> dict[str, Any]:
    """OpenAPI path items of the per-tool call and validate endpoints."""
    paths: dict[str, Any] = {}
    for tool in ext.tools().latest():
        body = {"required": False, "content": {"application/json": {"schema": tool.input_schema or {}}}}
        paths[f"{prefix}/tools/{tool.name}/call"] = {"post": {
            "operationId": f"explorer_call_{tool.name}".replace("/", "_"), "tags": ["explorer"],
            "summary": (tool.description or tool.name).split("\n")[0], "requestBody": body,
            "responses": {"200": {"description": "content, structuredContent, isError"},
                          "400": {"description": "Malformed JSON or invalid arguments"},
                          "401": {"description": "Rejected by the auth hook"},
                          "403": {"description": "Execution disabled"},
                          "404": {"description": "Unknown tool"},
                          "500": {"description": "The tool failed"}}}}
        paths[f"{prefix}/tools/{tool.name}/validate"] = {"post": {
            "operationId": f"explorer_validate_{tool.name}".replace("/", "_"), "tags": ["explorer"],
            "summary": "Validate arguments", "requestBody": body,
            "responses": {"200": {"description": "valid, errors"}}}}
    return paths


def _error(status: int, message: str) -> WireError:
    return WireError(status, {"error": message})


def make_blueprint(ext: Any) -> Blueprint:
    """The explorer blueprint: the page, its static files and the F2/F3/F7 API."""
    bp = Blueprint("tooldiscovery_explorer", __name__, template_folder="../templates",
                   static_folder="../static", static_url_path="/static")
    bp.before_request(limit_body_size)
    register_json_errors(bp, lambda status, message: _error(status, message).body)

    def tools():
        return ext.tools_or(lambda: _error(503, "The tool list is unavailable right now."))

    def find(name: str) -> Tool:
        tool = tools().get(name)
        if tool is None:
            raise _error(404, f"Tool not found: {name}")
        return tool

    @bp.get("/")
    def page() -> Response:
        response = current_app.make_response(render_template("tooldiscovery/explorer.html"))
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "connect-src 'self'; frame-ancestors 'self'")
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @bp.get("/tools")
    def list_tools() -> Response:
        return json_response([dump_tool(_SUMMARY, t, "explorer-summary") for t in tools().latest()])

    @bp.get("/tools/<path:name>")
    def tool_detail(name: str) -> Response:
        return json_response(dump_tool(_DETAIL, find(name), "explorer-detail"))

    def read_arguments(malformed: Any) -> Any:
        raw = request.get_data(cache=True)
        if not raw.strip():
            return {}
        try:
            return parse_json(raw)
        except ValueError as exc:
            raise malformed(f"Invalid JSON: {exc}") from None

    @bp.post("/tools/<path:name>/validate")
    def validate(name: str) -> Response:
        tool = find(name)

        def malformed(message: str) -> WireError:
            return WireError(400, {"valid": False, "errors": [
                {"path": "", "message": message, "keyword": "format"}]})

        arguments = read_arguments(malformed)
        errors = check_arguments(tool, arguments, current_app.logger)
        if not errors:
            return json_response({"valid": True})
        return json_response({"valid": False, "errors": [e.as_dict() for e in errors]})

    @bp.post("/tools/<path:name>/call")
    def call(name: str) -> Response:
        if not current_app.config.get("TOOLDISCOVERY_ALLOW_EXECUTE"):
            raise _error(403, "Tool execution is disabled.")
        tool = find(name)
        arguments = read_arguments(lambda message: _error(400, message))
        trace_id = request.headers.get("X-Trace-Id") or None
        context = ext.make_context(DIALECT, trace_id=trace_id)
        context.trace_id = context.trace_id or context.call_id

        def run() -> Any:
            return ext.call(tool, arguments, context)

        hook = ext.current_auth_hook
        try:
            outcome = HookCall(hook, request).run(run) if hook is not None else run()
        except AuthError as exc:
            current_app.logger.info("explorer call to %s refused: %s", name, exc.reason)
            raise _error(401, "Unauthorized") from None
        meta = {"_trace_id": context.trace_id} if context.trace_id else None
        if outcome.ok:
            value = outcome.value
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            body = {"content": [{"type": "text", "text": text}], "isError": False, "_meta": meta,
                    "structuredContent": value if isinstance(value, (dict, list)) else None}
            return json_response(_RESULT.dump(body))
        body = {"content": [{"type": "text", "text": outcome.error_message}], "isError": True,
                "_meta": meta,
                "errors": [e.as_dict() for e in outcome.errors] if outcome.status == "invalid" else None}
        status = 400 if outcome.status == "invalid" else 500
        return json_response(_RESULT.dump(body), status)

    return bp
