"""Native Opal UIs: a tool's ``proteus=`` option, a Proteus document (Opal's UI format, type
``application/vnd.opal.proteus+json``) given as a dict or as the name of a Jinja template that
renders one as JSON.

A Proteus document is ``{"$type": "Document", "body": ..., "title": ..., "actions": ...}`` whose
nodes are strings, numbers, lists and elements (``{"$type": "Text", "children": ...}``); the
elements are the ones the Opal SDK's model (``opal_tools_sdk.proteus``, 0.2.3.dev0) knows. A
``Bridge`` element frames an MCP App by its ``ui://`` URI. The check here is the model's
structure (the document's keys, every element's ``$type``, a node that is an element, a Bridge's
``ui://`` resource), so that a mistake is refused when the tool is registered (a template: at
``init_app``) rather than in front of an Opal user; the props of each element are Opal's to read.

A template is rendered with the app's Jinja environment *without* autoescaping (it writes JSON,
not HTML: write values with ``|tojson``), outside any request, with ``tool`` (``name``,
``title``, ``description``) and ``ui`` (the tool's HTML :class:`~.ui.UI`, or ``None``).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UIError

if TYPE_CHECKING:  # pragma: no cover
    from flask import Flask
    from jinja2 import Environment

    from ..tools.model import Tool

#: The MIME type of a Proteus document (the SDK's ``UI.MIME_TYPE``).
PROTEUS_MIME_TYPE = "application/vnd.opal.proteus+json"
#: The elements of a Proteus document (their ``$type``), as the SDK's model lists them.
ELEMENTS = frozenset({
    "Action", "Alert", "Avatar", "AvatarGroup", "Badge", "Bridge", "Button", "Card", "CardHeader", "CardLink",
    "Chart", "Checkbox", "Concat", "DataTable", "DataTableRow", "DateInput", "Disclosure", "DisclosureContent",
    "DisclosureTrigger", "Federated", "Field", "FileIcon", "FileUpload", "Group", "Heading", "Icon", "Image",
    "ImageCarousel", "Input", "Length", "Link", "Map", "MapIndex", "Markdown", "PillMenu", "Question", "Range",
    "RichTextEditor", "Select", "SelectContent", "SelectTrigger", "Separator", "Show", "Switch", "Text",
    "Textarea", "Time", "Value", "Zip"})
#: The keys of a Document.
DOCUMENT_KEYS = ("$type", "actions", "appearance", "appIcon", "appName", "blocking", "body", "compact", "data",
                 "meta", "scripts", "subtitle", "title", "titleIcon")
#: The Document's keys and the elements' props that hold nodes (an element there needs its ``$type``).
_NODE_KEYS = ("actions", "body", "subtitle", "title", "children", "fallback")
#: Props whose values are the app's own data, not Proteus: not looked into.
_FREE_KEYS = ("data", "meta", "params", "scripts", "value")
_ENV_KEY = "tooldiscovery.proteus_env"


def _node_error(node: Any, where: str) -> str | None:
    """Why ``node`` (at ``where``) is not a Proteus node, or ``None``."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            if (error := _node_error(item, f"{where}[{index}]")) is not None:
                return error
        return None
    if not isinstance(node, Mapping):
        return None  # a string, number, boolean or null
    kind = node.get("$type")
    if kind is None:
        return f"{where} is an object without '$type' (an element is {{'$type': 'Text', ...}})"
    if kind not in ELEMENTS:
        return f"{where}: unknown element $type {kind!r}"
    if kind == "Bridge":
        resource = node.get("resource")
        if not isinstance(resource, str) or not resource.startswith("ui://") or len(resource) == len("ui://"):
            return f"{where}: a Bridge's resource is the ui:// URI of an MCP App (not {resource!r})"
    return _props_error(node, where)


def _props_error(element: Mapping[str, Any], where: str) -> str | None:
    """Why an element's props (or an object among them) hold something that is not Proteus."""
    for key, value in element.items():
        if key == "$type" or key in _FREE_KEYS:
            continue
        path = f"{where}.{key}"
        error = _node_error(value, path) if key in _NODE_KEYS else _value_error(value, path)
        if error is not None:
            return error
    return None


def _value_error(value: Any, where: str) -> str | None:
    """Why a prop's value is not Proteus: an element in it is checked as one, an object's values
    and a list's items in turn; anything else passes."""
    if isinstance(value, Mapping):
        return _node_error(value, where) if "$type" in value else _props_error(value, where)
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (error := _value_error(item, f"{where}[{index}]")) is not None:
                return error
    return None


