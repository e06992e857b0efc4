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


MCP = Target("mcp", "MCP clients", MCP_NAME, lambda s: root_lint(s) + refs_lint(s, "MCP clients"),
             object_simplify, rewrite=simplified_listing)
OXP = Target("oxp", "OXP clients", WORD_NAME, lambda s: root_lint(s) + refs_lint(s, "OXP clients"), object_simplify)
OPAL = Target("opal", "Optimizely Opal", WORD_NAME, lambda s: one_type_lint(s, "Opal", nested=False),
              one_type_simplify)
TDP = Target("tdp", "TDP clients", WORD_NAME, lambda s: one_type_lint(s, "TDP", nested=True, kept=first_branch_type),
             lambda s: one_type_simplify(s, kept=first_branch_type))

__all__ = ["MCP", "OPAL", "OXP", "TDP", "simplified_listing"]
