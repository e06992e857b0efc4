"""The dialect contract: what a wire protocol gives the core, and the table of built-in ones.

A dialect is one module (or package) that ends with ``DIALECT = Dialect(...)``, and the
:class:`Dialect` is the whole story of it: the protocol and version it speaks, where it mounts, the
blueprint it builds from the :class:`~flask_tooldiscovery.serving.pipeline.Pipeline` it is handed
(which holds the settings, credentials and caches), its one error mapping, the headers browsers
may send and read, its client :class:`~.driver.Driver` (``flask tools check --replay`` and the
conformance suite speak it through that), its lint, its export, and what the discovery manifest
and the Server Card say of it. Nothing else in the package names a dialect: the manifest, the
Server Card and the CLI read these fields. The table belongs to each extension instance:
``ToolDiscovery(dialects=[...])`` or ``discovery.add_dialect(...)``; nothing here is changed at
run time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import STATUS_NAMES, CoreError
from ..serving.fastpath import Learnable

if TYPE_CHECKING:  # pragma: no cover
    from flask import Blueprint

    from ..identity.sources import Authenticator
    from ..lint.targets import Target
    from ..serving.pipeline import Pipeline
    from ..serving.root import Root
    from ..settings import DialectSettings, Settings
    from ..tasks.runner import Finisher
    from ..tools.model import Tool
    from .driver import Driver


def default_error_response(exc: CoreError) -> tuple[Any, int]:
    """``{"error": message}`` with the error's status: for dialects without a shape of their own."""
    return {"error": exc.message}, exc.status


