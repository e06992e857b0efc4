"""What each target model or platform refuses in a tool's schema, and the simplified schema it
accepts: ``flask tools check --target NAME`` and ``flask tools export --target NAME``.

A target is a consumer of tool definitions: a model vendor's function-calling API (OpenAI strict
mode, Anthropic, Gemini) or a protocol's clients (MCP, Opal, OXP, TDP). Each has a lint (names and
schemas, as sentences) and a simplifier that returns a schema the target accepts. Simplifying keeps
the arguments' shape (a model that follows the simplified schema sends what the tool takes);
constraints the target cannot express move into descriptions, and the tool still checks them. Where
a rule cannot be met without changing the shape (a free-form object in OpenAI strict mode), the
lint keeps saying so and the export falls back to the target's lenient form.

This module holds the table of targets and the export; each vendor's rules are in a module of
their own (:mod:`.openai_strict`, :mod:`.gemini`; Anthropic and the protocols' clients in
:mod:`.object_root`), the schema rewriting they share in :mod:`.schema_rewrite`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...tools.json_schema import inline_refs
from ...tools.model import Tool
from . import gemini, openai_strict
from .object_root import (
    ANTHROPIC_NAME,
    MCP_NAME,
    WORD_NAME,
    object_simplify,
    one_type_lint,
    one_type_simplify,
    refs_lint,
    root_lint,
)
from .schema_rewrite import Schema, dangling_refs, prepare


@dataclass(frozen=True)
class Target:
    """One consumer of tool definitions: its name rule, schema lint and simplifier."""

    name: str
    #: What it is, for messages and ``--help``.
    title: str
    name_pattern: re.Pattern[str]
    lint_schema: Callable[[Schema], list[str]]
    simplify: Callable[[Schema], Schema]
    #: The dialect whose discovery document ``export --target`` writes (``None``: a vendor's tool list).
    dialect: str | None = None

    def lint_name(self, name: str) -> list[str]:
        if self.name_pattern.match(name):
            return []
        return [f"name {name!r} does not match {self.name_pattern.pattern} (exported as {safe_name(self, name)!r})"]

    def lint_tool(self, tool: Tool) -> list[str]:
        """Every problem this target has with ``tool``."""
        return self.lint_name(tool.name) + self.lint_schema(tool.input_schema or {"type": "object"})


def safe_name(target: Target, name: str) -> str:
    """``name`` made to match the target's rule (others replaced by ``_``, cut to 64)."""
    if target.name_pattern.match(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:64] or "tool"
    return cleaned if target.name_pattern.match(cleaned) else f"_{cleaned}"[:64]


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("mcp", "MCP clients", MCP_NAME, lambda s: root_lint(s) + refs_lint(s, "MCP clients"),
           object_simplify, dialect="mcp"),
    Target("openai-strict", "OpenAI function calling, strict mode", openai_strict.NAME,
           lambda s: openai_strict.lint(s) + dangling_refs(s), openai_strict.simplify),
    Target("anthropic", "Anthropic tool use", ANTHROPIC_NAME, root_lint, object_simplify),
    Target("gemini", "Gemini function declarations", gemini.NAME, gemini.lint, gemini.simplify),
    Target("opal", "Optimizely Opal", WORD_NAME, lambda s: one_type_lint(s, "Opal", nested=False),
           one_type_simplify, dialect="opal"),
    Target("oxp", "OXP clients", WORD_NAME, lambda s: root_lint(s) + refs_lint(s, "OXP clients"),
           object_simplify, dialect="oxp"),
    Target("tdp", "TDP clients", WORD_NAME, lambda s: one_type_lint(s, "TDP", nested=True),
           one_type_simplify, dialect="tdp"),
)}


def lint(tools: list[Tool], targets: list[str]) -> list[tuple[str, str, str]]:
    """``(tool, target, problem)`` for every tool and every target named."""
    return [(f"{tool.name}@{tool.version}", name, problem)
            for tool in tools for name in targets for problem in TARGETS[name].lint_tool(tool)]


def _openai(tool: Tool, target: Target) -> dict[str, Any]:
    simplified = target.simplify(tool.input_schema)
    strict = not target.lint_schema(simplified)
    return {"type": "function", "function": {
        "name": safe_name(target, tool.name), "description": tool.description_or_title,
        "parameters": simplified if strict else prepare(tool.input_schema), "strict": strict}}


def _gemini(tool: Tool, target: Target) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": safe_name(target, tool.name), "description": tool.description_or_title}
    parameters = target.simplify(tool.input_schema)
    if parameters.get("properties"):  # a function without parameters leaves them unset
        declaration["parameters"] = parameters
    return declaration


def export(ext: Any, name: str) -> Any:
    """The tool list (or discovery document) ``name`` accepts, its schemas simplified. Dialect
    targets need a request context (their documents hold URLs)."""
    target = TARGETS[name]
    tools = ext.tools().latest()
    if name == "openai-strict":
        return [_openai(t, target) for t in tools]
    if name == "anthropic":
        return [{"name": safe_name(target, t.name), "description": t.description_or_title,
                 "input_schema": target.simplify(t.input_schema)} for t in tools]
    if name == "gemini":
        return {"functionDeclarations": [_gemini(t, target) for t in tools]}
    dialect = ext.dialect(str(target.dialect))
    document = dialect.export_document(ext.pipeline(dialect.name))
    if name == "mcp":  # tools/list, each input schema self-contained without references
        by_name = {t.name: t for t in tools}
        document = {**document, "tools": [
            {**entry, "inputSchema": target.simplify(by_name[entry["name"]].input_schema),
             **({"outputSchema": inline_refs(entry["outputSchema"])} if entry.get("outputSchema") else {})}
            for entry in document["tools"]]}
    return document


__all__ = ["TARGETS", "Target", "export", "lint", "safe_name"]
