"""JSON-RPC 2.0 framing: error codes, error and result envelopes, the dispatch of one message to a
method table, and the encoding of responses, into which a result already encoded as JSON
(:class:`Encoded`, e.g. a cached page) is spliced as is. Knows nothing of MCP's methods; the
``mcp`` dialect hands it those."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import ToolDiscoveryError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class Encoded:
    """A method's result already encoded as JSON text (UTF-8 bytes, by the same encoder that
    encodes the response): :func:`encode` puts it in the response envelope without decoding it.
    Given in pieces (``parts``: the text is their concatenation), it is joined once, with the
    envelope (:data:`data` joins them)."""

    __slots__ = ("parts",)

    def __init__(self, *parts: bytes) -> None:
        self.parts = parts

    @property
    def data(self) -> bytes:
        """The text whole."""
        parts = self.parts
        return parts[0] if len(parts) == 1 else b"".join(parts)


Result = dict[str, Any] | Encoded
Method = Callable[[dict[str, Any]], Result]


class RpcError(ToolDiscoveryError):
    """A JSON-RPC error to answer with (code, message, optional data)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


#: The most characters of one text an error carries (its message, each text in its ``data``): what a
#: client sent and an error repeats (a name, a URI) is cut there, never echoed whole.
MAX_ERROR_TEXT = 1024


def _cut(text: Any) -> Any:
    return text[:MAX_ERROR_TEXT] + "..." if isinstance(text, str) and len(text) > MAX_ERROR_TEXT else text


def error_body(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response (its texts cut at :data:`MAX_ERROR_TEXT` characters)."""
    error: dict[str, Any] = {"code": code, "message": _cut(message)}
    if data is not None:
        error["data"] = {key: _cut(value) for key, value in data.items()} if isinstance(data, dict) else _cut(data)
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def valid_id(value: Any) -> bool:
    """Request ids are strings or integers (not booleans, not null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def dispatch(
    message: Any,
    call: Callable[[str, dict[str, Any]], Result],
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
    notification = "id" not in message
    id_ = None if notification else message["id"]
    if not notification and not valid_id(id_):
        return error_body(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or a number.")
    if not isinstance(method, str):
        return error_body(id_, INVALID_REQUEST, "Invalid Request: 'method' must be a string.")
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, Mapping):  # not a request, so no notification either: refused as one
        return error_body(id_, INVALID_REQUEST if notification else INVALID_PARAMS,
                          "Invalid params: 'params' must be an object.")
    if notification:
        return None  # accepted, nothing to answer
    return answer(id_, method, lambda: call(method, dict(params)), on_error)


def answer(id_: Any, method: str, run: Callable[[], Result], on_error: Callable[[str, Exception], RpcError]) \
        -> dict[str, Any]:
    """The response to the request ``id_`` of ``method`` (a request :func:`dispatch` would run: the
    endpoint reads a request once and may run it directly): ``run()``'s result, or the error it
    raised (:class:`RpcError`; any other exception as ``on_error(method, exc)`` says)."""
    try:
        result = run()
    except RpcError as exc:
        return error_body(id_, exc.code, exc.message, exc.data)
    except Exception as exc:
        rpc = on_error(method, exc)
        return error_body(id_, rpc.code, rpc.message, rpc.data)
    return result_body(id_, result)


def result_body(id_: Any, result: Result) -> dict[str, Any]:
    """A JSON-RPC result response."""
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def result_splice(result: bytes, dumps: Callable[[Any], str]) -> Callable[[Any], bytes]:
    """``id -> encode(result_body(id, Encoded(result)), dumps)``, the envelope around the id
    encoded once: the bytes :func:`encode` writes, for any id, with one small ``dumps``."""
    head = dumps({"jsonrpc": "2.0", "id": None, "result": None})  # the id's null first, the result's last
    at_id, at_result = head.index("null"), head.rindex("null")
    before, between, after = (head[:at_id].encode("utf-8"), head[at_id + 4:at_result].encode("utf-8"),
                              head[at_result + 4:].encode("utf-8"))

    def splice(id_: Any) -> bytes:
        return b"".join((before, dumps(id_).encode("utf-8"), between, result, after))

    return splice


def message_of(raw: bytes) -> Any:
    """The JSON value of a body (``None`` when it is not JSON)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def shape(raw: bytes) -> tuple[str, Any] | None:
    """(the request without its id, as text; its id) of a body holding one JSON-RPC request, or
    ``None``: two requests of one shape get the same result under their own ids. The text is the
    ``repr`` of the decoded values, which tells apart any two JSON values (1, 1.0 and true
    included); keys stay in the order sent, so another order is another shape."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if type(message) is not dict or not valid_id(message.get("id")):
        return None
    try:
        key = repr({k: v for k, v in message.items() if k != "id"})
    except RecursionError:
        return None
    return key, message["id"]


#: The keys of a result response, in the order :func:`result_body` writes them.
_ENVELOPE = ("jsonrpc", "id", "result")


def encode(reply: Any, dumps: Callable[[Any], str], standard: bool = False) -> bytes:
    """A response (or a batch: a list of them) as JSON bytes, encoded by ``dumps``; an
    :class:`Encoded` result is spliced in where ``dumps`` would have written it. ``standard``:
    ``dumps`` writes as ``json.dumps`` does by default (keys in order, ``", "`` and ``": "``:
    Flask's default provider), so the envelope of an encoded result under a string or integer id
    is written as it would, without encoding it."""
    if standard and type(reply) is dict and type(reply.get("result")) is Encoded and len(reply) == 3:
        id_ = reply.get("id")
        if (type(id_) is str or type(id_) is int) and reply.get("jsonrpc") == "2.0" and tuple(reply) == _ENVELOPE:
            return b"".join((b'{"jsonrpc": "2.0", "id": ', dumps(id_).encode("utf-8"), b', "result": ',
                             *reply["result"].parts, b"}"))
    if isinstance(reply, dict) and isinstance(reply.get("result"), Encoded):
        head = dumps({**reply, "result": None})  # "result" is the envelope's last key: its null is the last
        at = head.rindex("null")
        return b"".join((head[:at].encode("utf-8"), reply["result"].data, head[at + 4:].encode("utf-8")))
    if isinstance(reply, list) and any(isinstance(r, dict) and isinstance(r.get("result"), Encoded) for r in reply):
        reply = [{**r, "result": json.loads(r["result"].data)} if isinstance(r, dict)
                 and isinstance(r.get("result"), Encoded) else r for r in reply]  # a batch: rare, decoded
    return dumps(reply).encode("utf-8")


__all__ = [
    "INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "Encoded", "Method",
    "Result", "RpcError", "answer", "dispatch", "encode", "error_body", "result_body", "result_splice", "shape",
    "valid_id",
]
