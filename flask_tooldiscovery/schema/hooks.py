"""What the tool model tells the schema engine to treat specially, so that the engine imports no
layer above it: the types of parameters that are injected rather than described (``ToolContext``:
:func:`inject`), and the rich values a tool may return (images, audio, files, links:
:func:`rich_values`), with their JSON form and their schemas. ``tools.model`` and
``tools.results`` register theirs when they are imported, which the package's face does first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class _NoRichValue:
    """Nothing is an instance of it: no rich values were registered."""


def _no_bytes(data: bytes, mime_type: str) -> Any:
    raise TypeError(f"bytes of {mime_type} cannot be sent as JSON: no rich values were registered")


def _no_schema(mime_type: str) -> dict[str, Any]:
    raise TypeError(f"no schema for bytes of {mime_type}: no rich values were registered")


@dataclass(frozen=True)
class RichValues:
    """The rich values a tool may return, as the schema engine needs them."""

    #: Their base class: an instance is sent as its ``to_json()``.
    base: type[Any] = _NoRichValue
    #: Bytes of a declared MIME type (a tool's ``result_mime_type``) as a rich value.
    from_bytes: Callable[[bytes, str], Any] = _no_bytes
    #: The output schema of a return annotation that is a rich value (``None``: it is not one);
    #: the second argument is the declared MIME type of returned bytes.
    schema_for_type: Callable[[Any, str | None], dict[str, Any] | None] = lambda tp, mime_type: None
    #: The output schema of bytes of a declared MIME type, for a function with no return annotation.
    schema_for_mime: Callable[[str], dict[str, Any]] = _no_schema


#: The types of parameters the caller's context is injected into (never shown in a schema).
INJECTED: list[type] = []
#: The rich values registered (the default knows none).
RICH = [RichValues()]


def inject(tp: type) -> None:
    """A parameter annotated ``tp`` (or ``tp | None``, ``Annotated[tp, ...]``) is injected, not described."""
    if tp not in INJECTED:
        INJECTED.append(tp)


def rich_values(values: RichValues) -> None:
    """The rich values a tool may return are ``values``."""
    RICH[0] = values


__all__ = ["INJECTED", "RICH", "RichValues", "inject", "rich_values"]
