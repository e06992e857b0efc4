"""What OpenAI's review of ChatGPT apps (remote MCP servers, the Apps SDK) asks that the registry
shows (``flask tools check --target chatgpt``), as its app submission guidelines state them.

Checked: every tool sets the three hints the submission form asks a justification of,
``readOnlyHint``, ``destructiveHint`` and ``openWorldHint``, and they agree (a tool that only reads
destroys nothing); a description and a title a person can read; names of at most 64 letters,
digits, ``_`` and ``-``; the schemas MCP clients take; the server over streamable HTTP (the ``mcp``
dialect mounted) with OAuth or no authentication. Not checkable here (:data:`NOT_CHECKED`): a
public HTTPS address, a published privacy policy, a verified organization, that the hints and
descriptions are true of what each tool does, and that tools ask only for the data they need.
"""

from __future__ import annotations

from collections.abc import Callable

from ..settings import Settings
from ..tools.model import Tool
from .claude_directory import derived_title, hinted, server_lint, title_of, titled_listing
from .object_root import ANTHROPIC_NAME, object_simplify, refs_lint, root_lint
from .targets import RemoteAuth, Target

NAME = "chatgpt"
HINTS = ("readOnlyHint", "destructiveHint", "openWorldHint")
NOT_CHECKED = ("a public HTTPS address for the MCP endpoint (see flask tools connect)",
               "a published privacy policy, and that tools ask only for the data they need",
               "a verified OpenAI organization, screenshots and test credentials for the reviewers",
               "that the hints and each description are true of what the tool does")


def lint_tool(tool: Tool) -> list[str]:
    problems = []
    annotations = tool.annotations or {}
    missing = [hint for hint in HINTS if hint not in hinted(tool, HINTS)]
    if missing:
        problems.append(f"annotations.{', '.join(missing)} not set: the submission asks each tool's "
                        "readOnlyHint, destructiveHint and openWorldHint (True or False) and why")
    if annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") is True:
        problems.append("readOnlyHint and destructiveHint are both True: a tool that only reads destroys nothing")
    if not (tool.description or "").strip():
        problems.append("no description: the model picks tools by what their descriptions say")
    if title_of(tool) is None and not (tool.title or "").strip():
        problems.append(f"no title (export writes {derived_title(tool)!r}): declare annotations={{'title': ...}}")
    return problems


def target(auth: Callable[[Settings], RemoteAuth]) -> Target:
    """The ``chatgpt`` target of the MCP dialect, whose ``auth`` says how it authenticates."""
    return Target(NAME, "ChatGPT apps (OpenAI's review)", ANTHROPIC_NAME,
                  lambda s: root_lint(s) + refs_lint(s, "MCP clients"), object_simplify, rewrite=titled_listing,
                  lint_more=lint_tool, lint_server=server_lint(auth, who="ChatGPT"), not_checked=NOT_CHECKED)


__all__ = ["HINTS", "NAME", "NOT_CHECKED", "lint_tool", "target"]
