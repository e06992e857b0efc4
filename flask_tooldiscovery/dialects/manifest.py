"""Dialect ``manifest``: one discovery manifest at ``/.well-known/tool-discovery``
(``TOOLDISCOVERY_MANIFEST_URL_PREFIX``), so that one URL registers the app on any platform.

It lists every mounted dialect with the protocol and version it speaks, its discovery URL, its call
URL and all its routes (URI templates such as ``/opal/tools/{name}``); then the entry of each
dialect that has one of its own (the MCP endpoint with its capabilities, Server Card and OAuth
metadata; the OpenAPI document's URL); where the tools can be searched; and, when toolsets are
mounted, each toolset's tags and its mounts' entries. Everything in it comes from the mounted
dialects' :class:`~.Dialect` fields and the app's URL map, so the manifest says where each dialect
is really mounted (only ``search`` names dialects: the explorer and MCP, the two that search).
Served from the pipeline's document cache with an ``ETag``, to any origin, like the discovery
documents it points to.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, current_app, request

from ..serving.pipeline import Pipeline
from ..serving.root import Root
from . import Dialect, Protocol, dialect_of, table_of

NAME = "manifest"
DEFAULT_PATH = "/.well-known/tool-discovery"
_ARGUMENT = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


def _routes(pipe: Pipeline, root: Root) -> list[dict[str, Any]]:
    """The routes of ``pipe``'s dialect on this app, in the order they were registered: absolute URL
    from ``root`` (a URI template where the rule has arguments), methods, and what the route does. A
    route that only adds a trailing slash to another is left out."""
    base = root.url_root.rstrip("/")
    routes: list[dict[str, Any]] = []
    for rule in current_app.url_map.iter_rules():
        kind = pipe.route_kind(rule.endpoint or "")
        methods = sorted(m for m in rule.methods or () if m not in ("HEAD", "OPTIONS"))
        if kind is not None and methods:
            routes.append({"url": base + _ARGUMENT.sub(r"{\1}", rule.rule), "methods": methods, "kind": kind})
    urls = {str(r["url"]) for r in routes}
    return [r for r in routes if not (str(r["url"]).endswith("/") and str(r["url"])[:-1] in urls)]


def _entry(pipe: Pipeline, root: Root) -> dict[str, Any]:
    protocol = dialect_of(pipe).protocol or Protocol(pipe.name)
    routes = _routes(pipe, root)
    listed = [r["url"] for r in routes if r["kind"] == "discovery" and "GET" in r["methods"] and "{" not in r["url"]]
    calls = [r["url"] for r in routes if r["kind"] == "call"]
    return {"protocol": protocol.name, "version": protocol.version, "url": (listed or calls or [None])[0],
            "calls": calls, "routes": routes}


def _about_remote(pipelines: dict[str, Pipeline], entries: dict[str, Any], root: Root) -> dict[str, Any]:
    """The documents mounted dialects serve about the remote endpoint (the Server Card), by key."""
    about: dict[str, Any] = {}
    for name, pipe in pipelines.items():
        dialect = dialect_of(pipe)
        key, export = dialect.describes_remote, dialect.export_document
        if key and export is not None and name in entries:
            about[f"{key}Url"] = entries[name]["url"]
            about[key] = export(pipe, root)
    return about


def _search(pipe: Pipeline, entries: dict[str, Any]) -> dict[str, Any]:
    """Where the tools can be searched (the core's one search, best first): the explorer's tool list
    as a URI template taking ``q`` and ``limit``; MCP's ``tools/list`` offering ``search_tools`` and
    ``call_tool`` when ``TOOLDISCOVERY_TOOL_SEARCH`` is on (``whenMoreThan``: past how many tools the
    caller sees; 0, always). ``None`` where it is not mounted or not on."""
    explorer, mcp, past = entries.get("explorer"), entries.get("mcp"), pipe.settings.tool_search
    return {"explorer": f"{explorer['url']}{{?q,limit}}" if explorer and explorer["url"] else None,
            "mcp": None if mcp is None or past is None else
            {"url": mcp["url"], "tools": ["search_tools", "call_tool"], "whenMoreThan": past}}


def _toolsets(pipe: Pipeline, root: Root) -> dict[str, Any]:
    """Each toolset (``TOOLDISCOVERY_TOOLSETS``): its tags, how many of its tools the caller's model
    sees (counted as the manifest's ``tools`` counts the app's: not one only an interface calls),
    its mount under each dialect it names, as the full mounts' entries say theirs, the URL of the
    read-only form of each mount that has one (``readonly``, by dialect: MCP's ``/readonly``), and
    where its tools can be searched (``search``, as the manifest's own says it of every tool)."""
    out: dict[str, Any] = {}
    for name, mounts in pipe.toolsets.items():
        first = next(iter(mounts.values()))
        toolset = first.toolset
        entries = {dialect: _entry(mount, root) for dialect, mount in mounts.items()}
        out[name] = {"title": toolset.title if toolset else None,
                     "description": toolset.description if toolset else None,
                     "tags": sorted(toolset.tags) if toolset else [], "tools": len(first.tools().for_model().latest()),
                     "dialects": entries,
                     "readonly": {dialect: f"{entries[dialect]['url']}{suffix}" for dialect, mount in mounts.items()
                                  if mount.settings.readonly_mounts and entries[dialect]["url"]
                                  and (suffix := dialect_of(mount).read_only_suffix)},
                     "search": _search(first, entries)}
    return out


def manifest(pipe: Pipeline, root: Root) -> dict[str, Any]:
    """The manifest served at ``root``, its URLs absolute."""
    settings = pipe.settings
    pipelines = pipe.mounted
    entries = {name: _entry(pipelines[name], root) for name in settings.dialects if name != pipe.name}
    about = _about_remote(pipelines, entries, root)
    out = {
        "name": settings.server_name, "title": settings.server_title, "version": settings.server_version,
        "description": settings.server_description or None,
        "url": root.url_root.rstrip("/") + (pipe.prefix or DEFAULT_PATH),
        "tools": len(pipe.tools().latest()),
        "dialects": entries,
        "search": _search(pipe, entries),
    }
    if pipe.toolsets:  # only then: a manifest without toolsets reads as it always did
        out["toolsets"] = _toolsets(pipe, root)
    for name, dialect in table_of(pipe).items():  # an entry of its own: null while the dialect is not mounted
        if dialect.manifest_section is not None and name != pipe.name:
            mounted = pipelines.get(name) if name in entries else None
            remote = dialect.protocol is not None and dialect.protocol.transport is not None
            out[name] = None if mounted is None else dialect.manifest_section(mounted, root, entries[name],
                                                                             about if remote else {})
    return out


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The manifest at ``<prefix>`` (``/.well-known/tool-discovery`` when the prefix is empty)."""
    bp = pipe.blueprint(__name__)

    @pipe.route("" if pipe.prefix else DEFAULT_PATH, "discovery", ["GET"], endpoint="manifest")
    def serve() -> Response:
        return pipe.send(pipe.document((NAME, request.url_root), lambda _: manifest(pipe, Root.of(request))))

    return bp


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, default_prefix=DEFAULT_PATH, public_discovery=True,
                  export_document=manifest, runs_tools=lambda settings: False, serves_toolsets=False)
