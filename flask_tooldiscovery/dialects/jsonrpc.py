"""JSON-RPC 2.0 framing: error codes, error and result envelopes, and the dispatch of one message
to a method table. Knows nothing of MCP's methods; the ``mcp`` dialect hands it those."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Method = Callable[[dict[str, Any]], dict[str, Any]]


class RpcError(Exception):
    """A JSON-RPC error to answer with (code, message, optional data)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def error_body(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def valid_id(value: Any) -> bool:
    """Request ids are strings or integers (not booleans, not null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def is_request(message: Any) -> bool:
    """True for a message that expects an answer (it has a method and an id)."""
    return isinstance(message, dict) and "method" in message and "id" in message


def dispatch(
    message: Any,
    call: Callable[[str, dict[str, Any]], dict[str, Any]],
    on_error: Callable[[str, Exception], RpcError],
) -> dict[str, Any] | None:
    """One JSON-RPC message -> its response (``None`` for notifications and client responses).

    ``call(method, params)`` runs a method (raising :class:`RpcError` for a protocol error);
    ``on_error(method, exc)`` turns any other exception into the :class:`RpcError` to send.
    """
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return error_body(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message.")
    if "method" not in message:
        if "id" in message and ("result" in message or "error" in message):
            return None  # a response from the client
        return error_body(message.get("id") if valid_id(message.get("id")) else None,
                          INVALID_REQUEST, "Invalid Request: 'method' is missing.")
    method = message["method"]
    if "id" not in message:
        return None  # a notification: accepted, nothing to answer
    id_ = message["id"]
    if not valid_id(id_):
        return error_body(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or a number.")
    if not isinstance(method, str):
        return error_body(id_, INVALID_REQUEST, "Invalid Request: 'method' must be a string.")
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        return error_body(id_, INVALID_PARAMS, "Invalid params: 'params' must be an object.")
    try:
        result = call(method, dict(params))
    except RpcError as exc:
        return error_body(id_, exc.code, exc.message, exc.data)
    except Exception as exc:
        rpc = on_error(method, exc)
        return error_body(id_, rpc.code, rpc.message, rpc.data)
    return {"jsonrpc": "2.0", "id": id_, "result": result}


__all__ = [
    "INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "RpcError",
    "dispatch", "error_body", "is_request", "valid_id",
]
