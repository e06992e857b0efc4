"""Dialect ``mcp``: the Model Context Protocol over streamable HTTP, stateless.

One endpoint (default ``/mcp``). ``POST`` carries JSON-RPC 2.0; every request is answered with a
single ``application/json`` body, notifications and client responses with 202. No session is
issued, so any worker can answer any request. Both protocol eras are served: the handshake era
(``initialize``, 2024-11-05 .. 2025-11-25) and 2026-07-28 (``server/discover`` and the per-request
``_meta`` envelope).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, request
from marshmallow import fields

from ..auth import AuthError, require_bearer
from ..invoke import Outcome
from ..tool import Tool
from ..wire import WireSchema, dump_tool, json_response, limit_body_size, parse_json

DIALECT = "mcp"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
ALL_VERSIONS = HANDSHAKE_VERSIONS + MODERN_VERSIONS
VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNSUPPORTED_PROTOCOL_VERSION = -32022


class RpcError(Exception):
    """A JSON-RPC error to answer with (code, message, optional data)."""
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def object_output_schema(tool: Tool) -> tuple[dict[str, Any] | None, bool]:
    """(MCP ``outputSchema``, wrapped?). MCP output schemas are object schemas: any other
    declared output is wrapped as ``{"result": ...}``, as the official SDK does."""
    schema = tool.output_schema
    if not schema:
        return None, False
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True


class McpToolSchema(WireSchema):
    """A registry :class:`Tool` dumped as an MCP ``Tool``."""

    name = fields.String(required=True)
    title = fields.Method("get_title")
    description = fields.String()
    inputSchema = fields.Method("get_input_schema")
    outputSchema = fields.Method("get_output_schema")
    annotations = fields.Method("get_annotations")

    def get_title(self, tool: Tool) -> str | None:
        return tool.title or (tool.annotations or {}).get("title")

    def get_input_schema(self, tool: Tool) -> dict[str, Any]:
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        return schema

    def get_output_schema(self, tool: Tool) -> dict[str, Any] | None:
        return object_output_schema(tool)[0]

    def get_annotations(self, tool: Tool) -> dict[str, Any] | None:
        return dict(tool.annotations) if tool.annotations else None


_TOOL = McpToolSchema()


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _decode_cursor(cursor: Any) -> int:
    if not isinstance(cursor, str):
        raise RpcError(INVALID_PARAMS, "Invalid cursor.")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = int(data["o"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise RpcError(INVALID_PARAMS, "Invalid cursor.") from None
    if offset < 0:
        raise RpcError(INVALID_PARAMS, "Invalid cursor.")
    return offset


def call_result(outcome: Outcome) -> dict[str, Any]:
    """A ``CallToolResult``: text content, ``structuredContent`` for structured values, and
    ``isError`` with an actionable message for failures and invalid arguments."""
    if not outcome.ok:
        text = outcome.error_message
        if outcome.failure is not None and outcome.failure.additional_prompt_content:
            text = f"{text}\n{outcome.failure.additional_prompt_content}"
        if outcome.status == "invalid":
            text += "\nCorrect the arguments to match the tool's input schema and call it again."
        return {"content": [{"type": "text", "text": text}], "isError": True}
    value = outcome.value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    schema, wrapped = object_output_schema(outcome.tool)
    if wrapped:
        result["structuredContent"] = {"result": value}
    elif isinstance(value, dict):
        result["structuredContent"] = value
    elif isinstance(value, list) and schema is None:
        result["structuredContent"] = {"result": value}
    return result


def _origin_allowed(origin: str) -> bool:
    allowed = current_app.config.get("TOOLDISCOVERY_MCP_ALLOWED_ORIGINS")
    if isinstance(allowed, str):
        allowed = [a.strip() for a in allowed.split(",") if a.strip()]
    if allowed:
        return "*" in allowed or origin.rstrip("/") in {a.rstrip("/") for a in allowed}
    parts = urlsplit(origin)
    host = (parts.hostname or "").lower()
    if host in ("localhost", "127.0.0.1", "::1"):
        return True
    return parts.netloc.lower() == request.host.lower()


def _rpc_error_body(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def export_document(ext: Any) -> dict[str, Any]:
    """What ``tools/list`` answers, unpaginated."""
    return {"tools": [dump_tool(_TOOL, t, "mcp") for t in ext.tools().latest()]}


def security_warning(config: Any, ext: Any) -> str | None:
    """Why this dialect would run tools for anyone, or ``None``."""
    if not config.get("TOOLDISCOVERY_MCP_BEARER_TOKEN"):
        return "mcp runs tools without authentication: set TOOLDISCOVERY_MCP_BEARER_TOKEN"
    return None


_MCP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def lint_tool(tool: Tool) -> list[str]:
    """Problems MCP clients would have with ``tool``."""
    if not _MCP_NAME.match(tool.name):
        return [f"name {tool.name!r} is outside MCP's recommended 1-128 of [A-Za-z0-9_.-]"]
    return []


def openapi_paths(ext: Any, prefix: str) -> dict[str, Any]:
    """The OpenAPI path item of the JSON-RPC endpoint."""
    return {prefix or "/": {"post": {
        "operationId": "mcp_jsonrpc", "tags": ["mcp"],
        "summary": "MCP JSON-RPC over streamable HTTP (tools/list, tools/call, ...)",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "properties": {"jsonrpc": {"const": "2.0"}, "id": {},
                                             "method": {"type": "string"}, "params": {"type": "object"}},
            "required": ["jsonrpc", "method"]}}}},
        "responses": {"200": {"description": "A JSON-RPC response."},
                      "202": {"description": "A notification or response was accepted."}},
    }}}


def make_blueprint(ext: Any) -> Blueprint:
    """The MCP blueprint: one streamable-HTTP endpoint."""
    bp = Blueprint("tooldiscovery_mcp", __name__)
    bp.before_request(limit_body_size)

    def server_info() -> dict[str, Any]:
        cfg = current_app.config
        return {"name": str(cfg["TOOLDISCOVERY_SERVER_NAME"]),
                "version": str(cfg["TOOLDISCOVERY_SERVER_VERSION"]),
                "title": str(cfg.get("TOOLDISCOVERY_TITLE") or cfg["TOOLDISCOVERY_SERVER_NAME"])}

    def with_instructions(result: dict[str, Any]) -> dict[str, Any]:
        description = current_app.config.get("TOOLDISCOVERY_SERVER_DESCRIPTION")
        return {**result, "instructions": description} if description else result

    def capabilities() -> dict[str, Any]:
        return {"tools": {"listChanged": False}}

    def all_tools():
        return ext.tools_or(lambda: RpcError(INTERNAL_ERROR, "The tool list is unavailable right now."))

    # -- methods -----------------------------------------------------------------------------

    def initialize(params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string).")
        version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        return with_instructions({"protocolVersion": version, "capabilities": capabilities(),
                                  "serverInfo": server_info()})

    def discover(params: dict[str, Any]) -> dict[str, Any]:
        return with_instructions({"supportedVersions": list(ALL_VERSIONS),
                                  "capabilities": capabilities()})

    def list_tools(params: dict[str, Any]) -> dict[str, Any]:
        tools = all_tools().latest()
        size = max(1, int(current_app.config.get("TOOLDISCOVERY_MCP_PAGE_SIZE") or 100))
        start = _decode_cursor(params["cursor"]) if params.get("cursor") is not None else 0
        if start > len(tools):
            raise RpcError(INVALID_PARAMS, "Invalid cursor.")
        page = tools[start:start + size]
        result: dict[str, Any] = {"tools": [dump_tool(_TOOL, t, "mcp") for t in page]}
        if start + size < len(tools):
            result["nextCursor"] = _encode_cursor(start + size)
        return result

    def call_tool(params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a string).")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tools/call params.arguments must be an object.")
        tool = all_tools().get(name)
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        meta: dict[str, Any] = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
        traceparent = meta.get("traceparent")
        context = ext.make_context(DIALECT, extra={"meta": meta},
                                   trace_id=traceparent if isinstance(traceparent, str) else None)
        return call_result(ext.call(tool, arguments or {}, context))

    methods = {
        "initialize": initialize,
        "ping": lambda params: {},
        "server/discover": discover,
        "tools/list": list_tools,
        "tools/call": call_tool,
    }

    def handle(message: Any) -> dict[str, Any] | None:
        """One JSON-RPC message -> its response (``None`` for notifications and responses)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _rpc_error_body(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message.")
        if "method" not in message:
            if "id" in message and ("result" in message or "error" in message):
                return None  # a response from the client
            return _rpc_error_body(message.get("id") if _valid_id(message.get("id")) else None,
                                   INVALID_REQUEST, "Invalid Request: 'method' is missing.")
        method = message["method"]
        if "id" not in message:
            return None  # a notification: accepted, nothing to answer
        id_ = message["id"]
        if not _valid_id(id_):
            return _rpc_error_body(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or a number.")
        if not isinstance(method, str):
            return _rpc_error_body(id_, INVALID_REQUEST, "Invalid Request: 'method' must be a string.")
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _rpc_error_body(id_, INVALID_PARAMS, "Invalid params: 'params' must be an object.")
        meta: dict[str, Any] = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
        modern_version = meta.get(VERSION_META_KEY)
        modern = modern_version is not None
        try:
            if modern and modern_version not in MODERN_VERSIONS:
                raise RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version.",
                               {"supported": list(MODERN_VERSIONS), "requested": modern_version})
            if modern and method == "initialize":
                raise RpcError(UNSUPPORTED_PROTOCOL_VERSION,
                               "initialize is not part of protocol version 2026-07-28.",
                               {"supported": list(MODERN_VERSIONS), "requested": modern_version})
            handler = methods.get(method)
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
            result = handler(params)
        except RpcError as exc:
            return _rpc_error_body(id_, exc.code, exc.message, exc.data)
        except Exception:
            current_app.logger.exception("mcp: %s failed", method)
            return _rpc_error_body(id_, INTERNAL_ERROR, "Internal error.")
        if modern:
            result = dict(result)
            result.setdefault("resultType", "complete")
            if method in ("tools/list", "server/discover"):
                result.setdefault("ttlMs", 0)
                result.setdefault("cacheScope", "private")
            result["_meta"] = {**(result.get("_meta") or {}), SERVER_INFO_META_KEY: server_info()}
        return {"jsonrpc": "2.0", "id": id_, "result": result}

    def guard() -> Response | None:
        origin = request.headers.get("Origin")
        if origin and not _origin_allowed(origin):
            current_app.logger.warning("mcp: request from origin %s refused", origin)
            return json_response(_rpc_error_body(None, INVALID_REQUEST, "Forbidden: origin not allowed."), 403)
        token = current_app.config.get("TOOLDISCOVERY_MCP_BEARER_TOKEN")
        if token:
            try:
                require_bearer(request, token)
            except AuthError as exc:
                current_app.logger.info("mcp: request refused: %s", exc.reason)
                challenge = 'Bearer realm="mcp"'
                if request.headers.get("Authorization"):
                    challenge += ', error="invalid_token"'
                return json_response(_rpc_error_body(None, INVALID_REQUEST, "Unauthorized."), 401,
                                     {"WWW-Authenticate": challenge})
        version = request.headers.get("MCP-Protocol-Version")
        if version is not None and version not in ALL_VERSIONS:
            return json_response(_rpc_error_body(
                None, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {version}"), 400)
        return None

    @bp.after_request
    def cors(response: Response) -> Response:
        """Browser clients (MCP Inspector's direct mode) need CORS from allowed origins only."""
        origin = request.headers.get("Origin")
        if origin and _origin_allowed(origin):
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Vary"] = "Origin"
            response.headers["Access-Control-Expose-Headers"] = "Mcp-Session-Id, WWW-Authenticate"
            if request.method == "OPTIONS":
                response.headers["Access-Control-Allow-Methods"] = "POST, GET, DELETE, OPTIONS"
                response.headers["Access-Control-Allow-Headers"] = (
                    "Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id, "
                    "Last-Event-ID")
                response.headers["Access-Control-Max-Age"] = "600"
        return response

    @bp.route("", methods=["POST"], strict_slashes=False)
    def endpoint() -> Response:
        refused = guard()
        if refused is not None:
            return refused
        raw = request.get_data(cache=True)
        try:
            payload = parse_json(raw)
        except ValueError as exc:
            return json_response(_rpc_error_body(None, PARSE_ERROR, f"Parse error: {exc}"), 400)
        if isinstance(payload, list):  # a batch (2025-03-26)
            if not payload:
                return json_response(_rpc_error_body(None, INVALID_REQUEST, "Invalid Request: empty batch."), 400)
            answers = [a for a in (handle(m) for m in payload) if a is not None]
            return json_response(answers) if answers else Response(status=202)
        answer = handle(payload)
        if answer is None:
            return Response(status=202)
        status = 400 if answer.get("error", {}).get("code") == INVALID_REQUEST else 200
        return json_response(answer, status)

    @bp.route("", methods=["GET", "DELETE", "PUT", "PATCH"], strict_slashes=False, endpoint="not_allowed")
    def not_allowed() -> Response:
        refused = guard()
        if refused is not None:
            return refused
        # No server-to-client stream and no sessions: nothing to GET or DELETE.
        response = json_response(_rpc_error_body(
            None, INVALID_REQUEST, "Method Not Allowed: POST JSON-RPC messages to this endpoint."), 405)
        response.headers["Allow"] = "POST, OPTIONS"
        return response

    @bp.errorhandler(413)
    def too_large(exc: Any) -> Response:
        return json_response(_rpc_error_body(None, INVALID_REQUEST, "Request body too large."), 413)

    return bp


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)
