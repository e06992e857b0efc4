"""Mounting the dialects on an app: each dialect of ``TOOLDISCOVERY_DIALECTS`` at its prefix, then
each toolset's own mounts.

A toolset (``TOOLDISCOVERY_TOOLSETS``, ``discovery.mount_toolset``) is a named part of the tools,
those with one of its tags, served again under each dialect it names at a URL of its own: the
dialect's prefix, ``/x/`` and the toolset's name (``/mcp/x/issues``, as GitHub's MCP server
mounts its toolsets; :attr:`.Dialect.toolset_prefix`). Each such mount has a pipeline of its own,
keyed by toolset then dialect, so that everything a pipeline keeps per mount (documents and their
``ETag``, learned answers, the search index of its visible set, the routes the manifest lists) is
the toolset's; credentials, approvals, limits and tasks are the dialect's, unchanged. The full
mounts stay as they are.

A dialect with a read-only form (``Dialect.read_only_suffix``: MCP's ``/readonly``) has each of its
mounts, full or a toolset's, served once more at that suffix with only the tools annotated
``readOnlyHint`` (``TOOLDISCOVERY_READONLY_MOUNTS``, on by default: it only ever shows less).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flask import Flask

from ..identity.sources import Authenticator
from ..serving.core import Core
from ..serving.pipeline import Pipeline
from ..settings import Settings, SettingsError, key
from ..settings_parsers import Toolset
from . import Dialect

#: The pipelines of every toolset's mounts, by toolset name, then dialect name.
Toolsets = dict[str, dict[str, Pipeline]]


def toolsets(settings: Settings, declared: Mapping[str, Toolset], table: Mapping[str, Dialect]) -> dict[str, Toolset]:
    """The toolsets of ``TOOLDISCOVERY_TOOLSETS`` and those ``declared`` with ``mount_toolset``, checked
    against the dialect table: each dialect it names is known, mounted, and serves toolsets."""
    if both := sorted(set(settings.toolsets) & set(declared)):
        raise SettingsError(f"toolset(s) {', '.join(map(repr, both))} declared both in {key('TOOLSETS')} and with "
                            "mount_toolset(): keep one")
    found = {**settings.toolsets, **declared}
    for toolset in found.values():
        where = (f"{key('TOOLSETS')}[{toolset.name!r}]" if toolset.name in settings.toolsets
                 else f"mount_toolset({toolset.name!r})")
        for name in toolset.dialects:
            if name not in table:
                raise SettingsError(f"{where}: unknown dialect {name!r}; known dialects: {', '.join(sorted(table))}")
            if name not in settings.dialects:
                raise SettingsError(f"{where}: dialect {name!r} is not mounted: a toolset is served under mounted "
                                    f"dialects (add it to {key('DIALECTS')})")
            if not table[name].serves_toolsets:
                raise SettingsError(f"{where}: {name} describes the whole app and is not mounted per toolset; "
                                    "name dialects that list or call tools (mcp, explorer, utcp...)")
    return found


def build(core: Core, table: Mapping[str, Dialect], found: Mapping[str, Toolset],
          authenticators: Mapping[str, Authenticator | None], pipelines: Mapping[str, Pipeline]) -> Toolsets:
    """A pipeline for each dialect of each toolset, with the credentials of the dialect's full
    mount; every pipeline (the full mounts' too) is handed the table of them (the manifest lists it)."""
    built: Toolsets = {}
    for pipe in pipelines.values():
        pipe.toolsets = built
    for toolset in found.values():
        mounts: dict[str, Pipeline] = {}
        for name in toolset.dialects:
            dialect = table[name]
            Pipeline(core, dialect, authenticators[name], mounted=mounts, toolset=toolset,
                     prefix=dialect.toolset_prefix(pipelines[name].prefix, toolset.name), toolsets=built)
        built[toolset.name] = mounts
    return built


def read_only(table: Mapping[str, Dialect], authenticators: Mapping[str, Authenticator | None],
              pipelines: Mapping[str, Pipeline], built: Toolsets) -> list[Pipeline]:
    """With ``TOOLDISCOVERY_READONLY_MOUNTS``, a read-only pipeline for every mount (full or a
    toolset's) of a dialect that has a ``read_only_suffix`` (MCP: ``/mcp/readonly``,
    ``/mcp/x/issues/readonly``): the same tools less those not annotated ``readOnlyHint``, the
    same credentials; a table of mounted dialects of its own (it is no full mount)."""
    every = [*pipelines.values(), *(pipe for mounts in built.values() for pipe in mounts.values())]
    return [Pipeline(pipe.core, table[pipe.name], authenticators[pipe.name], mounted={}, toolset=pipe.toolset,
                     prefix=pipe.prefix + suffix, toolsets=built, read_only=True)
            for pipe in every if pipe.settings.readonly_mounts and (suffix := table[pipe.name].read_only_suffix)]


def post_paths(pipelines: Mapping[str, Pipeline], built: Toolsets, more: Iterable[Pipeline] = ()) -> list[str]:
    """Where a POST answer may be learned by the fast path: the endpoint (with or without ``/``) of
    every mount, full, a toolset's or ``more`` (read-only ones), of a dialect whose ``learnable.post``
    is set (MCP's)."""
    every = [*pipelines.values(), *(pipe for mounts in built.values() for pipe in mounts.values()), *more]
    return [path for pipe in every if pipe.dialect.learnable.post is not None
            for path in {pipe.prefix or "/", f"{pipe.prefix}/"}]


def register(app: Flask, table: Mapping[str, Dialect], pipelines: Mapping[str, Pipeline], built: Toolsets,
             authenticators: Mapping[str, Authenticator | None]) -> list[Pipeline]:
    """Register each full mount's blueprints (and its root one, if any), then each toolset's, then
    each read-only mount's (:func:`read_only`; never a root one: ``/.well-known`` documents are the
    full mount's), refusing a mount whose URL the app already serves; the read-only mounts."""
    for name, pipe in pipelines.items():
        dialect = table[name]
        app.register_blueprint(dialect.make_blueprint(pipe), url_prefix=pipe.prefix or None)
        root = dialect.root_blueprint(pipe) if dialect.root_blueprint else None
        if root is not None:
            app.register_blueprint(root)
    for toolset_name, mounts in built.items():
        for name, pipe in mounts.items():
            _check_free(app, pipe, f"toolset {toolset_name!r}", "rename the toolset")
            app.register_blueprint(table[name].make_blueprint(pipe), url_prefix=pipe.prefix or None)
    more = read_only(table, authenticators, pipelines, built)
    for pipe in more:
        _check_free(app, pipe, "the read-only mount", f"set {key('READONLY_MOUNTS')} = False")
        app.register_blueprint(table[pipe.name].make_blueprint(pipe), url_prefix=pipe.prefix or None)
    return more


def _check_free(app: Flask, pipe: Pipeline, what: str, fix: str) -> None:
    """:class:`SettingsError` when a route of the app is at the mount's URL or under it."""
    prefix = pipe.prefix
    for rule in app.url_map.iter_rules():
        if rule.rule == prefix or rule.rule.startswith(prefix + "/"):
            raise SettingsError(f"{what} would be served under {pipe.name} at {prefix}, where the app already "
                                f"routes {rule.rule} ({rule.endpoint}): {fix} or move the route")


__all__ = ["Toolsets", "build", "post_paths", "read_only", "register", "toolsets"]
