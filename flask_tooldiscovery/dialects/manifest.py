"""Dialect ``manifest``: one discovery manifest at ``/.well-known/tool-discovery``
(``TOOLDISCOVERY_MANIFEST_URL_PREFIX``), so that one URL registers the app on any platform.

It lists every mounted dialect with the protocol and version it speaks, its discovery URL, its call
URL and all its routes (URI templates such as ``/opal/tools/{name}``); the MCP endpoint with its
Server Card, capabilities and, when MCP takes OAuth access tokens, the protected resource metadata
URL; and the OpenAPI document's URL. The routes are read from the app's URL map, so the manifest
says where each dialect is really mounted. Served from the pipeline's document cache with an
``ETag``, to any origin, like the discovery documents it points to.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, current_app, request

from ..serving.pipeline import Pipeline
from . import Dialect
from .mcp.dialect import ALL_VERSIONS, server_capabilities
from .utcp import UTCP_VERSION

NAME = "manifest"
DEFAULT_PATH = "/.well-known/tool-discovery"
#: The protocol each built-in dialect speaks, and its version (``None``: the protocol has none).
PROTOCOLS: dict[str, tuple[str, str | None]] = {
    "explorer": ("Tool Explorer (F2/F3 JSON API and page)", None),
    "opal": ("Optimizely Opal tools", None),
    "oxp": ("Open eXecution Protocol", "1.0"),
    "tdp": ("Tool Discovery Protocol", "1.0"),
    "mcp": ("Model Context Protocol, streamable HTTP", ALL_VERSIONS[-1]),
    "utcp": ("Universal Tool Calling Protocol manual", UTCP_VERSION),
    "openapi": ("OpenAPI", "3.1.0"),
    "server_card": ("MCP Server Card and AI Catalog (draft)", None),
}
_ARGUMENT = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


def _routes(pipe: Pipeline) -> list[dict[str, Any]]:
    """The routes of ``pipe``'s dialect on this app, in the order they were registered: absolute URL
    (a URI template where the rule has arguments), methods, and what the route does. A route that
    only adds a trailing slash to another is left out."""
    root, kinds = request.url_root.rstrip("/"), pipe._kinds
    routes: list[dict[str, Any]] = []
    for rule in current_app.url_map.iter_rules():
        blueprint, _, endpoint = (rule.endpoint or "").rpartition(".")
        kind = kinds.get(endpoint) if blueprint == f"tooldiscovery_{pipe.name}" else None
        methods = sorted(m for m in rule.methods or () if m not in ("HEAD", "OPTIONS"))
        if kind is not None and methods and not endpoint.endswith("__405"):
            routes.append({"url": root + _ARGUMENT.sub(r"{\1}", rule.rule), "methods": methods, "kind": kind})
    urls = {str(r["url"]) for r in routes}
    return [r for r in routes if not (str(r["url"]).endswith("/") and str(r["url"])[:-1] in urls)]


def _entry(pipe: Pipeline) -> dict[str, Any]:
    protocol, version = PROTOCOLS.get(pipe.name, (pipe.name, None))
    routes = _routes(pipe)
    listed = [r["url"] for r in routes if r["kind"] == "discovery" and "GET" in r["methods"] and "{" not in r["url"]]
    calls = [r["url"] for r in routes if r["kind"] == "call"]
    return {"protocol": protocol, "version": version, "url": (listed or calls or [None])[0], "calls": calls,
            "routes": routes}


def _mcp(pipe: Pipeline, dialects: dict[str, Any]) -> dict[str, Any] | None:
    """The MCP endpoint: its URL, versions, capabilities, Server Card and authorization metadata."""
    if "mcp" not in dialects:
        return None
    settings = pipe.settings
    out: dict[str, Any] = {"url": dialects["mcp"]["url"], "transport": "streamable-http",
                           "protocolVersions": list(ALL_VERSIONS),
                           "capabilities": server_capabilities(settings)}
    if "server_card" in dialects:
        from .server_card import card

        out["serverCardUrl"] = next((r["url"] for r in dialects["server_card"]["routes"]
                                     if r["url"].endswith("/server-card")), None)
        out["serverCard"] = card(pipe)
    if settings.mcp_authorization_servers:
        from .mcp.auth import metadata_url, resource_url

        out["authorization"] = {"resourceMetadataUrl": metadata_url(resource_url(settings, request)),
                                "authorizationServers": list(settings.mcp_authorization_servers),
                                "scopes": list(settings.mcp_scopes)}
    return out


def manifest(pipe: Pipeline) -> dict[str, Any]:
    """The manifest, its URLs absolute from this request."""
    settings = pipe.settings
    pipelines = pipe.ext.state().pipelines
    dialects = {name: _entry(pipelines[name]) for name in settings.dialects if name != NAME}
    return {
        "name": settings.server_name, "title": settings.title, "version": settings.server_version,
        "description": settings.server_description or None,
        "url": request.url_root.rstrip("/") + (pipe.prefix or DEFAULT_PATH),
        "tools": len(pipe.tools().latest()),
        "dialects": dialects,
        "mcp": _mcp(pipe, dialects),
        "openapi": dialects["openapi"]["url"] if "openapi" in dialects else None,
    }


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The manifest at ``<prefix>`` (``/.well-known/tool-discovery`` when the prefix is empty)."""
    bp = pipe.blueprint(__name__)

    @pipe.route("" if pipe.prefix else DEFAULT_PATH, "discovery", ["GET"], endpoint="manifest")
    def serve() -> Response:
        return pipe.send(pipe.document((NAME, request.url_root), lambda _: manifest(pipe)))

    return bp


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, default_prefix=DEFAULT_PATH, public_discovery=True,
                  export_document=manifest, runs_tools=lambda settings: False)
