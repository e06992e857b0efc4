"""How the explorer page calls tools: ``GET <prefix>/tools`` lists them, ``POST
<prefix>/tools/<name>/call`` with the arguments as the body runs one and answers an MCP-shaped
result (400 for invalid arguments, 500 when the tool failed)."""

from __future__ import annotations

from typing import Any

from ...settings import Settings
from ...tools.model import Tool
from ..content_blocks import observe_result
from ..driver import Driver, Observation, WireRequest, message_of, status_kind


class ExplorerDriver(Driver):
    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("GET", f"{prefix}/tools")

    def tool_names(self, body: Any) -> list[str]:
        return [t["name"] for t in body]

    def call_path(self, prefix: str, name: str) -> str:
        return f"{prefix}/tools/{name}/call"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        return arguments

    def read(self, status: int, body: Any) -> Observation:
        if isinstance(body, dict) and "isError" in body:
            observed = observe_result(body, wrapped=False)
            if status == 400 and observed.kind != "ok":
                observed.kind = "invalid"
            return observed
        kind = "malformed" if status == 400 else status_kind(status)
        return Observation(kind, message=message_of(body, "error"))



