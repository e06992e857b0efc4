"""MCP stateless-era (2026-07-28) parameter headers (SEP-2243): a tool parameter whose input schema says
``"x-mcp-header": "Region"`` travels in the ``tools/call`` body and, for proxies and gateways that
route on it without reading the body, in the ``Mcp-Param-Region`` header too. The server checks
that the two agree: a value sent in the body without its header, or a header (decoded from its
``=?base64?...?=`` form) that differs from the body's value, is refused with HTTP 400 and -32020
(HeaderMismatch), as the routing headers are. A header whose ``=?base64?...?=`` form does not
decode (bad padding, characters outside the alphabet) never matches; a value without both ends of
that wrapper is taken literally."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from flask import request

from ...tools.model import Tool
from . import jsonrpc as rpc

KEYWORD = "x-mcp-header"
HEADER_PREFIX = "Mcp-Param-"
HEADER_MISMATCH = -32020
_WRAPPED = re.compile(r"^=\?base64\?(.*)\?=$")


def decoded(value: str) -> str | None:
    """A header value as sent: ``=?base64?...?=`` decoded (``None``: not valid Base64), else literal."""
    match = _WRAPPED.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def as_header(value: Any) -> str:
    """A body value as its header carries it (strings as they are, numbers and booleans as JSON)."""
    return value if isinstance(value, str) else json.dumps(value)


def declared(tool: Tool) -> dict[str, str]:
    """The tool's parameters that travel in headers too: {parameter: header name suffix}."""
    properties = (tool.input_schema or {}).get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {name: str(spec[KEYWORD]) for name, spec in properties.items()
            if isinstance(spec, Mapping) and isinstance(spec.get(KEYWORD), str) and spec[KEYWORD]}


def refusal(tool: Tool, arguments: Mapping[str, Any] | None) -> rpc.RpcError | None:
    """-32020 when a declared parameter's header and the body disagree (``None``: they agree)."""
    given = arguments or {}
    for name, suffix in declared(tool).items():
        header = request.headers.get(HEADER_PREFIX + suffix)
        if name not in given and header is None:
            continue
        if header is None:
            return rpc.RpcError(HEADER_MISMATCH, f"{HEADER_PREFIX}{suffix} header is missing; the body has '{name}'")
        if name not in given or decoded(header.strip()) != as_header(given[name]):
            return rpc.RpcError(HEADER_MISMATCH, f"{HEADER_PREFIX}{suffix} header does not match the request "
                                f"body's '{name}' argument")
    return None


__all__ = ["HEADER_PREFIX", "KEYWORD", "as_header", "declared", "decoded", "refusal"]
