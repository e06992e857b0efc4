"""The client side of a dialect: a :class:`Driver` speaks it as its clients do.

A driver builds the wire request that lists the tools and the one that calls a tool, and reads the
wire answer back into an :class:`Observation`: what the call came to, in words every dialect
shares. ``flask tools check --replay`` runs each tool's examples through every mounted dialect's
driver and compares the observations; the conformance suite asks the same drivers its behaviours.
A dialect offers its driver in :attr:`.Dialect.driver`.

The kinds an observation may have:

``ok`` (the value), ``invalid`` (arguments the input schema refuses), ``malformed`` (a body that
is not the request the dialect reads), ``unknown`` (no such tool), ``tool_error`` (the tool's own
error), ``failure`` (an unexpected failure, told nothing more), ``refused`` (credentials, host,
content type), ``too_large``, ``needs_approval``, ``busy`` (rate limited), ``unavailable`` (the
tools could not be listed, or no call slot is free), and ``http NNN`` / ``rpc NNN`` for anything
else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..settings import Settings
from ..tools.model import Tool
from ..tools.results import GENERIC_FAILURE

#: The kind of an HTTP status that says the same in every dialect.
STATUS_KINDS = {401: "refused", 403: "refused", 404: "unknown", 413: "too_large", 415: "refused", 421: "refused",
                428: "needs_approval", 429: "busy", 503: "unavailable"}


@dataclass(frozen=True)
class WireRequest:
    """One request a client sends: ``json`` is the body of a ``POST`` (a ``GET`` has none)."""

    method: str
    path: str
    json: Any = None


@dataclass
class Observation:
    """What one dialect answered: its ``kind``, the values the answer may stand for (the canonical
    one first: a wire format may wrap a value so that several readings are fair), and the message
    of a refusal or error."""

    kind: str
    values: list[Any] = field(default_factory=list)
    message: str = ""

    @property
    def value(self) -> Any:
        """The value the answer carries (``None`` when it carries none)."""
        return self.values[0] if self.values else None


def status_kind(status: int) -> str:
    """The kind of an HTTP status that means the same in every dialect (``http NNN`` otherwise)."""
    return STATUS_KINDS.get(status, f"http {status}")


def failed_kind(message: str) -> str:
    """``failure`` for the core's words for an unexpected failure, else ``tool_error``."""
    return "failure" if message.startswith(GENERIC_FAILURE[:30]) else "tool_error"


def text_value(text: str) -> Any:
    """A text block's value: JSON when it parses, else the text itself (a string result)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def message_of(body: Any, key: str) -> str:
    """``body[key]`` as text, or ``""`` when the body is not an object that has it."""
    return str(body.get(key) or "") if isinstance(body, dict) else ""


class Driver:
    """How a client speaks one dialect mounted at ``prefix``; subclasses say how."""

    def list_tools(self, prefix: str) -> WireRequest:
        """The request that lists the tools."""
        raise NotImplementedError

    def tool_names(self, body: Any) -> list[str]:
        """The tool names a listing's JSON body holds."""
        raise NotImplementedError

    def call_path(self, prefix: str, name: str) -> str:
        """Where a call of tool ``name`` is posted."""
        raise NotImplementedError

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        """The JSON body of a call of ``tool`` (a registered :class:`Tool`, or just a name) with
        ``arguments``, as the dialect's clients write it for a server with these settings."""
        raise NotImplementedError

    def call_tool(self, prefix: str, tool: Tool | str, arguments: Any, settings: Settings) -> WireRequest:
        """The request that calls ``tool``."""
        name = tool if isinstance(tool, str) else tool.name
        return WireRequest("POST", self.call_path(prefix, name), self.call_body(tool, arguments, settings))

    def read(self, status: int, body: Any) -> Observation:
        """An answer's status and JSON body (``None`` when it had none) as an observation."""
        raise NotImplementedError

    def approval_state(self, body: Any) -> str | None:
        """The sealed state of a call that waits for a person's approval (sent back in
        ``X-Tool-Approval`` to run it), or ``None``: the 428 body's ``approval_state``."""
        state = body.get("approval_state") if isinstance(body, dict) else None
        return state if isinstance(state, str) else None


__all__ = ["STATUS_KINDS", "Driver", "Observation", "WireRequest", "failed_kind", "message_of", "status_kind",
           "text_value"]
