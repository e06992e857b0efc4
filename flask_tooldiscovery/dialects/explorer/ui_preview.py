"""The explorer's preview of tool UIs: ``GET /tools/<name>/ui`` serves a tool's interface (the same HTML
MCP hosts read) under the CSP its declaration asks for, for the page's sandboxed iframe; the page's
``ui-host.js`` speaks MCP Apps' postMessage protocol to it (tool input, tool result, calls of
app-only tools through this dialect's call route, with the page's credentials). The detail of a
tool says where its interface is (``ui``); summaries and details carry a declared ``visibility``."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app

from ...errors import CoreError, NotFound, Unavailable
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from ...tools.providers import ProviderError
from ...tools.ui import UIError, render, ui_of, visibility_of


def visibility(tool: Tool) -> list[str] | None:
    """A tool's declared ``visibility`` (``None``: undeclared)."""
    declared = visibility_of(tool)
    return list(declared) if declared is not None else None


def interface(tool: Tool) -> dict[str, Any] | None:
    """Where a tool's interface is and how to frame it: its ``resourceUri``, the preferred size, the
    frame's ``allow`` (the permissions it asks for); ``None`` without one."""
    ui = ui_of(tool)
    if ui is None:
        return None
    found: dict[str, Any] = {"resourceUri": ui.resource_uri}
    if ui.preferred_size:
        found["preferredSize"] = {"width": ui.preferred_size[0], "height": ui.preferred_size[1]}
    if ui.permissions:
        found["allow"] = ui.permissions_policy()
    return found


def add_routes(pipe: Pipeline, bp: Blueprint) -> None:
    """``GET /tools/<name>/ui``: the tool's UI, an asset of the explorer page as its static files are
    (the request guard applies; the manifest does not list it): the frame that loads it cannot send
    the page's token, so it is served to anyone, for any tool; the HTML is the same for every
    caller and holds nothing of any (:func:`~...tools.ui.render`)."""

    @bp.get("/tools/<path:name>/ui", endpoint="ui_preview")
    def ui_preview(name: str) -> Response:
        try:
            toolset = pipe.core.tools()
        except ProviderError:
            log.exception("explorer: a tools provider failed (trace_id=%s)", pipe.trace_id)
            raise Unavailable() from None
        tool = toolset.get(name)
        ui = ui_of(tool) if tool is not None else None
        if ui is None:
            raise NotFound(f"Tool {name!r} has no UI." if tool is not None else f"Unknown tool: {name}")
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        try:
            html = render(app, ui, toolset.latest())
        except UIError as exc:
            log.error("explorer: %s (trace_id=%s)", exc, pipe.trace_id, exc_info=exc)
            raise CoreError("The tool's UI failed to render; the server log has the details.", status=500) from None
        response = Response(html, mimetype="text/html")
        response.headers["Content-Security-Policy"] = f"{ui.content_security_policy()}; frame-ancestors 'self'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response


__all__ = ["add_routes", "interface", "visibility"]
