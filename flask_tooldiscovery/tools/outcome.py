"""The outcome of one tool call, before any dialect has shaped it: :class:`Outcome` (success,
invalid arguments, or failure) and :class:`Failure` (how it failed, in words a client may see).
``runtime.invoke`` makes them; every dialect reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ToolError
from ..schema.argument_validation import ArgumentError, parameter_errors
from .model import Tool

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


__all__ = ["CANCELLED", "GENERIC_FAILURE", "Failure", "Outcome"]
