"""How Opal calls tools: ``GET <prefix>/discovery`` lists them as functions, ``POST
<prefix>/tools/<name>`` with ``{"parameters": {...}}`` runs one and answers its value bare."""

from __future__ import annotations

from typing import Any

from ...settings import Settings
from ...tools.model import Tool
from ..driver import Driver, Observation, WireRequest, failed_kind, message_of, status_kind


class OpalDriver(Driver):
    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("GET", f"{prefix}/discovery")

    def tool_names(self, body: Any) -> list[str]:
        return [f["name"] for f in body["functions"]]

    def call_path(self, prefix: str, name: str) -> str:
        return f"{prefix}/tools/{name}"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        return {"parameters": arguments}

    def read(self, status: int, body: Any) -> Observation:
        if status == 200:
            return Observation("ok", [body])
        message = message_of(body, "error")
        if status == 400:
            return Observation("invalid" if isinstance(body, dict) and "parameter_errors" in body else "malformed",
                               message=message)
        if status == 404 and not message.startswith("Tool not found:"):
            return Observation("tool_error", message=message)  # the tool ran: what it names is not there
        return Observation(failed_kind(message) if status == 500 else status_kind(status), message=message)



