"""Dialect ``server_card``: the MCP Server Card (SEP-2127, a draft extension) at
``<MCP endpoint>/server-card`` (``/mcp/server-card``) and the AI Catalog that lists it at
``/.well-known/ai-catalog.json``: who the server is and where its streamable-HTTP endpoint is, for
clients and crawlers, before any MCP round-trip. A card lists no tools (the current draft dropped
them: ``tools/list`` is the authority). It describes the ``mcp`` dialect's endpoint, so that dialect
must be mounted too.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, request

from ..cli.export import security_schemes
from ..serving.pipeline import Pipeline
from ..settings import SettingsError
from . import Dialect
from .mcp.dialect import ALL_VERSIONS
from .mcp.dialect import NAME as MCP

NAME = "server_card"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_TYPE = "application/mcp-server-card+json"
CATALOG_TYPE = "application/ai-catalog+json"
CATALOG_PATH = "/.well-known/ai-catalog.json"


def shorten(text: str, limit: int = 100) -> str:
    """``text`` on one line, at most ``limit`` characters (cut at a word, with an ellipsis)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:.") + "\u2026"


def card_name(pipe: Pipeline) -> str:
    """``TOOLDISCOVERY_SERVER_CARD_NAME``, else this request's host name reversed (``tools.acme.com``:
    ``com.acme.tools``), a slash, and the server name made safe for the card's pattern."""
    if pipe.settings.server_card_name:
        return pipe.settings.server_card_name
    host = re.sub(r"[^a-z0-9.-]", "-", urlsplit(request.host_url).hostname or "localhost")
    server = re.sub(r"[^a-zA-Z0-9._-]+", "-", pipe.settings.server_name).strip("-.") or "mcp"
    return f"{'.'.join(reversed(host.split('.')))}/{server}"[:200]


def _mcp_path(pipe: Pipeline) -> str:
    if MCP not in pipe.settings.prefixes:
        raise SettingsError("the server_card dialect describes the mcp dialect's endpoint: mount mcp too "
                            "(TOOLDISCOVERY_DIALECTS)")
    return pipe.settings.prefixes[MCP]


def card(pipe: Pipeline) -> dict[str, Any]:
    """The Server Card, its endpoint URL absolute from this request."""
    settings = pipe.settings
    remote: dict[str, Any] = {"type": "streamable-http", "url": request.url_root.rstrip("/") + (_mcp_path(pipe) or "/"),
                              "supportedProtocolVersions": list(ALL_VERSIONS)}
    scheme = next(iter(security_schemes(pipe.ext.pipeline(MCP).authenticator).values()), None)
    if scheme is not None:  # which header carries the credential the endpoint needs, never the credential
        remote["headers"] = [{"name": scheme.get("name", "Authorization"), "isRequired": True, "isSecret": True,
                              "value": "{token}" if scheme["type"] == "apiKey" else "Bearer {token}",
                              "variables": {"token": {"description": "The credential issued for this server.",
                                                      "isRequired": True, "isSecret": True}}}]
    description = settings.server_description or f"Tools from {settings.server_name}, over MCP."
    return {"$schema": SCHEMA_URL, "name": card_name(pipe), "version": settings.server_version,
            "title": shorten(settings.title), "description": shorten(description), "remotes": [remote]}


def catalog(pipe: Pipeline) -> dict[str, Any]:
    """The AI Catalog: one entry, the card's URL, its identifier ``urn:air:{domain}:mcp:{name}``
    read back from the card's reverse-DNS name (title, description and version stay in the card)."""
    namespace, _, name = card_name(pipe).partition("/")
    url = request.url_root.rstrip("/") + pipe.prefix + _mcp_path(pipe) + "/server-card"
    return {"specVersion": "1.0", "host": {"displayName": pipe.settings.server_name}, "entries": [
        {"identifier": f"urn:air:{'.'.join(reversed(namespace.split('.')))}:mcp:{name}", "type": CARD_TYPE,
         "url": url}]}


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The card at ``<MCP endpoint>/server-card`` and the catalog at the root's ``.well-known``."""
    mcp_path = _mcp_path(pipe)
    bp = pipe.blueprint(__name__)

    def serve(what: str, build: Any, media_type: str) -> Response:
        document = pipe.document((what, request.url_root), lambda _: build(pipe))
        return pipe.send(document, {"Content-Type": media_type})

    pipe.route(f"{mcp_path}/server-card", "discovery", ["GET"], endpoint="card")(
        lambda: serve("card", card, CARD_TYPE))
    pipe.route(CATALOG_PATH, "discovery", ["GET"], endpoint="catalog")(
        lambda: serve("catalog", catalog, CATALOG_TYPE))
    return bp


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, public_discovery=True, export_document=card,
                  runs_tools=lambda settings: False)
