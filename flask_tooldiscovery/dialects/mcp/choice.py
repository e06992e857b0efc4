"""A client narrowing what it sees by request headers, as GitHub's MCP server lets it:
``X-MCP-Toolsets`` (toolset names, comma-separated: only the tools of those toolsets, their union;
GitHub's ``all`` and ``default``: every tool) and ``X-MCP-Readonly`` (only the tools annotated
``readOnlyHint``; empty, ``false``, ``f``, ``no``, ``n``, ``0`` or ``off`` in any case mean no,
anything else yes). Both only narrow what the mount would show the caller anyway (its toolset, the
caller's scopes and visibility): never more.

The pipeline asks the narrowing :func:`install` gives it only when a request carries one of the
headers (:attr:`.Pipeline.chosen_by`), so a request without them costs nothing more. What a header
narrows to is a view of the tool set built once per set and choice (:meth:`.ToolSet.narrowed`),
with a fingerprint of its own: its documents, its search index and its learned ``tools/list``
answers (the fast path keeps them per header value and checks the narrowing again) are built once
and kept like a toolset's. A name that is no toolset is refused with the names there are, before
the request is read further (:func:`refusal`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import BadRequest
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from ...tools.registry import ToolSet
from . import jsonrpc as rpc

TOOLSETS_HEADER = "X-MCP-Toolsets"
READONLY_HEADER = "X-MCP-Readonly"
#: The read-only form of every MCP mount (``/mcp/readonly``, ``/mcp/x/issues/readonly``).
READONLY_SUFFIX = "/readonly"
#: The WSGI keys of the two headers.
KEYS = ("HTTP_X_MCP_TOOLSETS", "HTTP_X_MCP_READONLY")
#: ``X-MCP-Readonly`` values that mean no (trimmed, any case), as GitHub's server reads them.
NO = frozenset({"", "false", "f", "no", "n", "0", "off"})
#: Names GitHub's server takes for more than one toolset (every one; its default ones): here both
#: are the mount's whole list, unless the app declares a toolset of that name.
EVERY = frozenset({"all", "default"})
#: Distinct header values whose reading is kept.
KEPT = 256


@dataclass(frozen=True)
class Choice:
    """What a request's headers narrow to: the toolsets it named (sorted; empty: none named) and
    their tags (``None``: no toolset narrowing), and whether it shows only tools that read."""

    toolsets: tuple[str, ...]
    tags: frozenset[str] | None
    read_only: bool

    def keep(self, tool: Tool) -> bool:
        return self.tags is None or not self.tags.isdisjoint(tool.tags)


def known(pipe: Pipeline) -> dict[str, frozenset[str]]:
    """The app's toolsets (every one declared, whatever dialects it is mounted under) and their tags."""
    out: dict[str, frozenset[str]] = {}
    for name, mounts in pipe.toolsets.items():
        toolset = next(iter(mounts.values())).toolset
        if toolset is not None:
            out[name] = toolset.tags
    return out


@functools.lru_cache(maxsize=KEPT)
def read(named: str | None, readonly: str | None, table: tuple[tuple[str, frozenset[str]], ...]) -> Choice:
    """The choice of a request's ``X-MCP-Toolsets`` (``named``) and ``X-MCP-Readonly`` values
    against the app's toolsets (``table``), or :class:`~...errors.BadRequest` naming what is unknown
    and what there is."""
    names = sorted({part.strip() for part in (named or "").split(",") if part.strip()})
    tags_of = dict(table)
    if any(name in EVERY and name not in tags_of for name in names):  # GitHub's "all", "default": every tool
        names = []
    if unknown := [name for name in names if name not in tags_of]:
        there = ", ".join(tags_of) if tags_of else "none (this server declares no toolsets)"
        said = ", ".join(repr(name[:64]) for name in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise BadRequest(f"Unknown toolset(s) in {TOOLSETS_HEADER}: {said}. The toolsets are: {there}.",
                         reason=f"{TOOLSETS_HEADER} names unknown toolsets", extra={"toolsets": list(tags_of)})
    tags = frozenset().union(*(tags_of[name] for name in names)) if names else None
    return Choice(tuple(names), tags, readonly is not None and readonly.strip().lower() not in NO)


def install(pipe: Pipeline) -> Callable[[Mapping[str, Any]], Choice]:
    """Let requests to ``pipe`` narrow its tools by the headers; the reading of a request's
    headers (:class:`~...errors.BadRequest` for an unknown toolset), for the view to check first."""
    table = tuple(sorted(known(pipe).items()))

    def choice(environ: Mapping[str, Any]) -> Choice:
        return read(environ.get(KEYS[0]), environ.get(KEYS[1]), table)

    def narrow(toolset: ToolSet, environ: Mapping[str, Any]) -> ToolSet:
        chosen = choice(environ)
        if chosen.tags is not None:
            toolset = toolset.narrowed(("toolsets", chosen.toolsets), chosen.keep)
        return toolset.read_only() if chosen.read_only else toolset

    pipe.chosen_by, pipe.choose = KEYS, narrow
    return choice


def manifest(pipe: Pipeline, url: str | None) -> dict[str, Any]:
    """What the discovery manifest's ``mcp`` entry says of narrowing (the endpoint at ``url``):
    ``readonly``, the header and the read-only URL (``null`` with ``TOOLDISCOVERY_READONLY_MOUNTS``
    off); with toolsets, ``toolsets``: the header and the names it takes."""
    read_only = url + READONLY_SUFFIX if url and pipe.settings.readonly_mounts else None
    out: dict[str, Any] = {"readonly": {"header": READONLY_HEADER, "url": read_only}}
    if names := sorted(known(pipe)):
        out["toolsets"] = {"header": TOOLSETS_HEADER, "names": names}
    return out


def card_headers(pipe: Pipeline, *, toolsets: bool) -> list[dict[str, Any]]:
    """The Server Card's optional headers of a remote: ``X-MCP-Toolsets`` (with the names it takes,
    when ``toolsets``: the full endpoint) and ``X-MCP-Readonly``."""
    names = sorted(known(pipe))
    out: list[dict[str, Any]] = []
    if toolsets and names:
        out.append({"name": TOOLSETS_HEADER, "description": "Only the tools of these toolsets, comma-separated "
                    f"(unset: every tool): {', '.join(names)}.", "isRequired": False, "isSecret": False,
                    "placeholder": ",".join(names[:2])})
    out.append({"name": READONLY_HEADER, "description": "true: only the tools that only read (readOnlyHint).",
                "format": "boolean", "default": "false", "isRequired": False, "isSecret": False})
    return out


def refusal(choice: Callable[[Mapping[str, Any]], Choice], environ: Mapping[str, Any],
            message: Any) -> dict[str, Any] | None:
    """The JSON-RPC error (under ``message``'s id) that refuses a request whose headers name an
    unknown toolset, else ``None``."""
    try:
        choice(environ)
    except BadRequest as exc:
        ident = message.get("id") if isinstance(message, dict) else None
        return rpc.error_body(ident if rpc.valid_id(ident) else None, rpc.INVALID_REQUEST, exc.message,
                              {"toolsets": exc.extra["toolsets"]})
    return None


__all__ = ["KEYS", "READONLY_HEADER", "READONLY_SUFFIX", "TOOLSETS_HEADER", "Choice", "card_headers", "install",
           "known", "manifest", "read", "refusal"]
