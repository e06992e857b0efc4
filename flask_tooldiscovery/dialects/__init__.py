"""The dialect contract: what a wire protocol gives the core, and the table of built-in ones.

A dialect is one module that ends with ``DIALECT = Dialect(...)``. It builds its blueprint from
the :class:`~flask_tooldiscovery.pipeline.Pipeline` it is handed (which holds the settings,
credentials and caches), maps the core's errors to its wire shape in ``error_response``, and may
offer an export, a lint and OpenAPI paths. The table belongs to each extension instance:
``ToolDiscovery(dialects=[...])`` or ``discovery.add_dialect(...)``; nothing here is changed at
run time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import STATUS_NAMES, CoreError

if TYPE_CHECKING:  # pragma: no cover
    from flask import Blueprint

    from ..extension import ToolDiscovery
    from ..serving.identity import Authenticator
    from ..serving.pipeline import Pipeline
    from ..settings import Settings
    from ..tools.model import Tool


def default_error_response(exc: CoreError) -> tuple[Any, int]:
    """``{"error": message}`` with the error's status: for dialects without a shape of their own."""
    return {"error": exc.message}, exc.status


@dataclass(frozen=True)
class Dialect:
    """A wire protocol as the core sees it."""

    #: The name ``TOOLDISCOVERY_DIALECTS`` uses; also in ``TOOLDISCOVERY_<NAME>_URL_PREFIX``.
    name: str
    #: Builds the dialect's blueprint (``pipeline.blueprint(...)`` plus its routes).
    make_blueprint: Callable[[Pipeline], Blueprint]
    #: Where it mounts unless ``TOOLDISCOVERY_<NAME>_URL_PREFIX`` says otherwise.
    default_prefix: str = ""
    #: A core error as ``(wire body, HTTP status)``: the dialect's only error code.
    error_response: Callable[[CoreError], tuple[Any, int]] = default_error_response
    #: The credentials its tool-running routes need, from the settings (``None``: open).
    authenticator: Callable[[Settings], Authenticator | None] | None = None
    #: Discovery may be read by any website (CORS for every origin), as Opal's is.
    public_discovery: bool = False
    #: Request headers its browser clients send, for CORS preflights (``Name-*``: a family).
    cors_headers: tuple[str, ...] = ()
    #: A key under which two tools of one app may not meet (OXP ids); checked at registration.
    tool_key: Callable[[Settings], Callable[[Tool], Hashable]] | None = None
    #: ``flask tools export <name>``: its discovery document.
    export_document: Callable[[Pipeline], Any] | None = None
    #: Why it would run tools for anyone, or ``None`` (logged once by ``init_app``).
    security_warning: Callable[[Settings, ToolDiscovery], str | None] | None = None
    #: ``flask tools check``: problems this protocol's clients would have with a tool.
    lint_tool: Callable[[Tool], list[str]] | None = None
    #: ``flask tools export openapi``: OpenAPI path items of its execution endpoints.
    openapi_paths: Callable[[Pipeline], dict[str, Any]] | None = None
    #: Whether its routes run tools with these settings (False: it only describes them).
    runs_tools: Callable[[Settings], bool] = lambda settings: True
    #: The extension's auth hook (``@discovery.auth_hook``, F4), when one is set, is an identity
    #: source of its calls, asked around each (its views run calls through ``pipeline.admitted``).
    takes_auth_hook: bool = False
    #: Setting names it reads through ``settings.raw`` (so they are not warned about).
    config_keys: tuple[str, ...] = ()
    #: A second blueprint, mounted at the app's root outside its prefix (``/.well-known/...``
    #: documents); the factory returns ``None`` when these settings need none.
    root_blueprint: Callable[[Pipeline], Blueprint | None] | None = None


#: The dialects this package ships, by name: the module whose ``DIALECT`` describes each.
BUILTIN: dict[str, str] = {
    "explorer": "flask_tooldiscovery.dialects.explorer.dialect",
    "opal": "flask_tooldiscovery.dialects.opal.dialect",
    "oxp": "flask_tooldiscovery.dialects.oxp",
    "tdp": "flask_tooldiscovery.dialects.tdp.dialect",
    "mcp": "flask_tooldiscovery.dialects.mcp.dialect",
    "utcp": "flask_tooldiscovery.dialects.utcp",
    "openapi": "flask_tooldiscovery.dialects.openapi",
    "server_card": "flask_tooldiscovery.dialects.server_card",
    "manifest": "flask_tooldiscovery.dialects.manifest",
}


def load(module: str) -> Dialect:
    """The ``DIALECT`` of ``module``."""
    dialect = importlib.import_module(module).DIALECT
    if not isinstance(dialect, Dialect):
        raise TypeError(f"{module}.DIALECT is not a Dialect")
    return dialect


def status_name(status: int) -> str:
    """``404`` -> ``"Not Found"``."""
    return STATUS_NAMES.get(status, "Error")


__all__ = ["BUILTIN", "Dialect", "default_error_response", "load", "status_name"]
