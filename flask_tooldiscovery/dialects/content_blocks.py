"""Content blocks: a tool's value as the list of typed blocks (text, image, audio, embedded
resource, resource link) that MCP results carry and the explorer's MCP-shaped API shows, each in the
form its reader knows (:class:`Forms`: MCP works them out from a request's revision, in
:mod:`.mcp.revisions`), and read back into the canonical value. A wire shape two dialects share, as
:mod:`.jsonrpc` is framing: neither dialect imports the other for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from ..serving.wire import json_encoder
from ..tools.results import RichBlock, is_rich
from .driver import Observation, failed_kind, text_value


@dataclass(frozen=True)
class Forms:
    """The content blocks a reader knows: ``AudioContent`` (``audio``; without it audio is an
    embedded resource) and ``ResourceLink`` (``links``; without it a link is an embedded
    ``text/uri-list``)."""

    audio: bool = True
    links: bool = True


#: The newest content blocks (what the explorer, which speaks no version, shows).
LATEST = Forms()


def _embedded_uri(block: Mapping[str, Any]) -> str:
    """The URI of an embedded file (as FastMCP writes them): ``file:///`` and its name, else its
    kind with its MIME subtype as extension (``file:///audio.wav``)."""
    subtype = str(block["mimeType"]).split(";")[0].split("/")[-1].split("+")[0].strip().removeprefix("x-")
    return "file:///" + quote(str(block.get("name") or f"{block['type']}.{subtype}"))


def _text(value: Any) -> dict[str, Any]:
    return {"type": "text", "text": value if isinstance(value, str) else json_text(value)}


#: Values that are never rich results whatever they hold (a rich result is a ``RichBlock``, or a
#: list holding one): their content is one text block, the value itself for a string, else
#: :data:`json_text` of it (what :func:`content_blocks` makes, worked out without looking further).
PLAIN_VALUES = frozenset({dict, str, int, float, bool, type(None)})

#: What a text block holds of a value that is not a string: ``json.dumps(value, ensure_ascii=False)``,
#: its encoder made once (json.dumps makes one per call).
json_text = json_encoder(ensure_ascii=False)


def content_block(value: Any, forms: Forms = LATEST) -> dict[str, Any]:
    """One content block: a rich result's own (in the form its reader knows, ``forms``), else text."""
    if not isinstance(value, RichBlock):
        return _text(value)
    kind = value["type"]
    if kind == "image" or (kind == "audio" and forms.audio):
        return {"type": kind, "data": value["data"], "mimeType": value["mimeType"]}
    if kind == "resource_link":
        if forms.links:
            return dict(value)
        return {"type": "resource", "resource": {"uri": value["uri"], "mimeType": "text/uri-list",
                                                 "text": value["uri"]}}
    return {"type": "resource", "resource": {"uri": _embedded_uri(value), "mimeType": value["mimeType"],
                                             "blob": value["data"]}}


def content_blocks(value: Any, forms: Forms = LATEST) -> list[dict[str, Any]]:
    """A result value's content: one block per item of a list holding rich results, else one."""
    if isinstance(value, list) and is_rich(value):
        return [content_block(item, forms) for item in value]
    return [content_block(value, forms)]


def rich_value(content: Any) -> Any:
    """What a tool returned, read back from content blocks holding rich results (the canonical
    form, a list when there were several blocks); ``None`` when they hold only text. A link sent
    as an embedded ``text/uri-list`` (a reader without ``ResourceLink``) cannot be read back whole."""
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
                file["type"] = "audio"  # audio embedded for a caller without AudioContent
            elif uri != _embedded_uri(file):  # named
                file["name"] = unquote(str(uri).removeprefix("file:///"))
            values.append(file)
        else:
            values.append(block.get("text") if kind == "text" else block)
    return values[0] if len(values) == 1 else values


def observe_result(result: Mapping[str, Any], *, wrapped: bool) -> Observation:
    """An MCP-shaped result (``content``, ``structuredContent``, ``isError``) as a client reads it.
    ``wrapped``: a value that is not an object travels as ``{"result": value}`` in
    ``structuredContent`` (MCP's rule; the explorer sends objects and lists as they are). Every
    reading of a success is kept: the structured value (unwrapped or not), the text, its JSON, the
    rich value of non-text blocks."""
    content = result.get("content") or []
    text = "".join(c.get("text", "") for c in content if isinstance(c, dict))
    if result.get("isError"):
        if text.startswith("Invalid arguments"):
            return Observation("invalid", message=text)
        if "needs approval before it runs" in text:  # a client that cannot be asked (MCP's handshake era)
            return Observation("needs_approval", message=text)
        return Observation(failed_kind(text), message=text)
    values: list[Any] = []
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        inner = [structured["result"]] if set(structured) == {"result"} else []
        values += [*inner, structured] if wrapped else [structured, *inner]
    rich = rich_value(content)
    values += [text_value(text) if rich is None else rich, text]
    return Observation("ok", values)


__all__ = ["LATEST", "PLAIN_VALUES", "Forms", "content_block", "content_blocks", "json_text", "observe_result",
           "rich_value"]
