"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension, SEP-1865) for tools with an interface
(``@discovery.tool(ui=...)``, :mod:`...catalog.ui`): the extension declared, each such tool's
``_meta.ui`` (``resourceUri``, ``visibility``), and its ``ui://`` resource in ``resources/list``
and ``resources/read`` (HTML of type ``text/html;profile=mcp-app`` with its ``_meta.ui``: csp,
permissions), beside the app's own resources when ``TOOLDISCOVERY_MCP_RESOURCES`` serves them.

Tools with ``visibility=["app"]`` are listed, and called, only by clients that declared the extension
(:func:`reaches`): the spec has their host keep such tools from the model and let only the interface
call them. A client that did not declare it has no interface to call them and no host that would
hide them, so to it they are unknown tools, as hidden ones are.

A tool's ``_meta.ui`` and the ``ui://`` entries of ``resources/list`` go only to clients that
declared the extension (:func:`shows_ui`): at ``initialize`` (its session id says so) or in a
stateless-era request's envelope, ``{"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes":
["text/html;profile=mcp-app"]}}}``. A ``ui://`` resource is read for any client that names it."""

from __future__ import annotations

from typing import Any

from flask import current_app

from ...catalog import MIME_TYPE, UI, render, resources_of, ui_of, visibility_of
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from . import jsonrpc as rpc
from .request import Handler, McpRequest
from .resources import not_found

EXTENSION = "io.modelcontextprotocol/ui"
#: The flat key hosts read before ``_meta.ui.resourceUri`` (deprecated, still sent by the SDK's helper).
LEGACY_URI_KEY = "ui/resourceUri"


def tool_meta(tool: Tool) -> dict[str, Any] | None:
    """A tool's ``_meta`` in ``tools/list``: ``ui.resourceUri`` and ``ui.visibility`` (``None``
    for a tool with neither)."""
    ui, visibility = ui_of(tool), visibility_of(tool)
    if ui is None and visibility is None:
        return None
    meta: dict[str, Any] = {}
    if ui is not None:
        meta["resourceUri"] = ui.resource_uri
    if visibility is not None:
        meta["visibility"] = list(visibility)
    return {"ui": meta, LEGACY_URI_KEY: ui.resource_uri} if ui is not None else {"ui": meta}


def shows_ui(req: McpRequest) -> bool:
    """Whether the request's client declared MCP Apps, so it is sent tools' interfaces."""
    return req.declares_extension(EXTENSION)


def reaches(req: McpRequest, tool: Tool) -> bool:
    """Whether the request's client is listed ``tool`` and may call it: any tool the model may
    see; one only an interface calls (``visibility=["app"]``) only when it declared MCP Apps."""
    return tool.model_visible or shows_ui(req)


def without_ui(entry: dict[str, Any]) -> dict[str, Any]:
    """A ``tools/list`` entry without its MCP Apps metadata, for a client that did not declare them."""
    meta = entry.get("_meta")
    if not isinstance(meta, dict) or not ({"ui", LEGACY_URI_KEY} & meta.keys()):
        return entry
    rest = {k: v for k, v in meta.items() if k not in ("ui", LEGACY_URI_KEY)}
    return {**{k: v for k, v in entry.items() if k != "_meta"}, **({"_meta": rest} if rest else {})}


def capabilities(pipe: Pipeline, offered: dict[str, Any]) -> dict[str, Any]:
    """``offered`` with the extension declared (and ``resources``, which hosts read interfaces
    with) when a registered tool has an interface; unchanged otherwise."""
    if not resources_of(pipe.core.registry.registered):
        return offered
    return {**offered, "resources": offered.get("resources") or {"subscribe": False, "listChanged": False},
            "extensions": {**offered.get("extensions", {}), EXTENSION: {}}}


def _entry(ui: UI) -> dict[str, Any]:
    entry: dict[str, Any] = {"uri": ui.resource_uri, "name": ui.resource_name, "mimeType": MIME_TYPE}
    if ui.description:
        entry["description"] = ui.description
    meta = ui.wire_meta()
    return {**entry, "_meta": {"ui": meta}} if meta else entry


def methods(pipe: Pipeline, base: dict[str, Handler]) -> dict[str, Handler]:
    """The resources methods of ``base`` (the app's resources, possibly none) with the interfaces of
    the tools this caller may see added; ``base`` as it is when no registered tool has one."""
    if not resources_of(pipe.core.registry.registered):
        return base
    base_list, base_read = base.get("resources/list"), base.get("resources/read")

    def interfaces() -> dict[str, UI]:
        return resources_of(pipe.tools().latest())

    def list_resources(req: McpRequest) -> dict[str, Any]:
        listed = base_list(req) if base_list is not None else {}
        own = listed.get("resources", []) if isinstance(listed, dict) else []
        shown = interfaces().values() if shows_ui(req) else ()
        return {"resources": [*own, *(_entry(ui) for ui in shown)]}

    def read(req: McpRequest) -> rpc.Result:
        uri = req.params.get("uri")
        ui = interfaces().get(uri) if isinstance(uri, str) else None
        if ui is None:
            if base_read is not None:
                return base_read(req)
            if not isinstance(uri, str) or not uri:
                raise rpc.RpcError(rpc.INVALID_PARAMS, "resources/read needs params.uri (a string).")
            raise not_found(req, uri)
        # A template failing here is logged with its trace by the method table; the caller is told
        # "Internal error." only.
        html = render(current_app._get_current_object(), ui, pipe.tools().latest())  # type: ignore[attr-defined]
        content: dict[str, Any] = {"uri": ui.resource_uri, "mimeType": MIME_TYPE, "text": html}
        meta = ui.wire_meta()
        return {"contents": [{**content, "_meta": {"ui": meta}} if meta else content]}

    added: dict[str, Handler] = {"resources/list": list_resources, "resources/read": read}
    if "resources/templates/list" not in base:
        added["resources/templates/list"] = lambda req: {"resourceTemplates": []}
    return {**base, **added}


__all__ = ["EXTENSION", "capabilities", "methods", "reaches", "shows_ui", "tool_meta", "without_ui"]
