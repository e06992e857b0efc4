"""Opal's UI resources: a tool's UI as Opal renders it, a Proteus document
(``application/vnd.opal.proteus+json``, :mod:`...catalog.proteus`), read with
``POST <prefix>/resources/read`` by the ``ui://`` URI the function's ``ui_resource`` names in
discovery: ``ui://opal/<tool name>``.

The document is the tool's own (``@discovery.tool(proteus=...)``) or, for a tool with an HTML UI
only (``ui=...``, an MCP App), one made here: a ``Bridge`` that frames the App by its ``ui://``
URI (read through the same route: the HTML, ``text/html;profile=mcp-app``), with a fallback for
hosts without frames (Teams, Slack, mobile) that shows the result as text: a line per field of
the tool's output schema, the value itself for a string or number, and a sentence otherwise.

Wire facts, from the Python SDK ``optimizely-opal.opal-tools-sdk`` 0.2.3.dev0 (``service.py``
``read_resource``): the body is ``{"uri": ...}``; the answer is one ``{"uri", "text", "mimeType"}``
(a ``UI.Document`` as its JSON text, ``application/vnd.opal.proteus+json``); no ``uri`` is a 400,
an unknown one a 404; the route takes the credentials tool calls take (it is not one of the SDK's
public paths). Where ours differs: a template that fails is logged and answered with a plain 500,
never the exception's text."""

from __future__ import annotations

import json
from typing import Any

from flask import Flask, Response, current_app

from ...catalog import (
    MIME_TYPE,
    PROTEUS_MIME_TYPE,
    UIError,
    proteus_of,
    render,
    render_proteus,
    resources_of,
    ui_of,
)
from ...errors import BadRequest, CoreError, NotFound
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...serving.wire import json_response
from ...tools.model import Tool

#: Where the Proteus documents of the tools are: this prefix and the tool's name.
DOCUMENTS = "ui://opal/"
_SCALARS = ("string", "number", "integer", "boolean")


def has_opal_ui(tool: Tool) -> bool:
    """True for a tool Opal shows a UI for (an HTML UI, a Proteus one, or both)."""
    return ui_of(tool) is not None or proteus_of(tool) is not None


def ui_resource(tool: Tool) -> str | None:
    """The function's ``ui_resource``: the URI of the tool's Proteus document (``None`` without a UI)."""
    return DOCUMENTS + tool.name if has_opal_ui(tool) else None


def _title(tool: Tool) -> str:
    """The tool's title (``title=``, else its ``annotations`` title), else its name."""
    title = tool.title or (tool.annotations or {}).get("title")
    return title if isinstance(title, str) and title else tool.name


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _label(key: str, schema: Any) -> str:
    """A field's label: its schema's ``title``, else its name in words."""
    title = schema.get("title") if isinstance(schema, dict) else None
    return title if isinstance(title, str) and title else key.replace("_", " ").capitalize()


def _textual(schema: Any) -> bool:
    """False for a field that is an object or a list of objects (no line of text shows it)."""
    if not isinstance(schema, dict):
        return True
    items = schema.get("items")
    return schema.get("type") != "object" and not (isinstance(items, dict) and items.get("type") == "object")


def fallback(tool: Tool) -> list[dict[str, Any]]:
    """The result as text, for hosts without frames: ``Label: value`` per field of the output
    schema (objects left out), the value for a scalar result, a sentence for a shape unknown."""
    schema = tool.output_schema if isinstance(tool.output_schema, dict) else {}
    fields = schema.get("properties") if schema.get("type") == "object" else None
    if isinstance(fields, dict):
        lines = [{"$type": "Text", "children": {"$type": "Concat", "children": [
                    f"{_label(key, spec)}: ", {"$type": "Value", "path": _pointer(key)}]}}
                 for key, spec in fields.items() if _textual(spec)]
        if lines:
            return lines
    if schema.get("type") in _SCALARS:
        return [{"$type": "Text", "children": {"$type": "Concat", "children": [{"$type": "Value", "path": ""}]}}]
    return [{"$type": "Text", "children": f"{_title(tool)}: open this result in Opal on the web to see it."}]


def opal_document(app: Flask, tool: Tool) -> dict[str, Any]:
    """The tool's Proteus document: its own, or a Bridge to its MCP App with :func:`fallback`."""
    ui = ui_of(tool)
    if proteus_of(tool) is not None:
        return render_proteus(app, tool, ui)
    assert ui is not None  # has_opal_ui
    bridge: dict[str, Any] = {"$type": "Bridge", "resource": ui.resource_uri, "fallback": fallback(tool)}
    if ui.preferred_size is not None:
        bridge["height"] = ui.preferred_size[1]
    return {"$type": "Document", "title": _title(tool), "body": bridge}


def add_routes(pipe: Pipeline) -> None:
    """``POST /resources/read``, when a tool registered by ``init_app`` has a UI (an app without one
    has no resource to read: the route is not there, as MCP then declares no resources).
    :class:`UIError` when an MCP App's ``ui://`` URI is one of the Proteus documents'."""
    registered = [tool for tool in pipe.core.registry.registered if has_opal_ui(tool)]
    if not registered:
        return
    taken = {DOCUMENTS + tool.name for tool in registered}.intersection(resources_of(registered))
    if taken:
        raise UIError(f"UI {min(taken)}: Opal's Proteus documents are at {DOCUMENTS}<tool name>; give the UI "
                      f"another uri=")

    @pipe.route("/resources/read", "call", ["POST"], endpoint="read_resource")
    def read_resource() -> Response:
        body: Any = pipe.body()
        uri = body.get("uri") if isinstance(body, dict) else None
        if not isinstance(uri, str) or not uri:
            raise BadRequest("Missing 'uri' field in request body")
        tools = pipe.tools().latest()
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        documents = {DOCUMENTS + tool.name: tool for tool in tools if has_opal_ui(tool)}
        try:
            if uri in documents:
                text, mime_type = json.dumps(opal_document(app, documents[uri])), PROTEUS_MIME_TYPE
            elif (ui := resources_of(tools).get(uri)) is not None:
                text, mime_type = render(app, ui, tools), MIME_TYPE
            else:
                raise NotFound(f"Resource not found: {uri}")
        except UIError as exc:
            log.error("opal: %s (trace_id=%s)", exc, pipe.trace_id, exc_info=exc)
            raise CoreError("The resource failed to render; the server log has the details.", status=500) from None
        return json_response({"uri": uri, "text": text, "mimeType": mime_type})


__all__ = ["DOCUMENTS", "add_routes", "fallback", "has_opal_ui", "opal_document", "ui_resource"]
