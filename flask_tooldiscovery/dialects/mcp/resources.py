"""MCP resources, when ``TOOLDISCOVERY_MCP_RESOURCES`` is on: the ``resources`` capability and the
``resources/list``, ``resources/templates/list`` and ``resources/read`` methods over the resources
the app registered with ``@discovery.resource`` (:mod:`..resources`). Reads run the app's function
with the caller's :class:`~..tool.ToolContext`; nothing a tool returned is kept, so any worker
answers any read (a :class:`~..results.ResourceLink` names a resource the app can read again)."""

from __future__ import annotations

import json
from typing import Any

from ...catalog import Resource
from ...errors import NoSuchResource
from ...serving.pipeline import Pipeline
from ...settings import Settings
from ...tools.model import ToolError
from ...tools.results import File, RichResult
from . import jsonrpc as rpc
from . import revisions
from .asking import asking
from .request import Handler, McpRequest
from .settings import McpSettings

METHODS = ("resources/list", "resources/templates/list", "resources/read")
#: "Resource not found" in the handshake era; the stateless era answers -32602 (SEP-2164), as the
#: official SDK does. Both carry the URI in ``data``.
RESOURCE_NOT_FOUND = -32002


def not_found(req: McpRequest, uri: str) -> rpc.RpcError:
    """The refusal of an unknown resource ``uri``, in the code ``req``'s revision uses."""
    code = rpc.INVALID_PARAMS if revisions.not_found_is_invalid_params(req.revision) else RESOURCE_NOT_FOUND
    return rpc.RpcError(code, "Resource not found", {"uri": uri})


def capability(settings: Settings) -> dict[str, Any]:
    """The ``resources`` capability when resources are served (no subscriptions, no list changes)."""
    return {"resources": {"subscribe": False, "listChanged": False}} if McpSettings.of(settings).resources else {}


def _described(resource: Resource, entry: dict[str, Any]) -> dict[str, Any]:
    for key, value in (("title", resource.title), ("description", resource.description),
                       ("mimeType", resource.mime_type)):
        if value:
            entry[key] = value
    if resource.icons:
        entry["icons"] = [dict(icon) for icon in resource.icons]
    return entry


def contents(uri: str, value: Any, mime_type: str | None) -> dict[str, Any]:
    """One read's contents: bytes (and images, audio, files) as base64 ``blob``, text as ``text``,
    other values as JSON text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = File(bytes(value), mime_type or "application/octet-stream")
    if isinstance(value, RichResult):
        block = value.to_json()
        if "data" not in block:
            raise TypeError("a resource reads as bytes, text, JSON or an Image/Audio/File, not a link")
        return {"uri": uri, "mimeType": block["mimeType"], "blob": block["data"]}
    if isinstance(value, str):
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": value}
    return {"uri": uri, "mimeType": mime_type or "application/json", "text": json.dumps(value, ensure_ascii=False)}


def methods(pipe: Pipeline) -> dict[str, Handler]:
    """The resources methods for the MCP method table (none unless resources are on)."""
    if not McpSettings.of(pipe.settings).resources:
        return {}
    registry = pipe.core.resources

    def list_resources(req: McpRequest) -> dict[str, Any]:
        return {"resources": [_described(r, {"uri": r.uri, "name": r.name})
                              for r in registry.visible_to(pipe.identity) if not r.is_template]}

    def list_templates(req: McpRequest) -> dict[str, Any]:
        return {"resourceTemplates": [_described(r, {"uriTemplate": r.uri, "name": r.name})
                                      for r in registry.visible_to(pipe.identity) if r.is_template]}

    def read(req: McpRequest) -> dict[str, Any]:
        uri = req.params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "resources/read needs params.uri (a string).")
        try:
            resource, arguments = registry.find(uri, pipe.identity)
            read = asking(pipe, req, resource.uri, {"uri": uri},
                          lambda context: resource.read(uri, arguments, context), f"Resource {uri!r}", {"uri": uri})
        except NoSuchResource:
            raise not_found(req, uri) from None
        except ToolError as exc:  # the app's own refusal, in its words
            raise rpc.RpcError(rpc.INTERNAL_ERROR, exc.message, {"uri": uri}) from None
        if isinstance(read, dict):  # the InputRequiredResult of a reader that asks its caller
            return read
        return {"contents": [contents(uri, read.value, resource.mime_type)]}

    return {"resources/list": list_resources, "resources/templates/list": list_templates, "resources/read": read}


__all__ = ["METHODS", "RESOURCE_NOT_FOUND", "capability", "methods", "not_found"]