@dataclass(frozen=True)
class Protocol:
    """The wire protocol a dialect speaks, as the discovery manifest and the Server Card name it."""

    #: Its name (``"Open eXecution Protocol"``).
    name: str
    #: The versions it serves, oldest first (empty: the protocol has none).
    versions: tuple[str, ...] = ()
    #: The MCP transport it serves (``"streamable-http"``), which makes it a remote a Server Card
    #: lists; ``None`` for any other protocol.
    transport: str | None = None

    @property
    def version(self) -> str | None:
        """The newest version it serves (``None``: none)."""
        return self.versions[-1] if self.versions else None


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
    #: The protocol it speaks (``None``: none of its own; the manifest then names the dialect).
    protocol: Protocol | None = None
    #: Request headers its browser clients send, for CORS preflights (``Name-*``: a family).
    cors_headers: tuple[str, ...] = ()
    #: Response headers of its own that browser clients may read (the core's own are always exposed).
    exposed_headers: tuple[str, ...] = ()
    #: What it does with a task of its own once it ended, when the call asked for it (``then=`` of
    #: ``Tasks.start``): ``(pipeline, task, attempt) -> None`` when done, else the seconds to wait
    #: before the next attempt (Opal: POST the result to the call's callback URL).
    finish_task: Finisher | None = None
    #: Request headers of its protocol that a task of its own carries to where it runs (for
    #: ``ctx.request.headers``; sealed on the Celery engine): never one that carries a credential.
    task_headers: tuple[str, ...] = ()
    #: How its clients call tools: ``flask tools check --replay`` and the conformance suite use it.
    driver: Driver | None = None
    #: A key under which two tools of one app may not meet (OXP ids); checked at registration.
    tool_key: Callable[[Settings], Callable[[Tool], Hashable]] | None = None
    #: ``flask tools export <name>``: its discovery document, ``(pipeline, root) -> document``, where
    #: ``root`` (``serving.root.Root``) says where the app is served, for absolute URLs: its
    #: view passes the request's, ``flask tools export`` its ``--base-url``'s (no request is made).
    export_document: Callable[[Pipeline, Root], Any] | None = None
    #: Why it would run tools for anyone, or ``None`` (logged once by ``init_app``).
    security_warning: Callable[[Settings, Authenticator | None], str | None] | None = None
    #: ``flask tools check``: problems this protocol's clients would have with a tool.
    lint_tool: Callable[[Tool], list[str]] | None = None
    #: ``flask tools check/export --target <name>``: what its clients accept of a tool's schema.
    target: Target | None = None
    #: More ``--target`` names: platforms built on its clients, with rules of their own.
    more_targets: tuple[Target, ...] = ()
    #: ``flask tools export openapi``: OpenAPI path items of its execution endpoints.
    openapi_paths: Callable[[Pipeline], dict[str, Any]] | None = None
    #: Whether its routes run tools with these settings (False: it only describes them).
    runs_tools: Callable[[Settings], bool] = lambda settings: True
    #: The extension's auth hook (``@discovery.auth_hook``, F4), when one is set, is an identity
    #: source of its calls, asked around each (its views run calls through ``pipeline.admitted``).
    takes_auth_hook: bool = False
    #: Its own ``TOOLDISCOVERY_*`` keys: a frozen dataclass of ``setting(...)`` fields, parsed at
    #: ``init_app`` and read with ``Block.of(pipe.settings)`` (see :class:`~..settings.DialectSettings`).
    settings: type[DialectSettings] | None = None
    #: A second blueprint, mounted at the app's root outside its prefix (``/.well-known/...``
    #: documents); the factory returns ``None`` when these settings need none.
    root_blueprint: Callable[[Pipeline], Blueprint | None] | None = None
    #: The discovery manifest's top-level entry named after it (``null`` there while it is not
    #: mounted): ``(pipeline, root, its entry under "dialects", documents about it) -> value``, the
    #: manifest served at ``root`` (as ``export_document``'s). The documents are those dialects with
    #: ``describes_remote`` serve, for a remote (``transport``).
    manifest_section: Callable[[Pipeline, Root, Mapping[str, Any], Mapping[str, Any]], Any] | None = None
    #: It serves a document about the mounted remote (a dialect whose protocol has a
    #: ``transport``), its ``export_document``: the manifest lists it in that remote's section, its
    #: URL as ``<key>Url`` and the document as ``<key>`` (the Server Card: ``"serverCard"``).
    describes_remote: str | None = None
    #: It lists tools only an interface calls (``visibility=["app"]``), because a host between it
    #: and the model hides them (MCP Apps), or a developer reads it (the explorer); others leave
    #: them out of their lists (they stay callable by name).
    lists_app_tools: bool = False
    #: Which of its answers the fast path may learn and give again without Flask: its discovery
    #: GETs, and (with a body shape) discovery reads made by POST, as MCP's ``tools/list``.
    learnable: Learnable = field(default_factory=Learnable)
    #: It may be mounted again for a toolset (``TOOLDISCOVERY_TOOLSETS``), serving only its tools;
    #: False for a document about the whole app (the manifest, the Server Card).
    serves_toolsets: bool = True
    #: Where a toolset's mount of it goes: ``(its prefix, the toolset's name) -> prefix``
    #: (``/mcp`` -> ``/mcp/x/issues``, as GitHub's MCP server has it).
    toolset_prefix: Callable[[str, str], str] = lambda prefix, name: f"{prefix}/x/{name}"
    #: Each of its mounts (full or a toolset's) is served again at this suffix with only the tools
    #: annotated ``readOnlyHint`` (``TOOLDISCOVERY_READONLY_MOUNTS``; MCP: ``/readonly``, as GitHub's
    #: MCP server has it), or ``None``: no read-only form.
    read_only_suffix: str | None = None
    #: The optional request headers that narrow what a client sees, as the Server Card describes
    #: them for a remote of it (``(its full mount's pipeline, the remote is a toolset's) -> headers``:
    #: MCP's ``X-MCP-Toolsets`` and ``X-MCP-Readonly``), or ``None``.
    card_headers: Callable[[Pipeline, bool], list[dict[str, Any]]] | None = None


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


def dialect_of(pipe: Pipeline) -> Dialect:
    """The :class:`Dialect` a pipeline serves (the pipeline itself types it by what it reads)."""
    dialect = pipe.dialect
    if not isinstance(dialect, Dialect):
        raise TypeError(f"pipeline {pipe.name!r} serves {dialect!r}, not a Dialect")
    return dialect


def table_of(pipe: Pipeline) -> dict[str, Dialect]:
    """Every dialect of the extension's table that ``pipe``'s app was built with, mounted or not."""
    return {name: d for name, d in pipe.core.dialects.items() if isinstance(d, Dialect)}


def load(module: str) -> Dialect:
    """The ``DIALECT`` of ``module``."""
    dialect = importlib.import_module(module).DIALECT
    if not isinstance(dialect, Dialect):
        raise TypeError(f"{module}.DIALECT is not a Dialect")
    return dialect


def status_name(status: int) -> str:
    """``404`` -> ``"Not Found"``."""
    return STATUS_NAMES.get(status, "Error")


__all__ = ["BUILTIN", "Dialect", "Protocol", "default_error_response", "dialect_of", "load", "status_name",
           "table_of"]