def document_error(document: Any) -> str | None:
    """Why ``document`` is not a Proteus Document, or ``None``."""
    if not isinstance(document, Mapping) or document.get("$type") != "Document":
        return "a Proteus UI is a document: {'$type': 'Document', 'body': ...}"
    unknown = sorted(set(document) - set(DOCUMENT_KEYS))
    if unknown:
        return f"a Proteus Document has no key {unknown[0]!r} (its keys: {', '.join(DOCUMENT_KEYS[1:])})"
    if "body" not in document:
        return "a Proteus Document needs 'body' (its content)"
    try:
        json.dumps(document, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"a Proteus Document is JSON: {exc}"
    for key in ("title", "subtitle", "body", "actions"):
        if (error := _node_error(document.get(key), key)) is not None:
            return error
    return None


def proteus_error(value: Any) -> str | None:
    """Why the ``proteus`` option cannot work, or ``None`` (``None`` is fine: no native UI)."""
    if value is None:
        return None
    if isinstance(value, str):
        return None if value.strip() else "proteus must be a Proteus document (a dict) or a template name"
    if not isinstance(value, Mapping):
        return "proteus must be a Proteus document (a dict) or a template name ('order.proteus.json')"
    error = document_error(value)
    return f"proteus: {error}" if error is not None else None


def as_proteus(value: Mapping[str, Any] | str) -> dict[str, Any] | str:
    """The ``proteus`` option as a tool keeps it: a template name, or a copy of the document (what
    the app changes in its dict afterwards is not served unchecked)."""
    return value if isinstance(value, str) else dict(json.loads(json.dumps(value)))


def proteus_of(tool: Tool) -> Mapping[str, Any] | str | None:
    """The tool's native Proteus UI: a document, a template name, or ``None``."""
    value = tool.metadata.get("proteus") if tool.metadata else None
    return value if isinstance(value, (str, Mapping)) else None


def _environment(app: Flask) -> Environment:
    """The app's Jinja environment without autoescaping (its loader, filters and globals)."""
    env: Environment | None = app.extensions.get(_ENV_KEY)
    if env is None:
        env = app.extensions[_ENV_KEY] = app.jinja_env.overlay(autoescape=False)
    return env


def render_proteus(app: Flask, tool: Tool, ui: Any = None) -> dict[str, Any]:
    """The tool's native Proteus document (``ui``: its HTML UI, for the template), checked;
    :class:`UIError` when the template fails or does not render a document (cause chained)."""
    value = proteus_of(tool)
    if value is None:
        raise UIError(f"tool {tool.name!r} has no Proteus UI")
    if not isinstance(value, str):
        return dict(value)
    served = {"name": tool.name, "title": tool.title, "description": tool.description}

    def run() -> str:
        with app.app_context():
            return _environment(app).get_template(value).render(tool=served, ui=ui)

    try:
        document = json.loads(contextvars.Context().run(run))
    except Exception as exc:
        raise UIError(f"tool {tool.name!r}: Proteus template {value!r} failed to render a JSON document") from exc
    error = document_error(document)
    if error is not None:
        raise UIError(f"tool {tool.name!r}: Proteus template {value!r}: {error}")
    return dict(document)


def check_proteus(app: Flask, tools: Iterable[Tool], ui_of: Callable[[Tool], Any]) -> None:
    """``init_app``: every Proteus template is found and renders a document (:class:`UIError`
    naming the tool and the template otherwise)."""
    from jinja2 import TemplateNotFound

    for tool in tools:
        value = proteus_of(tool)
        if not isinstance(value, str):
            continue
        try:
            _environment(app).get_template(value)
        except TemplateNotFound:
            raise UIError(f"tool {tool.name!r}: Proteus template {value!r} not found by the app's template "
                          f"loader (templates/ of the app or its blueprints)") from None
        except Exception as exc:
            raise UIError(f"tool {tool.name!r}: Proteus template {value!r} does not compile: {exc}") from None
        try:
            render_proteus(app, tool, ui_of(tool))
        except UIError as exc:
            cause = f": {exc.__cause__}" if exc.__cause__ is not None else ""
            raise UIError(f"{exc}{cause}") from None


__all__ = ["DOCUMENT_KEYS", "ELEMENTS", "PROTEUS_MIME_TYPE", "as_proteus", "check_proteus", "document_error",
           "proteus_error", "proteus_of", "render_proteus"]
