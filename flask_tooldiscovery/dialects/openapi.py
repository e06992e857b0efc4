"""Dialect ``openapi``: an OpenAPI 3.1 document of the tools at ``<prefix>``
(``/tools/openapi.json``), built by :func:`describe`.

Its operations are the call routes of the dialect ``TOOLDISCOVERY_OPENAPI_DIALECT`` names (``utcp``
by default: one ``POST /utcp/tools/<name>`` per tool, the JSON body its arguments), which must be
mounted too; ``servers`` is this request's root URL and the security schemes are that dialect's
credentials. OpenAPI clients (UTCP's own converter among them) register each tool once from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, request

from ..serving.pipeline import Pipeline
from ..serving.root import Root
from ..serving.wire import security_schemes
from ..settings import DialectSettings, SettingsError, matching, setting
from . import Dialect, Protocol, dialect_of

NAME = "openapi"
VERSION = "3.1.0"


@dataclass(frozen=True)
class OpenApiSettings(DialectSettings):
    """Which dialect's call routes the document describes."""

    dialect: str = setting("OPENAPI_DIALECT", "utcp", matching(r"[a-z_][a-z0-9_]*", "a dialect name", lower=True),
                           "The mounted dialect whose call routes the OpenAPI document describes "
                           "(utcp: one operation per tool).")


def describe(pipe: Pipeline, server_url: str | None = None) -> dict[str, Any]:
    """An OpenAPI document of the call routes of the dialect ``TOOLDISCOVERY_OPENAPI_DIALECT`` names,
    mounted beside ``pipe`` (read through its ``openapi_paths``): ``servers`` is ``server_url`` when
    given, the security schemes those of its credentials. ``ValueError`` when it is not mounted or
    describes no routes."""
    settings, name = pipe.settings, OpenApiSettings.of(pipe.settings).dialect
    described = pipe.mounted.get(name)
    paths = dialect_of(described).openapi_paths if described is not None else None
    if described is None or paths is None:
        raise ValueError(f"TOOLDISCOVERY_OPENAPI_DIALECT is {name!r}: the OpenAPI document describes "
                         "the call routes of a mounted dialect that has an OpenAPI description (utcp, opal...)")
    info = {"title": settings.server_name, "version": settings.server_version}
    if settings.server_description:
        info["description"] = settings.server_description
    document: dict[str, Any] = {"openapi": VERSION, "info": info}
    if server_url:
        document["servers"] = [{"url": server_url}]
    document["paths"] = paths(described)
    schemes = security_schemes(described.authenticator)
    if schemes:
        document["components"] = {"securitySchemes": schemes}
        document["security"] = [{scheme: []} for scheme in schemes]
    return document


def export_document(pipe: Pipeline, root: Root) -> dict[str, Any]:
    """The document served at ``root`` (its ``servers`` entry)."""
    return describe(pipe, root.url_root.rstrip("/"))


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The blueprint serving the document (after checking that the dialect it describes is mounted)."""
    described = OpenApiSettings.of(pipe.settings).dialect
    if described not in pipe.settings.dialects:
        raise SettingsError(f"TOOLDISCOVERY_OPENAPI_DIALECT is {described!r}, which is not mounted: the OpenAPI "
                            "document describes its call routes (add it to TOOLDISCOVERY_DIALECTS)")
    if pipe.toolset is not None and described not in pipe.toolset.dialects:
        raise SettingsError(f"toolset {pipe.toolset.name!r} names openapi but not {described!r}: its OpenAPI "
                            f"document describes the toolset's own {described} routes (add {described!r} to its "
                            "dialects)")
    bp = pipe.blueprint(__name__)

    @pipe.route("" if pipe.prefix else "/openapi.json", "discovery", ["GET"], endpoint="document")
    def document() -> Response:
        return pipe.send(pipe.document(("openapi", request.url_root),
                                       lambda _: export_document(pipe, Root.of(request))))

    return bp


def toolset_prefix(prefix: str, name: str) -> str:
    """A toolset's document beside the whole one: ``/tools/openapi.json`` -> ``/tools/x/<name>/openapi.json``."""
    folder, _, document = prefix.rpartition("/")
    return f"{folder}/x/{name}/{document or 'openapi.json'}"


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, default_prefix="/tools/openapi.json",
                  protocol=Protocol("OpenAPI", (VERSION,)), export_document=export_document,
                  runs_tools=lambda settings: False, manifest_section=lambda pipe, root, entry, about: entry["url"],
                  settings=OpenApiSettings, toolset_prefix=toolset_prefix)
