"""What the Claude connectors directory asks of a remote MCP server (``flask tools check --target
claude-directory``), as its review criteria state them: every tool with ``annotations.title`` and a
``readOnlyHint`` or ``destructiveHint``, names of at most 64 letters, digits, ``_`` and ``-``, the
schemas MCP clients take; the server reached over streamable HTTP (the ``mcp`` dialect mounted) and
authenticating by OAuth or not at all (a static bearer token is for private deployments).

``export --target claude-directory`` writes the ``tools/list`` answer with what can be derived (a
title from the tool's name, schemas simplified) and names, on stderr, what only the app can say.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ...settings import Settings
from ...tools.model import Tool
from ...tools.targets import Target
from ...tools.targets.object_root import ANTHROPIC_NAME, object_simplify, refs_lint, root_lint
from .settings import McpSettings
from .target import simplified_listing

NAME = "claude-directory"
HINTS = ("readOnlyHint", "destructiveHint")


def derived_title(tool: Tool) -> str:
    """A title for a tool that has none: its name in words (``get_weather`` -> ``Get weather``)."""
    words = tool.name.replace("_", " ").replace("-", " ").replace(".", " ").split()
    return " ".join(words)[:1].upper() + " ".join(words)[1:] if words else tool.name


def _title(tool: Tool) -> str | None:
    title = (tool.annotations or {}).get("title")
    return title if isinstance(title, str) and title.strip() else None


def _hinted(tool: Tool) -> bool:
    return any(isinstance((tool.annotations or {}).get(hint), bool) for hint in HINTS)


def lint_tool(tool: Tool) -> list[str]:
    problems = []
    if _title(tool) is None:
        problems.append(f"no annotations.title (export writes {derived_title(tool)!r}; "
                        "declare one with annotations={'title': ...})")
    if not _hinted(tool):
        problems.append("neither annotations.readOnlyHint nor destructiveHint: say whether it only reads "
                        "(readOnlyHint: True) or may change or delete something (destructiveHint)")
    return problems


def lint_server(settings: Settings, mounted: Collection[str]) -> list[str]:
    problems = []
    if "mcp" not in mounted:
        problems.append("the directory lists remote MCP servers over streamable HTTP: mount the mcp dialect "
                        "(TOOLDISCOVERY_DIALECTS)")
    options = McpSettings.of(settings)
    if options.bearer_token and not options.authorization_servers:
        problems.append("a static bearer token (TOOLDISCOVERY_MCP_BEARER_TOKEN) is for private deployments: "
                        "the directory takes OAuth (TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS) or no authentication")
    return problems


def export_notes(tools: list[Tool], settings: Settings, mounted: Collection[str]) -> list[str]:
    """What the export could not derive: the hints (only the app knows what a tool does), and what
    the server as a whole lacks."""
    unhinted = [t.name for t in tools if not _hinted(t)]
    notes = [f"readOnlyHint or destructiveHint of {', '.join(unhinted)}"] if unhinted else []
    return notes + lint_server(settings, mounted)


def titled_listing(document: Any, tools: Mapping[str, Tool]) -> Any:
    """``tools/list``'s answer as MCP clients take it, each tool with a title in its annotations."""
    listing = simplified_listing(document, tools)
    entries = []
    for entry in listing["tools"]:
        annotations = dict(entry.get("annotations") or {})
        annotations.setdefault("title", entry.get("title") or derived_title(tools[entry["name"]]))
        entries.append({**entry, "annotations": annotations})
    return {**listing, "tools": entries}


TARGET = Target(NAME, "the Claude connectors directory", ANTHROPIC_NAME,
                lambda s: root_lint(s) + refs_lint(s, "MCP clients"), object_simplify, rewrite=titled_listing,
                lint_more=lint_tool, lint_server=lint_server, export_notes=export_notes)
