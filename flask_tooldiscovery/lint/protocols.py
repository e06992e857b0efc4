"""What each protocol's clients accept of a tool definition (``flask tools check --target mcp``,
``opal``, ``tdp``, ``oxp``), declared by its dialect as :attr:`Dialect.target
<flask_tooldiscovery.dialects.Dialect.target>`.

MCP: a name of 1-128 letters, digits, ``_``, ``-`` and ``.``, an object input schema without a root
union and without references (not every client resolves them); ``export --target mcp`` writes the
``tools/list`` answer with every schema made so. OXP: word names, an object schema, no references.
Opal and TDP: word names and one type per parameter (TDP in nested objects too). Opal's rules are
also what ``flask tools check`` reports for a mounted ``opal`` dialect (:data:`OPAL`'s
``lint_tool``): they are written once, here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..schema.json_schema import inline_refs
from ..settings import Settings
from ..tools.model import Tool
from .object_root import (
    MCP_NAME,
    WORD_NAME,
    first_branch_type,
    object_simplify,
    one_type_lint,
    one_type_simplify,
    refs_lint,
    root_lint,
)
from .targets import Target


def simplified_listing(document: Any, tools: Mapping[str, Tool]) -> Any:
    """``tools/list``'s answer with each input schema simplified and each output schema's
    references inlined."""
    return {**document, "tools": [
        {**entry, "inputSchema": object_simplify(tools[entry["name"]].input_schema),
         **({"outputSchema": inline_refs(entry["outputSchema"])} if entry.get("outputSchema") else {})}
        for entry in document["tools"]]}


#: The most tools some MCP clients load from their servers (VS Code and GitHub Copilot: 128).
CLIENT_TOOL_CAP = 128


def listing_size_lint(tools: list[Tool], settings: Settings) -> list[str]:
    """More tools in one ``tools/list`` than a client such as VS Code loads, with nothing that
    would list fewer (tool search off, or on only past a larger size; no toolsets to offer instead)."""
    shown = {tool.name for tool in tools if tool.model_visible}
    search_from = settings.tool_search
    if len(shown) <= CLIENT_TOOL_CAP or (search_from is not None and search_from <= CLIENT_TOOL_CAP) \
            or settings.toolsets:
        return []
    cause = ("tool search is off" if search_from is None
             else f"tool search starts only past {search_from} tools")
    return [f"tools/list shows {len(shown)} tools and {cause}: VS Code and GitHub Copilot load at most "
            f"{CLIENT_TOOL_CAP} tools, and every tool's schema takes room in the model's context. Set "
            f"TOOLDISCOVERY_TOOL_SEARCH = True (or a size of at most {CLIENT_TOOL_CAP}), or split the "
            "tools into toolsets (TOOLDISCOVERY_TOOLSETS)."]


MCP = Target("mcp", "MCP clients", MCP_NAME, lambda s: root_lint(s) + refs_lint(s, "MCP clients"),
             object_simplify, rewrite=simplified_listing, lint_tool_list=listing_size_lint)
OXP = Target("oxp", "OXP clients", WORD_NAME, lambda s: root_lint(s) + refs_lint(s, "OXP clients"), object_simplify)
OPAL = Target("opal", "Optimizely Opal", WORD_NAME, lambda s: one_type_lint(s, "Opal", nested=False),
              one_type_simplify)
TDP = Target("tdp", "TDP clients", WORD_NAME, lambda s: one_type_lint(s, "TDP", nested=True, kept=first_branch_type),
             lambda s: one_type_simplify(s, kept=first_branch_type))

__all__ = ["CLIENT_TOOL_CAP", "MCP", "OPAL", "OXP", "TDP", "listing_size_lint", "simplified_listing"]
