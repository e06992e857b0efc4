"""The checks the streamable HTTP transport makes of an MCP request before any method runs: the
routing headers (each sent once; ``MCP-Protocol-Version`` a revision served) and, in the stateless
era, the ``params._meta`` envelope and the routing headers agreeing with the body, as the official
SDKs check them; and the HTTP status a stateless-era error is answered with."""

from __future__ import annotations

from typing import Any

from flask import request

from . import jsonrpc as rpc
from . import param_headers, revisions
from .param_headers import HEADER_MISMATCH
from .request import CAPABILITIES_META_KEY, MISSING_CAPABILITY, VERSION_META_KEY, speaks_stateless
from .task_methods import STATELESS_METHODS as TASK_METHODS

#: Handshake-era methods the stateless era removed (the handshake, ``ping``, session-held state).
REMOVED_METHODS = ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: HTTP status of a JSON-RPC error in the stateless era's transport (as the official SDK maps them).
STATELESS_STATUS = {rpc.PARSE_ERROR: 400, rpc.INVALID_REQUEST: 400, rpc.INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
                    UNSUPPORTED_PROTOCOL_VERSION: 400, rpc.METHOD_NOT_FOUND: 404, MISSING_CAPABILITY: 400}
ROUTING_HEADERS = ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")
#: The methods whose ``Mcp-Name`` header mirrors a parameter of the body, and that parameter.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_ROUTING_KEYS = tuple((name, "HTTP_" + name.upper().replace("-", "_")) for name in ROUTING_HEADERS)
#: ``MCP-Protocol-Version`` values (none, or a revision served, sent once) :func:`header_refusal`
#: never refuses a request for when it sends no other routing header (``Mcp-Method``, ``Mcp-Name``):
#: the endpoint looks no further at such a request's headers.
UNREFUSED_VERSIONS = frozenset({None, *revisions.SUPPORTED})


def header_value(value: str | None) -> str | None:
    """An ``Mcp-Name`` value, with the ``=?base64?...?=`` form decoded (``None`` if malformed)."""
    return None if value is None else param_headers.decoded(value)


def stateless_refusal(method: str, params: dict[str, Any], called_as: str | None = None) -> rpc.RpcError | None:
    """The stateless era's checks of one request, in the official SDK's order: the ``_meta`` envelope
    (-32602), the routing headers agreeing with the body (-32020: ``Mcp-Name`` names ``called_as``
    when tool search's ``call_tool`` made the call, :attr:`.McpRequest.called_as`), a served version
    (-32022), a method the version has (-32601: the handshake-era methods it removed)."""
    meta = params.get("_meta")
    missing = [k for k in (VERSION_META_KEY, CAPABILITIES_META_KEY) if not isinstance(meta, dict) or k not in meta]
    if missing or not isinstance(meta, dict):
        return rpc.RpcError(rpc.INVALID_PARAMS,
                            f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
    version = meta[VERSION_META_KEY]
    if request.environ.get("HTTP_MCP_PROTOCOL_VERSION") != version:
        return rpc.RpcError(HEADER_MISMATCH, "MCP-Protocol-Version header does not match the request envelope's "
                            "version")
    if request.headers.get("Mcp-Method") != method:
        return rpc.RpcError(HEADER_MISMATCH, "Mcp-Method header does not match the request body's method")
    named = NAME_BEARING.get(method)
    called = (called_as or params.get(named)) if named is not None else None  # call_tool: its own name
    if called is not None and header_value(request.headers.get("Mcp-Name")) != called:
        return rpc.RpcError(HEADER_MISMATCH, f"Mcp-Name header does not match the request body's {named!r} parameter")
    if method in TASK_METHODS and isinstance(params.get("taskId"), str) \
            and header_value(request.headers.get("Mcp-Name")) != params["taskId"]:
        return rpc.RpcError(HEADER_MISMATCH, "Mcp-Name header does not match the request body's 'taskId' parameter")
    if not isinstance(version, str):
        return rpc.RpcError(rpc.INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in revisions.STATELESS_REVISIONS:
        return rpc.RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                            {"supported": list(revisions.SUPPORTED), "requested": version})
    if method in REMOVED_METHODS:  # answered 404 like any method the version does not have
        return rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Method not found: {method} is not part of protocol version "
                            f"{version}.")
    return None


def is_stateless(message: Any) -> bool:
    """A stateless-era message: the version header says so, or the ``_meta`` envelope does."""
    params = message.get("params") if isinstance(message, dict) else None
    return speaks_stateless(params.get("_meta") if isinstance(params, dict) else None)


def header_refusal(payload: Any) -> tuple[dict[str, Any], int] | None:
    """A routing header sent twice, or a protocol version this server does not speak."""
    id_ = payload.get("id") if isinstance(payload, dict) and rpc.valid_id(payload.get("id")) else None
    environ = request.environ  # one key per header: WSGI servers join repeated ones with ","
    for name, environ_key in _ROUTING_KEYS:
        if "," in environ.get(environ_key, ""):
            return rpc.error_body(id_, HEADER_MISMATCH, f"{name} header sent more than once"), 400
    version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    if version is not None and version not in revisions.SUPPORTED:
        return rpc.error_body(id_, UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version}",
                          {"supported": list(revisions.SUPPORTED), "requested": version}), 400
    return None


__all__ = ["NAME_BEARING", "REMOVED_METHODS", "ROUTING_HEADERS", "STATELESS_STATUS", "UNREFUSED_VERSIONS",
           "UNSUPPORTED_PROTOCOL_VERSION", "header_refusal", "header_value", "is_stateless", "stateless_refusal"]
