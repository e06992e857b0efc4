"""Dialect ``openapi``: an OpenAPI 3.1 document of the tools at ``<prefix>``
(``/tools/openapi.json``), built by :func:`~flask_tooldiscovery.export.openapi_document`.

Its operations are the call routes of the dialect ``TOOLDISCOVERY_OPENAPI_DIALECT`` names (``utcp``
by default: one ``POST /utcp/tools/<name>`` per tool, the JSON body its arguments), which must be
mounted too; ``servers`` is this request's root URL and the security schemes are that dialect's
credentials. OpenAPI clients (UTCP's own converter among them) register each tool once from it.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from ..cli.export import openapi_document
from ..serving.pipeline import Pipeline
from ..settings import SettingsError
from . import Dialect

NAME = "openapi"


def export_document(pipe: Pipeline) -> dict[str, Any]:
    """The document, its ``servers`` entry from this request."""
    return openapi_document(pipe.ext, request.url_root.rstrip("/"))


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The blueprint serving the document (after checking that the dialect it describes is mounted)."""
    described = pipe.settings.openapi_dialect
    if described not in pipe.settings.dialects:
        raise SettingsError(f"TOOLDISCOVERY_OPENAPI_DIALECT is {described!r}, which is not mounted: the OpenAPI "
                            "document describes its call routes (add it to TOOLDISCOVERY_DIALECTS)")
    bp = pipe.blueprint(__name__)

    @pipe.route("" if pipe.prefix else "/openapi.json", "discovery", ["GET"], endpoint="document")
    def document() -> Response:
        return pipe.send(pipe.document(("openapi", request.url_root), lambda _: export_document(pipe)))

    return bp


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, default_prefix="/tools/openapi.json",
                  export_document=export_document, runs_tools=lambda settings: False)
