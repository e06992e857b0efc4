"""MCP ``CallToolResult``s: text and ``structuredContent`` for plain values, content blocks for rich
results (images, audio, files, resource links: :mod:`..results`), each in the form the caller's
protocol version knows, and the ``outputSchema`` a tool shows (none for rich results)."""

from __future__ import annotations

import functools
from typing import Any

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


#: The ``_meta`` key of what a result carries of the v2 envelope its tool returned.
ENVELOPE_META = "io.optimizely.opal/envelope"


def carry_envelope(outcome: Outcome, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the rest of the tool's v2 envelope (message, ui, operation, error,
    interaction) in ``_meta``, when it returned one (its content is the result's own)."""
    if not outcome.envelope:
        return result
    rest = {k: v for k, v in outcome.envelope.items() if k not in ("content", "content_type")}
    return {**result, "_meta": {**result.get("_meta", {}), ENVELOPE_META: rest}} if rest else result


__all__ = ["DEFAULT_VERSION", "ENVELOPE_META", "call_result", "carry_envelope", "forms_of", "object_output_schema"]
