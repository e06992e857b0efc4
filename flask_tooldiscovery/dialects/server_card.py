"""Dialect ``server_card``: the MCP Server Card (SEP-2127, a draft extension) at
``<MCP endpoint>/server-card`` (``/mcp/server-card``) and the AI Catalog that lists it at
``/.well-known/ai-catalog.json``: who the server is and where its streamable-HTTP endpoint is, for
clients and crawlers, before any MCP round-trip. A card lists no tools (the current draft dropped
them: ``tools/list`` is the authority). It describes the endpoints of the mounted dialects whose
:class:`~.Protocol` has a ``transport`` (``mcp``), from their fields: one must be mounted. With
toolsets, each toolset's mount of such a dialect is a remote too (after the full endpoints), and
each remote names the optional headers that narrow what a client sees (``X-MCP-Toolsets``,
``X-MCP-Readonly``); without toolsets the card is as it always was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, request

from ..serving.pipeline import Pipeline
from ..serving.root import Root
from ..serving.wire import security_schemes
from ..settings import DialectSettings, SettingsError, matching, optional, setting
from . import Dialect, Protocol, table_of

NAME = "server_card"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_TYPE = "application/mcp-server-card+json"
CATALOG_TYPE = "application/ai-catalog+json"
CATALOG_PATH = "/.well-known/ai-catalog.json"


@dataclass(frozen=True)
class ServerCardSettings(DialectSettings):
    """The card's name (its title, version and description are the core's server identity)."""

    name: str | None = setting(
        "SERVER_CARD_NAME", None,
        optional(matching(r"(?=.{3,200}$)[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+",
                          "'namespace/name' in reverse DNS (com.example/tools)")),
        "MCP Server Card name (default: the request's host name reversed, '/', the server name).")


def shorten(text: str, limit: int = 100) -> str:
    """``text`` on one line, at most ``limit`` characters (cut at a word, with an ellipsis)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:.") + "\u2026"


def card_name(pipe: Pipeline, root: Root) -> str:
    """``TOOLDISCOVERY_SERVER_CARD_NAME``, else the host name of ``root`` reversed (``tools.acme.com``:
    ``com.acme.tools``), a slash, and the server name made safe for the card's pattern."""
    named = ServerCardSettings.of(pipe.settings).name
    if named:
        return named
    host = re.sub(r"[^a-z0-9.-]", "-", urlsplit(root.url_root).hostname or "localhost")
    server = re.sub(r"[^a-zA-Z0-9._-]+", "-", pipe.settings.server_name).strip("-.") or "mcp"
    return f"{'.'.join(reversed(host.split('.')))}/{server}"[:200]


def remotes(pipe: Pipeline) -> list[tuple[str, Protocol]]:
    """The mounted dialects the card describes (``(name, protocol)``, in mounting order): those whose
    protocol has a transport. :class:`~..settings.SettingsError` when none is mounted."""
    found, table = [], table_of(pipe)
    for name in pipe.settings.dialects:
        protocol = table[name].protocol
        if protocol is not None and protocol.transport is not None:
            found.append((name, protocol))
    if not found:
        raise SettingsError("the server_card dialect describes the endpoint of a dialect with a transport: "
                            "mount mcp too (TOOLDISCOVERY_DIALECTS)")
    return found


def _remote(pipe: Pipeline, root: Root, name: str, protocol: Protocol, prefix: str | None = None,
             toolset: bool = False) -> dict[str, Any]:
    """One ``remotes`` entry: the transport, its URL absolute from ``root`` (``prefix``: a
    toolset's mount), its versions and the header that carries the credential its calls need (never
    the credential); with toolsets, the optional headers that narrow what a client sees (the
    dialect's ``card_headers``: MCP's ``X-MCP-Toolsets`` on the full endpoint, ``X-MCP-Readonly``)."""
    path = pipe.settings.prefixes[name] if prefix is None else prefix
    remote: dict[str, Any] = {"type": protocol.transport, "url": root.url_root.rstrip("/") + (path or "/"),
                              "supportedProtocolVersions": list(protocol.versions)}
    headers: list[dict[str, Any]] = []
    scheme = next(iter(security_schemes(pipe.mounted[name].authenticator).values()), None)
    if scheme is not None:
        headers.append({"name": scheme.get("name", "Authorization"), "isRequired": True, "isSecret": True,
                        "value": "{token}" if scheme["type"] == "apiKey" else "Bearer {token}",
                        "variables": {"token": {"description": "The credential issued for this server.",
                                                "isRequired": True, "isSecret": True}}})
    optional = table_of(pipe)[name].card_headers
    if pipe.toolsets and optional is not None:  # only then: a card without toolsets reads as it always did
        headers += optional(pipe.mounted[name], toolset)
    if headers:
        remote["headers"] = headers
    return remote


def card(pipe: Pipeline, root: Root) -> dict[str, Any]:
    """The Server Card served at ``root``, its endpoint URLs absolute."""
    settings = pipe.settings
    description = settings.server_description or f"Tools from {settings.server_name}, over MCP."
    found = {"$schema": SCHEMA_URL, "name": card_name(pipe, root), "version": settings.server_version,
             "title": shorten(settings.server_title), "description": shorten(description),
             "remotes": [_remote(pipe, root, name, protocol) for name, protocol in remotes(pipe)]
             + [_remote(pipe, root, name, protocol, mounts[name].prefix, toolset=True)
                for mounts in pipe.toolsets.values() for name, protocol in remotes(pipe) if name in mounts]}
    if settings.server_icons:  # TOOLDISCOVERY_SERVER_ICONS, as MCP's serverInfo shows them
        found["icons"] = [dict(icon) for icon in settings.server_icons]
    return found


def catalog(pipe: Pipeline, root: Root) -> dict[str, Any]:
    """The AI Catalog served at ``root``: one entry, the card's URL, its identifier
    ``urn:air:{domain}:mcp:{name}`` read back from the card's reverse-DNS name (title, description
    and version stay in the card)."""
    namespace, _, name = card_name(pipe, root).partition("/")
    url = root.url_root.rstrip("/") + pipe.prefix + _card_path(pipe)
    return {"specVersion": "1.0", "host": {"displayName": pipe.settings.server_name}, "entries": [
        {"identifier": f"urn:air:{'.'.join(reversed(namespace.split('.')))}:mcp:{name}", "type": CARD_TYPE,
         "url": url}]}


def _card_path(pipe: Pipeline) -> str:
    """Where the card is served: ``/server-card`` under the (first) endpoint it describes."""
    return pipe.settings.prefixes[remotes(pipe)[0][0]] + "/server-card"


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The card at ``<MCP endpoint>/server-card`` and the catalog at the root's ``.well-known``."""
    card_path = _card_path(pipe)
    bp = pipe.blueprint(__name__)

    def serve(what: str, build: Any, media_type: str) -> Response:
        document = pipe.document((what, request.url_root), lambda _: build(pipe, Root.of(request)))
        return pipe.send(document, {"Content-Type": media_type})

    pipe.route(card_path, "discovery", ["GET"], endpoint="card")(
        lambda: serve("card", card, CARD_TYPE))
    pipe.route(CATALOG_PATH, "discovery", ["GET"], endpoint="catalog")(
        lambda: serve("catalog", catalog, CATALOG_TYPE))
    return bp


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, public_discovery=True, export_document=card,
                  protocol=Protocol("MCP Server Card and AI Catalog (draft)"), describes_remote="serverCard",
                  runs_tools=lambda settings: False, settings=ServerCardSettings,
                  serves_toolsets=False)
