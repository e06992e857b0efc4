"""MCP ``CallToolResult``s: text and ``structuredContent`` for plain values, content blocks for rich
results (images, audio, files, resource links: :mod:`..results`), each in the form the caller's
protocol version knows, and the ``outputSchema`` a tool shows (none for rich results)."""

from __future__ import annotations

import functools
from typing import Any

from flask.json.provider import DefaultJSONProvider

from ...serving import wire
from ...tools.model import Tool
from ...tools.results import Outcome, is_rich, is_rich_schema
from ..content_blocks import PLAIN_VALUES, Forms, content_blocks, json_text
from . import revisions

#: The version a request speaks when it names none (the streamable HTTP transport's rule).
DEFAULT_VERSION = revisions.DEFAULT


@functools.lru_cache(maxsize=32)
def forms_of(version: str) -> Forms:
    """The content blocks a caller speaking ``version`` knows (:mod:`.revisions` says)."""
    return Forms(audio=revisions.has_audio_content(version), links=revisions.has_resource_links(version))


def object_output_schema(tool: Tool) -> tuple[dict[str, Any] | None, bool]:
    """(MCP ``outputSchema``, wrapped?). MCP output schemas are object schemas: any other
    declared output is wrapped as ``{"result": ...}``, as the official SDK does. A tool returning
    rich results has none: they travel as content blocks, never as ``structuredContent``.
    Worked out once per tool content (a tool changed since is looked at anew; shared: never
    mutate it)."""
    derived = tool._derived  # (emptied when a shown field of the tool is assigned)
    found: tuple[dict[str, Any] | None, bool] | None = derived.get(_OUTPUT_SCHEMA)
    if found is None:
        found = derived[_OUTPUT_SCHEMA] = _object_output_schema(tool)
    return found


#: The key of a tool's MCP output schema in what it works out once from its content (``Tool._derived``).
_OUTPUT_SCHEMA = "mcp.output_schema"


def _object_output_schema(tool: Tool) -> tuple[dict[str, Any] | None, bool]:
    schema = tool.output_schema
    if not schema or is_rich_schema(schema):
        return None, False
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True


def call_result(outcome: Outcome, version: str) -> dict[str, Any]:
    """A ``CallToolResult``: text content, ``structuredContent`` for structured values, content
    blocks (and no ``structuredContent``) for rich results, and ``isError`` with an actionable
    message for failures and invalid arguments. Content blocks take the form ``version`` (the
    caller's protocol version) knows."""
    if outcome.status != "success":  # (not outcome.ok)
        text = outcome.error_message
        if outcome.failure is not None and outcome.failure.additional_prompt_content:
            text = f"{text}\n{outcome.failure.additional_prompt_content}"
        if outcome.status == "invalid":
            text += "\nCorrect the arguments to match the tool's input schema and call it again."
        return carry_envelope(outcome, {"content": [{"type": "text", "text": text}], "isError": True})
    value = outcome.value
    if type(value) in PLAIN_VALUES:  # one text block (the JSON of anything but a string)
        result: dict[str, Any] = {"content": [{"type": "text", "text": value if type(value) is str
                                               else json_text(value)}], "isError": False}
    else:
        result = {"content": content_blocks(value, forms_of(version)), "isError": False}
        if is_rich(value):
            return carry_envelope(outcome, result)
    found = outcome.tool._derived.get(_OUTPUT_SCHEMA)  # (object_output_schema, as the tool keeps it)
    schema, wrapped = found if found is not None else object_output_schema(outcome.tool)
    if wrapped or (isinstance(value, list) and schema is None):
        result["structuredContent"] = {"result": value}
    elif isinstance(value, dict):
        result["structuredContent"] = value
    return carry_envelope(outcome, result) if outcome.envelope else result


class PlainResult(dict[str, Any]):
    """A plain call's ``CallToolResult`` of a dict value (:func:`plain_result`): a dict as
    :func:`call_result` makes it, which also knows its text block's ``text`` (``json_text`` of the
    value, its ``structuredContent``)."""

    __slots__ = ("text",)
    text: str


def plain_result(outcome: Outcome, version: str) -> dict[str, Any]:
    """:func:`call_result` of a plain call; a :class:`PlainResult` when it holds a dict value as its
    text block and as ``structuredContent`` (nothing else), which :func:`plain_reply` writes once."""
    result = call_result(outcome, version)
    value = outcome.value
    if type(value) is not dict or len(result) != 3 or result.get("structuredContent") is not value:
        return result
    plain = PlainResult(result)
    plain.text = result["content"][0]["text"]
    return plain


def plain_reply(reply: Any, provider: Any) -> bytes | None:
    """The bytes ``wire.dumps`` writes of a JSON-RPC ``reply`` whose result is a :class:`PlainResult`
    (``None`` for any other reply), the value's JSON written once, not twice (its text block, then
    again as ``structuredContent``: about 2% of an MCP call, timed side by side). Flask's default
    provider writes with the separators ``": "`` and ``", "`` (:func:`.wire.json_encoder`), as the
    text block does; with ``ensure_ascii`` (its default) it escapes what the text block keeps as it
    is (``ensure_ascii=False``): anything past ASCII, and DEL. Any other text, id or provider: the
    reply dumped whole (the result as a plain dict)."""
    result = reply.get("result") if type(reply) is dict else None
    if type(result) is not PlainResult:
        return None
    text, id_ = result.text, reply["id"]
    if type(provider) is DefaultJSONProvider and len(reply) == 3 and (type(id_) is str or type(id_) is int) and (
            not provider.ensure_ascii or (text.isascii() and "\x7f" not in text)):
        quote = wire.QUOTE[bool(provider.ensure_ascii)]  # (as the provider writes a str)
        return "".join(('{"jsonrpc": "2.0", "id": ', quote(id_) if type(id_) is str else int.__repr__(id_),
                        ', "result": {"content": [{"type": "text", "text": ', quote(text),
                        '}], "isError": false, "structuredContent": ', text, "}}")).encode("utf-8")
    return wire.dumps({**reply, "result": dict(result)}, provider).encode("utf-8")


#: The ``_meta`` key of what a result carries of the v2 envelope its tool returned.
ENVELOPE_META = "io.optimizely.opal/envelope"


def carry_envelope(outcome: Outcome, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the rest of the tool's v2 envelope (message, ui, operation, error,
    interaction) in ``_meta``, when it returned one (its content is the result's own)."""
    if not outcome.envelope:
        return result
    rest = {k: v for k, v in outcome.envelope.items() if k not in ("content", "content_type")}
    return {**result, "_meta": {**result.get("_meta", {}), ENVELOPE_META: rest}} if rest else result


__all__ = ["DEFAULT_VERSION", "ENVELOPE_META", "PlainResult", "call_result", "carry_envelope", "forms_of",
           "object_output_schema", "plain_reply", "plain_result"]
