"""How an MCP client calls tools over streamable HTTP: JSON-RPC ``tools/list`` and ``tools/call``
posted to the endpoint (stateless: no ``initialize`` needed first), the answer a JSON-RPC result
holding content blocks and ``structuredContent``, or a JSON-RPC error."""

from __future__ import annotations

from typing import Any

from ...settings import Settings
from ...tools.model import Tool
from ..content_blocks import observe_result
from ..driver import Driver, Observation, WireRequest, status_kind
from . import jsonrpc as rpc
from .approval import META_KEY

#: The kind of a JSON-RPC error code (``-32602`` is told apart by its message).
_CODE_KINDS = {rpc.INTERNAL_ERROR: "unavailable", rpc.PARSE_ERROR: "malformed"}


class McpDriver(Driver):
    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("POST", prefix or "/", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    def tool_names(self, body: Any) -> list[str]:
        return [t["name"] for t in body["result"]["tools"]]

    def call_path(self, prefix: str, name: str) -> str:
        return prefix or "/"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        name = tool if isinstance(tool, str) else tool.name
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}

    def read(self, status: int, body: Any) -> Observation:
        if not isinstance(body, dict):
            return Observation(status_kind(status))
        if isinstance(body.get("result"), dict):
            return observe_result(body["result"], wrapped=True)
        error = body["error"] if isinstance(body.get("error"), dict) else {}
        code, message = error.get("code"), str(error.get("message", ""))
        if status in (401, 403, 413, 415, 421):
            return Observation(status_kind(status), message=message)
        if code == rpc.INVALID_PARAMS:
            return Observation("unknown" if message.startswith("Unknown tool") else "invalid", message=message)
        kind = _CODE_KINDS.get(code, f"rpc {code}") if isinstance(code, int) else f"rpc {code}"
        return Observation(kind, message=message)

    def approval_state(self, body: Any) -> str | None:
        """A handshake-era refusal's ``_meta`` carries the sealed state (:data:`.approval.META_KEY`)."""
        result = body.get("result") if isinstance(body, dict) else None
        meta = result.get("_meta") if isinstance(result, dict) else None
        found = meta.get(META_KEY) if isinstance(meta, dict) else None
        state = found.get("approval_state") if isinstance(found, dict) else None
        return state if isinstance(state, str) else super().approval_state(body)



