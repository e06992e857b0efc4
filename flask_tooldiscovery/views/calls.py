"""Calling a Flask view as a tool: the view runs through the app itself, as a sub-request carrying
the caller's headers (``Authorization``, cookies...) on a fresh app context, so the view's own
authentication, validation and error handlers apply. A 2xx body is the result; a 4xx is the
tool's error carrying the view's own messages (flask-smorest/webargs validation errors listed by
field); a 5xx, or an exception that escapes the view, is a failure whose details are logged and
not sent."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from flask import Flask
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Response

from ..errors import ViewFailed as ViewFailed
from ..tools.model import ToolContext, ToolError
from .schemas import LOCATIONS

#: The environ key a view can read to know it runs as a tool: ``{"tool", "call_id", "dialect"}``.
ENVIRON_KEY = "flask_tooldiscovery.tool_call"
#: Headers of the caller's request that are not passed on to the view.
_NOT_FORWARDED = {"host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "te",
                  "trailer", "upgrade", "accept", "accept-encoding", "expect", "mcp-session-id",
                  "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id"}


@dataclass(frozen=True)
class Plan:
    """Where each tool argument goes in the sub-request."""

    endpoint: str
    method: str
    #: ``{argument: (location, key)}``; key ``None``: the argument is the whole location (nested).
    places: dict[str, tuple[str, str | None]]


def _split(plan: Plan, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments by location; a nested location's argument is the whole of it (a JSON array
    body stays an array)."""
    parts: dict[str, Any] = {"path": {}, "query": {}, "json": {}, "form": {}}
    for name, value in arguments.items():
        location, key = plan.places[name]
        if key is None:
            parts[location] = value
        else:
            parts[location][key] = value
    return parts


def _forwarded(context: ToolContext) -> dict[str, str]:
    headers = {k: v for k, v in context.request.headers.items() if k.lower() not in _NOT_FORWARDED} \
        if context.request is not None else {}
    headers["Accept"] = "application/json"
    if context.trace_id:
        headers["X-Trace-Id"] = context.trace_id
    return headers


def run_view(app: Flask, plan: Plan, arguments: Mapping[str, Any], context: ToolContext, tool: str) -> Response:
    """The view's response to a sub-request built from ``arguments``, with the caller's headers."""
    parts = _split(plan, arguments)
    outer = context.request
    base = outer.host_url.rstrip("/") + outer.script_root if outer is not None else \
        f"{app.config.get('PREFERRED_URL_SCHEME') or 'http'}://{app.config.get('SERVER_NAME') or 'localhost'}"
    query = [(k, str(v).lower() if isinstance(v, bool) else str(v))
             for k, v in parts["query"].items() for v in (v if isinstance(v, list) else [v]) if v is not None]
    with app.app_context():  # a fresh app context (g) for the view, as a request of its own would have
        path = app.url_map.bind("localhost").build(plan.endpoint, parts["path"], method=plan.method)
        body: dict[str, Any] = {"json": parts["json"]} if plan.method != "GET" and (
            parts["json"] or any(loc == "json" for loc, _ in plan.places.values())) else {}
        if parts["form"]:
            body = {"data": parts["form"]}
        builder = EnvironBuilder(path=path.split("?", 1)[0], base_url=base, method=plan.method,
                                 query_string=urlencode(query), headers=list(_forwarded(context).items()), **body)
        environ = builder.get_environ()
        if outer is not None:
            environ["REMOTE_ADDR"] = outer.remote_addr or environ.get("REMOTE_ADDR")
        environ[ENVIRON_KEY] = {"tool": tool, "call_id": context.call_id, "dialect": context.dialect}
        return Response.from_app(app.wsgi_app, environ, buffered=True)


def _messages(value: Any, where: str = "") -> list[str]:
    """``{"json": {"name": ["Missing data."]}}`` -> ``["json.name: Missing data."]``."""
    if isinstance(value, Mapping):
        return [m for k, v in value.items() for m in _messages(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [f"{where}: {' '.join(value)}" if where else " ".join(value)]
    if isinstance(value, list):
        return [m for i, v in enumerate(value) for m in _messages(v, f"{where}[{i}]")]
    return [f"{where}: {value}" if where else str(value)]


def _error_text(response: Response) -> str:
    if response.is_json:
        body = response.get_json(silent=True)
        if isinstance(body, Mapping):
            detail = next((str(body[k]) for k in ("message", "error", "detail", "description") if body.get(k)), "")
            errors = body.get("errors", body.get("messages"))
            if isinstance(errors, Mapping) and errors and set(errors) <= {*LOCATIONS, "headers", "cookies", "files"}:
                errors = {k: v for by_location in errors.values() if isinstance(by_location, Mapping)
                          for k, v in by_location.items()}  # {"json": {"name": [...]}}: the field is enough
            listed = "; ".join(_messages(errors)) if errors else ""
            return " ".join(p for p in (detail.rstrip(".") + "." if detail else "", listed) if p)
        return "" if body is None else str(body)
    text = response.get_data(as_text=True)
    if response.mimetype == "text/html":
        paragraphs = re.findall(r"<p>(.*?)</p>", text, re.S)
        text = " ".join(paragraphs) if paragraphs else re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:500]


def result_of(response: Response) -> Any:
    """A view's response as a tool result; :class:`ToolError` for 3xx/4xx, :class:`ViewFailed` for 5xx."""
    status = response.status_code
    if status >= 500:
        raise ViewFailed(f"the view answered {response.status}")
    if status >= 300:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        text = f"redirect to {response.headers.get('Location')}" if status < 400 else _error_text(response)
        if status == 404:  # what the call names is not there: each protocol's own not-found
            raise ToolError(f"Not found: {text}" if text else "Not found.", not_found=True)
        retry = response.headers.get("Retry-After", "")
        raise ToolError(f"{status} {phrase}" + (f": {text}" if text else ""), can_retry=status in (408, 429),
                        retry_after_ms=int(retry) * 1000 if retry.isdigit() else None)
    if status == 204 or not response.get_data():
        return None
    if response.is_json:
        return response.get_json()
    if (response.mimetype or "").startswith("text/"):
        return response.get_data(as_text=True)
    return {"content_type": response.mimetype, "base64": base64.b64encode(response.get_data()).decode("ascii")}
