"""What the Claude connectors directory asks of a remote MCP server (``flask tools check --target
claude-directory``), as Anthropic's MCP directory policy and its submission checklist state them.

Checked from the registry and the settings: every tool with ``annotations.title`` and a
``readOnlyHint`` or ``destructiveHint``; names of at most 64 letters, digits, ``_`` and ``-``; a
description; the schemas MCP clients take; the server reached over streamable HTTP (the ``mcp``
dialect mounted) and authenticating by OAuth or not at all (a static bearer token is for private
deployments). Not checkable here, and said by :data:`NOT_CHECKED`: that descriptions match what a
tool does and do not steer the model toward other servers, a privacy policy, the data a tool
collects, and the reviewers' own testing.

``export --target claude-directory`` writes the ``tools/list`` answer with what can be derived (a
title from the tool's name, schemas simplified) and names, on stderr, what only the app can say.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..settings import Settings
from ..tools.model import Tool
from .object_root import ANTHROPIC_NAME, object_simplify, refs_lint, root_lint
from .protocols import simplified_listing
from .targets import RemoteAuth, Target

NAME = "claude-directory"
HINTS = ("readOnlyHint", "destructiveHint")
#: What the directory's review asks that no registry can show.
NOT_CHECKED = ("that each description says narrowly and truly what the tool does and when to call it",
               "a privacy policy, and that tools collect only the data they need",
               "the reviewers' own test of the server with a test account")


def derived_title(tool: Tool) -> str:
    """A title for a tool that has none: its name in words (``get_weather`` -> ``Get weather``)."""
    words = tool.name.replace("_", " ").replace("-", " ").replace(".", " ").split()
    return " ".join(words)[:1].upper() + " ".join(words)[1:] if words else tool.name


def title_of(tool: Tool) -> str | None:
    """``annotations.title`` when it is a non-empty string."""
    title = (tool.annotations or {}).get("title")
    return title if isinstance(title, str) and title.strip() else None


def hinted(tool: Tool, hints: tuple[str, ...] = HINTS) -> list[str]:
    """Which of ``hints`` the tool's annotations set to a boolean."""
    return [hint for hint in hints if isinstance((tool.annotations or {}).get(hint), bool)]


def lint_tool(tool: Tool) -> list[str]:
    problems = []
    if title_of(tool) is None:
        problems.append(f"no annotations.title (export writes {derived_title(tool)!r}; "
                        "declare one with annotations={'title': ...})")
    if not hinted(tool):
        problems.append("neither annotations.readOnlyHint nor destructiveHint: say whether it only reads "
                        "(readOnlyHint: True) or may change or delete something (destructiveHint)")
    if not (tool.description or "").strip():
        problems.append("no description: reviewers and the model read what it does and when to call it there")
    return problems


ServerLint = Callable[[Settings, Collection[str]], list[str]]


def server_lint(auth: Callable[[Settings], RemoteAuth], *, who: str) -> ServerLint:
    """What a directory of remote MCP servers asks of the server as a whole: the ``mcp`` dialect
    mounted, and OAuth or no authentication (``auth`` reads how MCP authenticates)."""

    def lint_server(settings: Settings, mounted: Collection[str]) -> list[str]:
        problems = []
        if "mcp" not in mounted:
            problems.append(f"{who} lists remote MCP servers over streamable HTTP: mount the mcp dialect "
                            "(TOOLDISCOVERY_DIALECTS)")
        found = auth(settings)
        if found.static_token and not found.oauth:
            problems.append(f"a static bearer token (TOOLDISCOVERY_MCP_BEARER_TOKEN) is for private deployments: "
                            f"{who} takes OAuth (TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS, or the app's own: "
                            "TOOLDISCOVERY_OAUTH_SERVER) or no authentication")
        return problems

    return lint_server


def titled_listing(document: Any, tools: Mapping[str, Tool]) -> Any:
    """``tools/list``'s answer as MCP clients take it, each tool with a title in its annotations."""
    listing = simplified_listing(document, tools)
    entries = []
    for entry in listing["tools"]:
        annotations = dict(entry.get("annotations") or {})
        annotations.setdefault("title", entry.get("title") or derived_title(tools[entry["name"]]))
        entries.append({**entry, "annotations": annotations})
    return {**listing, "tools": entries}


def target(auth: Callable[[Settings], RemoteAuth]) -> Target:
    """The ``claude-directory`` target of the MCP dialect, whose ``auth`` says how it authenticates."""
    lint_server = server_lint(auth, who="the directory")

    def export_notes(tools: list[Tool], settings: Settings, mounted: Collection[str]) -> list[str]:
        """What the export could not derive: the hints (only the app knows what a tool does), and
        what the server as a whole lacks."""
        unhinted = [t.name for t in tools if not hinted(t)]
        notes = [f"readOnlyHint or destructiveHint of {', '.join(unhinted)}"] if unhinted else []
        return notes + lint_server(settings, mounted)

    return Target(NAME, "the Claude connectors directory", ANTHROPIC_NAME,
                  lambda s: root_lint(s) + refs_lint(s, "MCP clients"), object_simplify, rewrite=titled_listing,
                  lint_more=lint_tool, lint_server=lint_server, export_notes=export_notes,
                  not_checked=NOT_CHECKED)


__all__ = ["HINTS", "NAME", "NOT_CHECKED", "derived_title", "hinted", "lint_tool", "server_lint", "target",
           "title_of", "titled_listing"]
