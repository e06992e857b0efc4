"""MCP ``CallToolResult``s: text and ``structuredContent`` for plain values, content blocks for rich
results (images, audio, files, resource links: :mod:`..results`), each in the form the caller's
protocol version knows, and the ``outputSchema`` a tool shows (none for rich results)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from flask import has_request_context, request

from ..invoke import Outcome
from ..results import RichBlock, is_rich, is_rich_schema
from ..tool import Tool

#: The version a request speaks when it names none (the streamable HTTP transport's rule).
DEFAULT_VERSION = "2025-03-26"
#: The newest content blocks (what the explorer, which speaks no version, shows).
LATEST = "2026-07-28"
#: ``AudioContent`` exists from this version on; before it audio is an embedded resource.
AUDIO_SINCE = "2025-03-26"
#: ``ResourceLink`` content exists from this version on; before it a link is an embedded ``text/uri-list``.
LINKS_SINCE = "2025-06-18"
#: Where a 2026-07-28 request names its protocol version, in ``params._meta``.
VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"


def client_version(meta: Mapping[str, Any] | None = None) -> str:
    """The protocol version of the request being answered: its ``MCP-Protocol-Version`` header,
    else its 2026-07-28 ``_meta`` envelope, else :data:`DEFAULT_VERSION`."""
    header = request.headers.get("MCP-Protocol-Version") if has_request_context() else None
    given = (meta or {}).get(VERSION_META_KEY)
    return header or (given if isinstance(given, str) else None) or DEFAULT_VERSION


def object_output_schema(tool: Tool) -> tuple[dict[str, Any] | None, bool]:
    """(MCP ``outputSchema``, wrapped?). MCP output schemas are object schemas: any other
    declared output is wrapped as ``{"result": ...}``, as the official SDK does. A tool returning
    rich results has none: they travel as content blocks, never as ``structuredContent``."""
    schema = tool.output_schema
    if not schema or is_rich_schema(schema):
        return None, False
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True


def _embedded_uri(block: Mapping[str, Any]) -> str:
    """The URI of an embedded file (as FastMCP writes them): ``file:///`` and its name, else its
    kind with its MIME subtype as extension (``file:///audio.wav``)."""
    subtype = str(block["mimeType"]).split(";")[0].split("/")[-1].split("+")[0].strip().removeprefix("x-")
    return "file:///" + quote(str(block.get("name") or f"{block['type']}.{subtype}"))


def _text(value: Any) -> dict[str, Any]:
    return {"type": "text", "text": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}


def content_block(value: Any, version: str = LATEST) -> dict[str, Any]:
    """One content block: a rich result's own (in the form ``version`` knows), else text."""
    if not isinstance(value, RichBlock):
        return _text(value)
    kind = value["type"]
    if kind == "image" or (kind == "audio" and version >= AUDIO_SINCE):
        return {"type": kind, "data": value["data"], "mimeType": value["mimeType"]}
    if kind == "resource_link":
        if version >= LINKS_SINCE:
            return dict(value)
        return {"type": "resource", "resource": {"uri": value["uri"], "mimeType": "text/uri-list",
                                                 "text": value["uri"]}}
    return {"type": "resource", "resource": {"uri": _embedded_uri(value), "mimeType": value["mimeType"],
                                             "blob": value["data"]}}


def content_blocks(value: Any, version: str = LATEST) -> list[dict[str, Any]]:
    """A result value's content: one block per item of a list holding rich results, else one."""
    if isinstance(value, list) and is_rich(value):
        return [content_block(item, version) for item in value]
    return [content_block(value, version)]


def rich_value(content: Any) -> Any:
    """What a tool returned, read back from content blocks holding rich results (the canonical
    form, a list when there were several blocks); ``None`` when they hold only text. A link sent
    as an embedded ``text/uri-list`` (before 2025-06-18) cannot be read back whole."""
    if not isinstance(content, list) or all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return None
    values = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        resource = block.get("resource") if isinstance(block, dict) else None
        if kind in ("image", "audio"):
            values.append({"type": kind, "mimeType": block.get("mimeType"), "data": block.get("data")})
        elif kind == "resource_link":
            values.append({k: v for k, v in block.items() if k != "_meta"})
        elif kind == "resource" and isinstance(resource, dict) and "blob" in resource:
            uri, mime = resource.get("uri"), str(resource.get("mimeType"))
            file = {"type": "file", "mimeType": mime, "data": resource.get("blob")}
            if mime.startswith("audio/") and uri == _embedded_uri({"type": "audio", "mimeType": mime}):
                file["type"] = "audio"  # audio embedded for a 2024-11-05 caller
            elif uri != _embedded_uri(file):  # named
                file["name"] = unquote(str(uri).removeprefix("file:///"))
            values.append(file)
        else:
            values.append(block.get("text") if kind == "text" else block)
    return values[0] if len(values) == 1 else values


def call_result(outcome: Outcome, version: str | None = None) -> dict[str, Any]:
    """A ``CallToolResult``: text content, ``structuredContent`` for structured values, content
    blocks (and no ``structuredContent``) for rich results, and ``isError`` with an actionable
    message for failures and invalid arguments. Content blocks take the form ``version`` knows
    (default: the version of the request being answered, :func:`client_version`)."""
    if not outcome.ok:
        text = outcome.error_message
        if outcome.failure is not None and outcome.failure.additional_prompt_content:
            text = f"{text}\n{outcome.failure.additional_prompt_content}"
        if outcome.status == "invalid":
            text += "\nCorrect the arguments to match the tool's input schema and call it again."
        return {"content": [{"type": "text", "text": text}], "isError": True}
    value = outcome.value
    result: dict[str, Any] = {"content": content_blocks(value, version or client_version()), "isError": False}
    if is_rich(value):
        return result
    schema, wrapped = object_output_schema(outcome.tool)
    if wrapped or (isinstance(value, list) and schema is None):
        result["structuredContent"] = {"result": value}
    elif isinstance(value, dict):
        result["structuredContent"] = value
    return result


__all__ = [
    "VERSION_META_KEY", "call_result", "client_version", "content_block", "content_blocks", "object_output_schema",
    "rich_value",
]
