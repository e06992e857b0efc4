"""``flask tools check``: the rules every tool meets whatever reads it, each mounted dialect's own
(asked through :attr:`Dialect.lint_tool <flask_tooldiscovery.dialects.Dialect.lint_tool>`), and,
with ``--target NAME``, a target's (the model vendors', and those the dialects of an extension's
table declare). The CLI prints what these return."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ..schema.check import InvalidSchemaError, check_schema
from ..schema.json_schema import inline_refs
from ..tools.model import Tool
from .targets import VENDORS, Target

#: ``(tool or "(server)", dialect or target or "all", problem)``.
Finding = tuple[str, str, str]


class Linted(Protocol):
    """What the lint reads of a dialect (:class:`~flask_tooldiscovery.dialects.Dialect` is one)."""

    @property
    def lint_tool(self) -> Callable[[Tool], list[str]] | None: ...
    @property
    def target(self) -> Target | None: ...
    @property
    def more_targets(self) -> tuple[Target, ...]: ...


def _dialects(ext: Any) -> Iterable[tuple[str, Linted]]:
    """Every dialect of the extension's table, by name."""
    return ((name, ext.dialect(name)) for name in ext.dialect_names)


def targets(ext: Any) -> dict[str, Target]:
    """Every target, by name: the vendors', then each dialect's of the extension's table."""
    found = dict(VENDORS)
    for _, dialect in _dialects(ext):
        for target in (dialect.target, *dialect.more_targets):
            if target is not None:
                found.setdefault(target.name, target)
    return found


def dialect_of(ext: Any, target: Target) -> str | None:
    """The dialect that declares ``target`` (``None``: a vendor's)."""
    return next((name for name, dialect in _dialects(ext)
                 if target is dialect.target or target in dialect.more_targets), None)


def mounted(ext: Any) -> list[str]:
    """The dialects the current app mounts."""
    return list(ext.pipelines())


def common(tool: Tool) -> list[str]:
    """What every reader of tools needs: a description, valid schemas, described parameters."""
    found = []
    if not (tool.description or "").strip():
        found.append("no description")
    for what, schema in (("input schema", tool.input_schema), ("output schema", tool.output_schema)):
        if schema is None:
            continue
        try:
            check_schema(schema, what=what)
        except InvalidSchemaError as exc:
            found.append(str(exc))
    props = (inline_refs(tool.input_schema or {}).get("properties") or {})
    for pname, prop in props.items():
        if isinstance(prop, dict) and not prop.get("description") and not any(
                isinstance(v, dict) and v.get("description") for v in prop.get("anyOf", [])):
            found.append(f"parameter {pname!r} has no description")
    return found


def lint(ext: Any, tools: list[Tool]) -> list[Finding]:
    """``(tool, dialect or "all", problem)`` for every tool: the common rules, then each mounted
    dialect's own; then ``("(server)", dialect, problem)`` for what each mounted dialect's clients
    ask of the tools taken together (how many they load)."""
    found: list[Finding] = []
    checks = [(name, ext.dialect(name).lint_tool) for name in ext.settings.dialects]
    for tool in tools:
        label = f"{tool.name}@{tool.version}"
        found += [(label, "all", problem) for problem in common(tool)]
        for name, check in checks:
            found += [(label, name, problem) for problem in (check(tool) if check else [])]
    for name in ext.settings.dialects:
        target = ext.dialect(name).target
        if target is not None and target.lint_tool_list is not None:
            found += [("(server)", name, problem) for problem in target.lint_tool_list(tools, ext.settings)]
    return found


def lint_targets(ext: Any, tools: list[Tool], chosen: list[Target]) -> list[Finding]:
    """``(tool, target, problem)`` for every tool and every chosen target (a model vendor's, whose
    list a model is handed, only for the tools a model may call: not one only an interface calls),
    then ``("(server)", target, problem)`` for what a target asks of the server as a whole."""
    found = [(f"{tool.name}@{tool.version}", target.name, problem)
             for tool in tools for target in chosen if target.tool_list is None or tool.model_visible
             for problem in target.lint_tool(tool)]
    for target in chosen:
        if target.lint_tool_list is not None:
            found += [("(server)", target.name, problem) for problem in target.lint_tool_list(tools, ext.settings)]
        if target.lint_server is not None:
            found += [("(server)", target.name, problem) for problem in target.lint_server(ext.settings, mounted(ext))]
    return found


__all__ = ["Finding", "Linted", "common", "dialect_of", "lint", "lint_targets", "mounted", "targets"]
