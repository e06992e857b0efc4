"""What a tool call gives back: its :class:`Outcome` (success, invalid arguments, or a
:class:`Failure`), which ``runtime.invoke`` makes and every dialect reads, and the rich results a
tool may return: images, audio, files and links to resources.

A tool returns :class:`Image`, :class:`Audio`, :class:`File` or :class:`ResourceLink` (alone or in
a list with plain values), or plain ``bytes`` with ``@discovery.tool(result_mime_type=...)``. Every
dialect receives them in one canonical JSON form (:meth:`RichResult.to_json`)::

    {"type": "image" | "audio" | "file", "mimeType": "...", "data": "<base64>"}   (+ "name" for files)
    {"type": "resource_link", "uri": "...", "name": "...", "mimeType": "..."}

JSON dialects send it as is; MCP turns it into content blocks (``dialects/mcp_content.py``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..errors import ToolError
from ..schema.argument_validation import ArgumentError, parameter_errors
from ..schema.hooks import RichValues, rich_values
from .model import Tool

#: ``type/subtype`` (RFC 6838 names), optionally with parameters (``text/csv; charset=utf-8``).
_MIME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(\s*;.*)?$")
Kind = Literal["image", "audio", "file", "resource_link"]
KINDS: tuple[str, ...] = ("image", "audio", "file", "resource_link")


def mime_type_error(value: Any) -> str | None:
    """Why ``value`` is not a MIME type (``None`` when it is one)."""
    if not isinstance(value, str) or not _MIME.fullmatch(value.strip()) or "\n" in value or "\r" in value:
        return f"a MIME type is 'type/subtype' (such as 'image/png'), not {value!r}"
    return None


def _mime(value: Any) -> str:
    error = mime_type_error(value)
    if error is not None:
        raise ValueError(error)
    return str(value).strip()


def _bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, not {type(value).__name__}")
    return bytes(value)


class RichBlock(dict[str, Any]):
    """The canonical JSON form of one rich result: a plain ``dict`` for every JSON encoder, and
    recognisable by the dialects that have content blocks of their own (MCP), so that a tool's
    plain ``dict`` that merely looks alike is never taken for an image."""


class RichResult:
    """Base of the result types: ``to_json()`` gives the canonical form."""

    kind: ClassVar[Kind]

    def to_json(self) -> RichBlock:
        raise NotImplementedError


class _Media(RichResult):
    __slots__ = ("data", "mime_type")
    _family: ClassVar[str | None] = None

    def __init__(self, data: bytes, mime_type: str) -> None:
        self.data = _bytes(data)
        self.mime_type = _mime(mime_type)
        family = self._family
        if family is not None and not self.mime_type.lower().startswith(family + "/"):
            raise ValueError(f"{type(self).__name__} needs a {family}/* MIME type, not {self.mime_type!r}")

    def to_json(self) -> RichBlock:
        return RichBlock(type=self.kind, mimeType=self.mime_type, data=base64.b64encode(self.data).decode("ascii"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Media) and type(other) is type(self) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash((type(self), self.data, self.mime_type))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<{len(self.data)} bytes>, {self.mime_type!r})"


class Image(_Media):
    """An image a tool returns: ``Image(png_bytes, "image/png")``."""

    __slots__ = ()
    kind = "image"
    _family = "image"


class Audio(_Media):
    """Audio a tool returns: ``Audio(wav_bytes, "audio/wav")``."""

    __slots__ = ()
    kind = "audio"
    _family = "audio"


class File(_Media):
    """A file a tool returns, with an optional file ``name``: ``File(pdf, "application/pdf", "q3.pdf")``."""

    __slots__ = ("name",)
    kind = "file"

    def __init__(self, data: bytes, mime_type: str = "application/octet-stream", name: str | None = None) -> None:
        super().__init__(data, mime_type)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError("a file name is a non-empty string")
        self.name = name

    def to_json(self) -> RichBlock:
        block = super().to_json()
        if self.name is not None:
            block["name"] = self.name
        return block

    def __hash__(self) -> int:
        return hash((type(self), self.data, self.mime_type, self.name))


class ResourceLink(RichResult):
    """A link to a resource the client may read later (MCP ``resources/read``), instead of its bytes:
    ``ResourceLink("reports://42", "Report 42", mime_type="application/pdf")``."""

    __slots__ = ("description", "mime_type", "name", "uri")
    kind = "resource_link"

    def __init__(self, uri: str, name: str, mime_type: str | None = None, description: str | None = None) -> None:
        if not isinstance(uri, str) or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$", uri):
            raise ValueError(f"a resource link needs an absolute URI (scheme:...), not {uri!r}")
        if not isinstance(name, str) or not name:
            raise ValueError("a resource link needs a name")
        self.uri, self.name = uri, name
        self.mime_type = None if mime_type is None else _mime(mime_type)
        self.description = description

    def to_json(self) -> RichBlock:
        block = RichBlock(type=self.kind, uri=self.uri, name=self.name)
        if self.mime_type is not None:
            block["mimeType"] = self.mime_type
        if self.description:
            block["description"] = self.description
        return block

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceLink) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash((self.uri, self.name, self.mime_type, self.description))

    def __repr__(self) -> str:
        return f"ResourceLink({self.uri!r}, {self.name!r})"


def kind_of(mime_type: str) -> Kind:
    """What bytes of ``mime_type`` are: image/* an image, audio/* audio, anything else a file."""
    family = mime_type.split("/", 1)[0].strip().lower()
    return "image" if family == "image" else "audio" if family == "audio" else "file"


def from_bytes(data: bytes, mime_type: str) -> _Media:
    """``data`` as the result type its MIME type names (see :func:`kind_of`)."""
    return {"image": Image, "audio": Audio}.get(kind_of(mime_type), File)(data, mime_type)


def is_rich(value: Any) -> bool:
    """True for a canonical rich result, or a list holding at least one (what a dialect with
    content blocks shows as blocks rather than as JSON)."""
    return isinstance(value, RichBlock) or (isinstance(value, list) and any(isinstance(v, RichBlock) for v in value))


# -- output schemas -------------------------------------------------------------------------------

_WHAT = {"image": "An image", "audio": "Audio", "file": "A file", "resource_link": "A link to a resource"}


def schema_of(kind: Kind, mime_type: str | None = None) -> dict[str, Any]:
    """The JSON Schema of the canonical form of ``kind`` (``mime_type``: fixed, when known)."""
    mime: dict[str, Any] = {"type": "string"} if mime_type is None else {"type": "string", "const": mime_type}
    props: dict[str, Any] = {"type": {"type": "string", "const": kind}}
    if kind == "resource_link":
        props.update(uri={"type": "string", "format": "uri"}, name={"type": "string"}, mimeType=mime,
                     description={"type": "string"})
        required = ["type", "uri", "name"]
    else:
        data: dict[str, Any] = {"type": "string", "contentEncoding": "base64"}
        if mime_type is not None:
            data["contentMediaType"] = mime_type
        props.update(mimeType=mime, data=data)
        if kind == "file":
            props["name"] = {"type": "string"}
        required = ["type", "mimeType", "data"]
    return {"type": "object", "description": f"{_WHAT[kind]} (base64 data with its MIME type)."
            if kind != "resource_link" else f"{_WHAT[kind]} the client may read.",
            "properties": props, "required": required, "additionalProperties": False}


def schema_for_type(tp: Any, bytes_mime_type: str | None = None) -> dict[str, Any] | None:
    """The output schema of a return annotation that is a result type (or ``bytes`` when the tool
    declares the MIME type of its bytes), else ``None``."""
    if tp in (Image, Audio, File, ResourceLink):
        return schema_of(tp.kind)
    if tp is bytes and bytes_mime_type is not None:
        return schema_of(kind_of(bytes_mime_type), bytes_mime_type)
    return None


def is_rich_schema(schema: Any) -> bool:
    """True when values of ``schema`` are (or may be, or list) rich results: the schemas
    :func:`schema_of` writes, alone, in ``anyOf``/``oneOf`` or as array items."""
    if not isinstance(schema, Mapping):
        return False
    props = schema.get("properties")
    if isinstance(props, Mapping) and isinstance(props.get("type"), Mapping) \
            and props["type"].get("const") in KINDS and ("data" in props or "uri" in props):
        return True
    parts = [*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ()), schema.get("items")]
    return any(is_rich_schema(part) for part in parts)



# -- the outcome of a call -------------------------------------------------------------------------

GENERIC_FAILURE = "The tool failed with an unexpected error."
CANCELLED = "The call was cancelled."


@dataclass(frozen=True)
class Failure:
    """Why a tool call failed, in the words that may be shown to a client."""

    message: str
    developer_message: str | None = None
    can_retry: bool = False
    retry_after_ms: int | None = None
    additional_prompt_content: str | None = None
    #: True when the tool raised :class:`ToolError` on purpose.
    expected: bool = True
    #: True when the caller cancelled the call (the tool stopped, or was told to).
    cancelled: bool = False
    #: True when what the call names does not exist (``ToolError(not_found=True)``; a view offered
    #: as a tool answered 404): each dialect answers its own not-found.
    not_found: bool = False

    @classmethod
    def from_tool_error(cls, exc: ToolError) -> Failure:
        return cls(
            message=exc.message,
            developer_message=exc.developer_message,
            can_retry=exc.can_retry,
            retry_after_ms=exc.retry_after_ms,
            additional_prompt_content=exc.additional_prompt_content,
            not_found=exc.not_found,
        )


@dataclass(frozen=True)
class Outcome:
    """The result of one call, before any dialect has shaped it.

    ``status`` is ``"success"`` (``value`` holds the JSON-ready return value), ``"invalid"``
    (``errors`` says how the arguments fail the input schema; the tool did not run) or
    ``"failure"`` (the tool ran and failed; ``failure`` says how).
    """

    tool: Tool
    call_id: str
    status: Literal["success", "invalid", "failure"]
    value: Any = None
    failure: Failure | None = None
    errors: tuple[ArgumentError, ...] = ()
    duration_ms: float = 0.0
    #: The tool returned an :class:`~flask_tooldiscovery.tools.envelope.Envelope`: it as
    #: Opal's wire holds it (``value`` is its plain result; with an ``error``, the call
    #: failed and ``failure`` says so).
    envelope: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when the tool ran and succeeded."""
        return self.status == "success"

    @property
    def parameter_errors(self) -> dict[str, str]:
        """``{parameter: message}`` for invalid arguments."""
        return parameter_errors(self.errors)

    @property
    def error_message(self) -> str:
        """One readable sentence for dialects that carry a single message."""
        if self.status == "invalid":
            parts = [(f"{e.parameter}: " if e.parameter else "") + e.message.rstrip(".") for e in self.errors]
            return "Invalid arguments: " + "; ".join(parts) + "."
        if self.failure is not None:
            return self.failure.message
        return ""


rich_values(RichValues(base=RichResult, from_bytes=from_bytes, schema_for_type=schema_for_type,
                       schema_for_mime=lambda mime_type: schema_of(kind_of(mime_type), mime_type)))


__all__ = ["CANCELLED", "GENERIC_FAILURE", "KINDS", "Audio", "Failure", "File", "Image", "Outcome", "ResourceLink",
           "RichBlock", "RichResult", "from_bytes", "is_rich", "is_rich_schema", "kind_of", "mime_type_error",
           "schema_for_type", "schema_of"]
