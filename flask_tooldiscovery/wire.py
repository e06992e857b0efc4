"""What every dialect's wire layer shares: a marshmallow base for wire schemas, JSON responses,
and the one strict JSON parser (bounded depth, finite numbers only)."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from typing import Any

from flask import Response, current_app
from marshmallow import Schema, post_dump

JSON_MIMETYPE = "application/json"


class WireSchema(Schema):
    """Base of every dialect's dump schema: ``None`` values are left out of the output.

    Keys named in ``keep_none`` are kept even when ``None`` (a wire format that needs an explicit
    ``null``, such as OXP's ``output_schema``).
    """

    keep_none: tuple[str, ...] = ()

    @post_dump
    def _drop_none(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {k: v for k, v in data.items() if v is not None or k in self.keep_none}


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response, serialized by the app's JSON provider, keys in the order the wire
    schemas and the tools declared them (a schema's property order is what clients show)."""
    text = current_app.json.dumps(body, sort_keys=False)
    response = current_app.response_class(text, status=status, mimetype=JSON_MIMETYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


MAX_JSON_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def parse_json(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a request body; ``ValueError`` with a readable message for anything that is not
    JSON, and for nesting deeper than ``max_depth`` (which would exhaust the stack later on)."""
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
    except UnicodeDecodeError:
        raise ValueError("The request body is not UTF-8 text.") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels.") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    except ValueError as exc:  # a non-finite number, from the hooks above
        raise ValueError(str(exc)) from None
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"JSON nested deeper than {max_depth} levels.")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


def validation_messages(messages: Any, prefix: str = "") -> list[str]:
    """marshmallow's nested error messages as flat ``"path.to.key: message"`` lines."""
    if isinstance(messages, dict):
        return [line for key, value in messages.items()
                for line in validation_messages(value, f"{prefix}.{key}" if prefix else str(key))]
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [f"{prefix}: {' '.join(messages)}" if prefix else " ".join(messages)]
    if isinstance(messages, list):
        return [line for item in messages for line in validation_messages(item, prefix)]
    return [f"{prefix}: {messages}"]


def openapi_post(operation_id: str, tag: str, summary: str, schema: Any, responses: Mapping[str, str],
                 *, required: bool = True) -> dict[str, Any]:
    """An OpenAPI path item for a ``POST`` taking a JSON body (for the dialects' OpenAPI hooks)."""
    return {"post": {
        "operationId": operation_id, "tags": [tag], "summary": summary,
        "requestBody": {"required": required, "content": {JSON_MIMETYPE: {"schema": schema}}},
        "responses": {status: {"description": text} for status, text in responses.items()},
    }}


def page_cursor(offset: int) -> str:
    """An opaque pagination cursor for ``offset``."""
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def read_cursor(cursor: Any, size: int) -> int:
    """The offset of a cursor from :func:`page_cursor`; ``ValueError`` unless it is one, within
    ``0..size``."""
    if not isinstance(cursor, str):
        raise ValueError("a cursor is a string")
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["o"])
    except (ValueError, KeyError, TypeError, OverflowError, binascii.Error):
        raise ValueError("not a cursor of this server") from None
    if not 0 <= offset <= size:
        raise ValueError("the cursor is out of range")
    return offset
