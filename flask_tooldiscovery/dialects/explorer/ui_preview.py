"""The explorer's preview of tool UIs: ``GET /ui?uri=ui://...`` serves a tool's interface (the same HTML
MCP hosts read) under the CSP its declaration asks for, for the page's sandboxed iframe; the page's
``ui-host.js`` speaks MCP Apps' postMessage protocol to it (tool input, tool result, calls of
app-only tools through this dialect's call route, with the page's credentials). The detail of a
tool says where its interface is (``ui``); summaries and details carry a declared ``visibility``."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, request

from ...errors import CoreError, NotFound
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from ...tools.ui import UIError, render, resources_of, ui_of, visibility_of


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


def add_routes(pipe: Pipeline) -> None:
    """``GET /ui``: one tool UI, by its ``uri``, for the tools this caller may see."""

    @pipe.route("/ui", "discovery", ["GET"], endpoint="ui_preview", guard_methods=False)
    def ui_preview() -> Response:
        uri = request.args.get("uri", "")
        ui = resources_of(pipe.tools().latest()).get(uri)
        if ui is None:
            raise NotFound(f"No tool has the UI {uri!r}." if uri else "Give the UI's uri= (ui://...).")
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        try:
            html = render(app, ui, pipe.tools().latest())
        except UIError as exc:
            log.error("explorer: %s (trace_id=%s)", exc, pipe.trace_id, exc_info=exc)
            raise CoreError("The tool's UI failed to render; the server log has the details.", status=500) from None
        response = Response(html, mimetype="text/html")
        response.headers["Content-Security-Policy"] = f"{ui.content_security_policy()}; frame-ancestors 'self'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = "no-store"
        return response


__all__ = ["add_routes", "interface", "visibility"]
