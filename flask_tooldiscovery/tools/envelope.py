"""The response envelope a tool may return (Opal's v2 ``ComposableToolResponse``): a result that
says more than its value.

``Envelope(message=..., content=..., ui=..., operation=..., error=..., interaction=...)``; at
least one of them. Opal receives it as the official SDK sends it (:meth:`Envelope.to_wire`,
``application/vnd.optimizely.opal.tools+json``, HTTP 200 even when it carries an error). Every
other dialect receives the plain result (:attr:`Envelope.value`: ``content``, else ``message``)
plus what its wire can carry of the rest (MCP: ``_meta``); an envelope with an ``error`` is a
failed call in every dialect, its message the problem's ``detail`` (else ``title``).

- ``operation``: ``{"operation_id", "status": "completed"|"pending"|"failed", "rollback":
  {"tool_name", "parameters", "resource_type"?}, "affected_objects"?}``: what changed, and how to
  undo it (``tool_name``: the rollback's name, as discovery lists it).
- ``error``: an RFC 9457 problem: ``{"title", "status", "detail"?, "error_code"?, "retry_after"?,
  "instance"?}`` (``type`` defaults to ``about:blank``).
- ``interaction``: ``{"status": "waiting", "reason"?}``: pause the agent on this call.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FIELDS = ("message", "content", "ui", "operation", "error", "interaction")
OPERATION_STATES = frozenset({"completed", "pending", "failed"})


@dataclass(frozen=True)
class Envelope:
    """A tool's result with a message, UI, an operation and its rollback, an error, or a pause."""

    message: str | None = None
    content: Any = None
    ui: Any = None
    operation: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    interaction: Mapping[str, Any] | None = None
    #: The MIME type of ``content`` (``application/json`` when content is set and this is not).
    content_type: str | None = None

    def __post_init__(self) -> None:
        if all(getattr(self, name) is None for name in FIELDS):
            raise ValueError(f"an Envelope needs one of {', '.join(FIELDS)}")
        if self.message is not None and not isinstance(self.message, str):
            raise ValueError("Envelope.message must be a string")
        operation = self.operation
        if operation is not None and (not isinstance(operation, Mapping) or not operation.get("operation_id")
                                      or operation.get("status") not in OPERATION_STATES):
            raise ValueError("Envelope.operation needs an operation_id and a status (completed, pending, failed)")
        rollback = (operation or {}).get("rollback")
        if rollback is not None and (not isinstance(rollback, Mapping) or not rollback.get("tool_name")
                                     or not isinstance(rollback.get("parameters", {}), Mapping)):
            raise ValueError("Envelope.operation's rollback needs a tool_name and parameters (an object)")
        error = self.error
        if error is not None and (not isinstance(error, Mapping) or not error.get("title")
                                  or not isinstance(error.get("status"), int)):
            raise ValueError("Envelope.error needs a title and an HTTP status (a problem, RFC 9457)")
        if self.interaction is not None and (not isinstance(self.interaction, Mapping)
                                             or self.interaction.get("status") != "waiting"):
            raise ValueError("Envelope.interaction's status must be 'waiting'")

    @property
    def value(self) -> Any:
        """The plain result, for wires without an envelope: ``content``, else ``message``."""
        return self.content if self.content is not None else self.message

    @property
    def error_message(self) -> str | None:
        """The error's sentence (its ``detail``, else its ``title``), or ``None`` without an error."""
        if self.error is None:
            return None
        return str(self.error.get("detail") or self.error["title"])

    def to_wire(self, jsonable: Any = None) -> dict[str, Any]:
        """The envelope as the official SDK sends it (``None`` fields left out); ``jsonable``: what
        turns ``content`` and ``ui`` into JSON values."""
        convert = jsonable or (lambda value: value)
        out: dict[str, Any] = {}
        if self.message is not None:
            out["message"] = self.message
        if self.content is not None:
            out["content"] = convert(self.content)
        if self.ui is not None:
            out["ui"] = convert(self.ui)
        if self.operation is not None:
            out["operation"] = convert(dict(self.operation))
        if self.error is not None:
            out["error"] = {"type": "about:blank", **convert(dict(self.error))}
        if self.interaction is not None:
            out["interaction"] = convert(dict(self.interaction))
        if self.content is not None:
            out["content_type"] = self.content_type or "application/json"
        return out


def return_annotation(func: Callable[..., Any]) -> Any:
    """What ``func`` says it returns (resolved when it can be; else as written)."""
    try:
        return typing.get_type_hints(func).get("return")
    except Exception:  # a forward reference that cannot be resolved here
        try:
            return inspect.signature(func).return_annotation
        except (TypeError, ValueError):
            return None


def returns_envelope(annotation: Any) -> bool:
    """True when a return annotation is :class:`Envelope` (or a union holding it)."""
    if annotation is Envelope or annotation == "Envelope":
        return True
    return any(arg is Envelope for arg in getattr(annotation, "__args__", ()) or ())


__all__ = ["Envelope", "return_annotation", "returns_envelope"]
