"""``flask tools check --target NAME`` and ``flask tools export --target NAME``: the targets an
app's extension knows (the model vendors', and those its dialects declare), the lint against them,
and the export of the tools as a target accepts them."""

from __future__ import annotations

from typing import Any

from ..tools.model import Tool
from ..tools.targets import VENDORS, Target


def targets(ext: Any) -> dict[str, Target]:
    """Every target, by name: the vendors', then each dialect's of the extension's table."""
    found = dict(VENDORS)
    for name in ext.dialect_names:
        dialect = ext.dialect(name)
        for target in (dialect.target, *dialect.more_targets):
            if target is not None:
                found.setdefault(target.name, target)
    return found


def dialect_of(ext: Any, target: Target) -> str | None:
    """The dialect that declares ``target`` (``None``: a vendor's)."""
    return next((name for name in ext.dialect_names
                 if target is ext.dialect(name).target or target in ext.dialect(name).more_targets), None)


def mounted(ext: Any) -> list[str]:
    """The dialects the current app mounts."""
    return list(ext.pipelines())


def lint(ext: Any, tools: list[Tool], chosen: list[Target]) -> list[tuple[str, str, str]]:
    """``(tool, target, problem)`` for every tool and every chosen target, then ``("(server)",
    target, problem)`` for what a target asks of the server as a whole."""
    found = [(f"{tool.name}@{tool.version}", target.name, problem)
             for tool in tools for target in chosen for problem in target.lint_tool(tool)]
    for target in chosen:
        if target.lint_server is not None:
            found += [("(server)", target.name, problem) for problem in target.lint_server(ext.settings, mounted(ext))]
    return found


def export_notes(ext: Any, target: Target) -> list[str]:
    """What ``export --target`` could not derive for ``target`` (to say on stderr)."""
    if target.export_notes is None:
        return []
    return target.export_notes(ext.tools().latest(), ext.settings, mounted(ext))


def export(ext: Any, target: Target) -> Any:
    """The tool list (or discovery document) ``target`` accepts, its schemas simplified. A
    dialect's target needs a request context (its document holds URLs)."""
    tools = ext.tools().latest()
    if target.tool_list is not None:
        return target.tool_list(tools, target)
    dialect = ext.dialect(str(dialect_of(ext, target)))
    assert dialect.export_document is not None, f"{dialect.name} declares a target but no export_document"
    document = dialect.export_document(ext.pipeline(dialect.name))
    return target.rewrite(document, {t.name: t for t in tools}) if target.rewrite is not None else document


__all__ = ["dialect_of", "export", "export_notes", "lint", "mounted", "targets"]
