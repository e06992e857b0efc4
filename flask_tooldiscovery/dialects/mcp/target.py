"""What MCP clients accept of a tool definition (``flask tools check --target mcp``): a name of
1-128 letters, digits, ``_``, ``-`` and ``.``, an object input schema without a root union and
without references (not every client resolves them); ``export --target mcp`` writes the
``tools/list`` answer with every schema made so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...schema.json_schema import inline_refs
from ...tools.model import Tool
from ...tools.targets import Target
from ...tools.targets.object_root import MCP_NAME, object_simplify, refs_lint, root_lint


def simplified_listing(document: Any, tools: Mapping[str, Tool]) -> Any:
    """``tools/list``'s answer with each input schema simplified and each output schema's
    references inlined."""
    return {**document, "tools": [
        {**entry, "inputSchema": object_simplify(tools[entry["name"]].input_schema),
         **({"outputSchema": inline_refs(entry["outputSchema"])} if entry.get("outputSchema") else {})}
        for entry in document["tools"]]}


TARGET = Target("mcp", "MCP clients", MCP_NAME, lambda s: root_lint(s) + refs_lint(s, "MCP clients"),
                object_simplify, rewrite=simplified_listing)
