"""What each target model or platform refuses in a tool's schema, and the simplified schema it
accepts: ``flask tools check --target NAME`` and ``flask tools export --target NAME``.

A target is a consumer of tool definitions: a model vendor's function-calling API (OpenAI strict
mode, Anthropic, Gemini: :data:`VENDORS`) or a protocol's clients (each dialect declares its own
in :attr:`Dialect.target <flask_tooldiscovery.dialects.Dialect.target>`). Each has a lint (names
and schemas, as sentences) and a simplifier that returns a schema the target accepts. Simplifying
keeps the arguments' shape (a model that follows the simplified schema sends what the tool takes);
constraints the target cannot express move into descriptions, and the tool still checks them. Where
a rule cannot be met without changing the shape (a free-form object in OpenAI strict mode), the
lint keeps saying so and the export falls back to the target's lenient form.

This module holds :class:`Target`, what a directory asks of a remote server's authentication
(:class:`RemoteAuth`), and the vendors' table; each vendor's rules are in a module of their own
(:mod:`.openai_strict`, :mod:`.gemini`; Anthropic and the rules protocols' clients share in
:mod:`.object_root`), the protocols' targets in :mod:`.protocols`, the directories' in
:mod:`.claude_directory` and :mod:`.chatgpt`, the schema rewriting they share in :mod:`.schema_rewrite`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..settings import Settings
from ..tools.model import Tool
from . import gemini, openai_strict
from .object_root import ANTHROPIC_NAME, object_simplify, root_lint
from .schema_rewrite import Schema, dangling_refs, prepare


@dataclass(frozen=True)
class Target:
    """One consumer of tool definitions: its name rule, schema lint and simplifier, and what
    ``export --target`` writes for it."""

    name: str
    #: What it is, for messages and ``--help``.
    title: str
    name_pattern: re.Pattern[str]
    lint_schema: Callable[[Schema], list[str]]
    simplify: Callable[[Schema], Schema]
    #: A vendor's tool list of these tools; ``None`` for a protocol's clients, whose export is the
    #: dialect's discovery document.
    tool_list: Callable[[list[Tool], Target], Any] | None = None
    #: How the export rewrites the dialect's document for these clients (the tools by name); ``None``:
    #: as it is.
    rewrite: Callable[[Any, Mapping[str, Tool]], Any] | None = None
    #: What it asks of a tool beyond its name and schema (a platform's rules on annotations...).
    lint_more: Callable[[Tool], list[str]] | None = None
    #: What it asks of the server as a whole, from its settings and the dialects it mounts
    #: (transport, authentication); reported under ``(server)``.
    lint_server: Callable[[Settings, Collection[str]], list[str]] | None = None
    #: What it asks of the tools taken together (how many a client loads at once), from the tools
    #: and the settings; reported under ``(server)``.
    lint_tool_list: Callable[[list[Tool], Settings], list[str]] | None = None
    #: What the export could not derive for it (said after ``export --target``), from the tools,
    #: the settings and the mounted dialects.
    export_notes: Callable[[list[Tool], Settings, Collection[str]], list[str]] | None = None
    #: What its review asks that neither the registry nor the settings can show (said after
    #: ``check --target``, so that a pass is not read as more than it is).
    not_checked: tuple[str, ...] = ()

    def lint_name(self, name: str) -> list[str]:
        if self.name_pattern.match(name):
            return []
        return [f"name {name!r} does not match {self.name_pattern.pattern} (exported as {safe_name(self, name)!r})"]

    def lint_tool(self, tool: Tool) -> list[str]:
        """Every problem this target has with ``tool``."""
        more = self.lint_more(tool) if self.lint_more is not None else []
        return self.lint_name(tool.name) + self.lint_schema(tool.input_schema or {"type": "object"}) + more


@dataclass(frozen=True)
class RemoteAuth:
    """How a remote server authenticates its callers, as the dialect that serves it reads its
    settings: what a directory of connectors asks of the server as a whole."""

    #: A static bearer token is accepted: a credential only a private deployment can hand out.
    static_token: bool = False
    #: OAuth: the protected resource metadata names an authorization server a client signs in at.
    oauth: bool = False


def safe_name(target: Target, name: str) -> str:
    """``name`` made to match the target's rule (other characters replaced by ``_``, cut to 64)."""
    if target.name_pattern.match(name):
        return name
    for others in (r"[^A-Za-z0-9_-]+", r"[^A-Za-z0-9_]+"):  # word names (Opal, TDP) take no "-" either
        cleaned = re.sub(others, "_", name)[:64] or "tool"
        for candidate in (cleaned, f"_{cleaned}"[:64]):
            if target.name_pattern.match(candidate):
                return candidate
    return cleaned


def _openai(tools: list[Tool], target: Target) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        simplified = target.simplify(tool.input_schema)
        strict = not target.lint_schema(simplified)
        out.append({"type": "function", "function": {
            "name": safe_name(target, tool.name), "description": tool.description_or_title,
            "parameters": simplified if strict else prepare(tool.input_schema), "strict": strict}})
    return out


def _anthropic(tools: list[Tool], target: Target) -> list[dict[str, Any]]:
    return [{"name": safe_name(target, t.name), "description": t.description_or_title,
             "input_schema": target.simplify(t.input_schema)} for t in tools]


def _gemini(tools: list[Tool], target: Target) -> dict[str, Any]:
    declarations = []
    for tool in tools:
        declaration: dict[str, Any] = {"name": safe_name(target, tool.name), "description": tool.description_or_title}
        parameters = target.simplify(tool.input_schema)
        if parameters.get("properties"):  # a function without parameters leaves them unset
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return {"functionDeclarations": declarations}


#: The model vendors' function-calling APIs, by name.
VENDORS: dict[str, Target] = {t.name: t for t in (
    Target("openai-strict", "OpenAI function calling, strict mode", openai_strict.NAME,
           lambda s: openai_strict.lint(s) + dangling_refs(s), openai_strict.simplify, tool_list=_openai),
    Target("anthropic", "Anthropic tool use", ANTHROPIC_NAME, root_lint, object_simplify, tool_list=_anthropic),
    Target("gemini", "Gemini function declarations", gemini.NAME, gemini.lint, gemini.simplify, tool_list=_gemini),
)}


__all__ = ["VENDORS", "RemoteAuth", "Target", "safe_name"]
