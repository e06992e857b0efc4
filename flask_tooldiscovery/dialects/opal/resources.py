"""Opal's UI resources: ``POST <prefix>/resources/read`` answers a tool UI (``@discovery.tool(ui=...)``,
:mod:`...catalog.ui`) by its ``ui://`` URI, the one the function's ``ui_resource`` names in discovery.

Wire facts, from the Python SDK ``optimizely-opal.opal-tools-sdk`` 0.2.3.dev0 (``service.py``
``read_resource``): the body is ``{"uri": ...}``; the answer is one ``{"uri", "text", "mimeType"}``;
no ``uri`` is a 400, an unknown one a 404; the route takes the credentials tool calls take (it is
not one of the SDK's public paths). Where ours differs: a template that fails is logged and
answered with a plain 500, never the exception's text."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from ...catalog.ui import MIME_TYPE, UIError, render, resources_of, ui_of
from ...errors import BadRequest, CoreError, NotFound
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...serving.wire import json_response
from ...tools.model import Tool


def ui_resource(tool: Tool) -> str | None:
    """The function's ``ui_resource``: the URI of the tool's UI (``None`` without one)."""
    ui = ui_of(tool)
    return ui.resource_uri if ui is not None else None


def add_routes(pipe: Pipeline) -> None:
    """``POST /resources/read``, when a tool registered by ``init_app`` has a UI (an app without one
    has no resource to read: the route is not there, as MCP then declares no resources)."""
    if not resources_of(pipe.core.registry.registered):
        return

    @pipe.route("/resources/read", "call", ["POST"], endpoint="read_resource")
    def read_resource() -> Response:
        body: Any = pipe.body()
        uri = body.get("uri") if isinstance(body, dict) else None
        if not isinstance(uri, str) or not uri:
            raise BadRequest("Missing 'uri' field in request body")
        tools = pipe.tools().latest()
        ui = resources_of(tools).get(uri)
        if ui is None:
            raise NotFound(f"Resource not found: {uri}")
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        try:
            html = render(app, ui, tools)
        except UIError as exc:
            log.error("opal: %s (trace_id=%s)", exc, pipe.trace_id, exc_info=exc)
            raise CoreError("The resource failed to render; the server log has the details.", status=500) from None
        return json_response({"uri": uri, "text": html, "mimeType": MIME_TYPE})


__all__ = ["add_routes", "ui_resource"]
