"""How a TDP client calls tools: ``GET <prefix>/api/v1/tools`` lists them, ``POST
<prefix>/api/v1/tools/execute`` with ``{"tool_name", "arguments"}`` runs one; a value that is not an
object comes back as ``{"value": ...}``."""

from __future__ import annotations

from typing import Any

from ...settings import Settings
from ...tools.model import Tool
from ..driver import Driver, Observation, WireRequest, failed_kind, status_kind


class TdpDriver(Driver):
    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("GET", f"{prefix}/api/v1/tools")

    def tool_names(self, body: Any) -> list[str]:
        return [t["name"] for t in body["tools"]]

    def call_path(self, prefix: str, name: str) -> str:
        return f"{prefix}/api/v1/tools/execute"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        return {"tool_name": tool if isinstance(tool, str) else tool.name, "arguments": arguments}

    def read(self, status: int, body: Any) -> Observation:
        if status == 200 and isinstance(body, dict):
            result = body.get("result")
            unwrapped = [result["value"]] if isinstance(result, dict) and set(result) == {"value"} else []
            return Observation("ok", [*unwrapped, result])
        message = str((body.get("error") if body.get("success") is False else body.get("message")) or "") \
            if isinstance(body, dict) else ""
        if status == 400:
            return Observation("malformed" if message.startswith("Malformed JSON") else "invalid", message=message)
        if status == 404 and isinstance(body, dict) and body.get("code") == "not_found":
            return Observation("tool_error", message=message)  # the tool ran: what it names is not there
        return Observation(failed_kind(message) if status == 500 else status_kind(status), message=message)



