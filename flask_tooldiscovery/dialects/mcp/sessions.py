"""Handshake-era MCP sessions: what a client declared at ``initialize``, carried by its session id.

The server keeps nothing between requests, and the official clients send their capabilities only
in ``initialize``. So the ``Mcp-Session-Id`` an ``initialize`` answer gives (every handshake-era
client keeps it and sends it with each request after) names, besides an unguessable part, the
kinds of request the client declared it can answer: ``elicitation`` (form mode), ``sampling`` and
``roots``, and the extensions it declared that change what it is sent (MCP Apps,
``io.modelcontextprotocol/ui``), as ``<token>.c<flags>``. A call then asks its caller only what it declared (else
:class:`~...tools.questions.CannotAnswer`, as in the stateless era), and an approval is not put to a
client without elicitation (:meth:`.request.McpRequest.may_ask` decides). A request without such an
id (a client that does not keep it, or an id of another form) is asked as its protocol version
allows, and a client that cannot answer refuses. The flags are the client's own words about
itself: one that alters them only misleads itself.
Subscriptions name a session's stream by the same id (:mod:`.subscriptions`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

from flask import request

SESSION_HEADER = "Mcp-Session-Id"
#: The kinds of request a client may declare, and each one's flag in the session id.
FLAGS = {"elicitation": "e", "sampling": "s", "roots": "r"}
#: The extensions a client may declare that a session id names, each by its flag; an extension is
#: declared when ``capabilities.extensions`` has it as an object whose ``mimeTypes`` (if any) hold
#: the one given here.
EXTENSION_FLAGS = {"io.modelcontextprotocol/ui": ("u", "text/html;profile=mcp-app")}
_SESSION = re.compile(r"[\x21-\x7e]{16,128}")
_DECLARED = re.compile(r"\.c([esru]{0,4})\Z")


def declares(capabilities: Any, kind: str) -> bool:
    """Whether client ``capabilities`` (``initialize``'s, or a stateless-era request's envelope)
    declare ``kind``: ``"elicitation"`` (the form mode this server asks in: an empty object, as
    2025-06-18 has it, or one naming ``form``, as 2025-11-25 does; a client declaring only ``url``
    cannot answer a form), ``"sampling"``, ``"roots"``, or an extension's id (such as
    ``io.modelcontextprotocol/tasks``) as an object under ``extensions``. The one rule for both
    eras: a session id records what this says at ``initialize``."""
    if not isinstance(capabilities, Mapping):
        return False
    if "/" in kind:
        extensions = capabilities.get("extensions")
        return isinstance(extensions, Mapping) and isinstance(extensions.get(kind), Mapping)
    declared = capabilities.get(kind)
    if not isinstance(declared, Mapping):
        return False
    return kind != "elicitation" or not declared or isinstance(declared.get("form"), Mapping)


def declares_extension(capabilities: Any, extension: str) -> bool:
    """Whether client ``capabilities`` (``initialize``'s, or a stateless-era request's envelope)
    declare ``extension``, one of :data:`EXTENSION_FLAGS`: an object under ``extensions``, whose
    ``mimeTypes``, when it lists any, include the one this server sends."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    declared = extensions.get(extension) if isinstance(extensions, Mapping) else None
    if not isinstance(declared, Mapping):
        return False
    types = declared.get("mimeTypes")
    return types is None or (isinstance(types, list) and EXTENSION_FLAGS[extension][1] in types)


def new_id(capabilities: Any) -> str:
    """A fresh session id naming what ``capabilities`` (``initialize``'s) declare."""
    found = capabilities if isinstance(capabilities, Mapping) else {}
    flags = [f for k, f in FLAGS.items() if declares(found, k)]
    flags += [f for k, (f, _) in EXTENSION_FLAGS.items() if declares_extension(found, k)]
    return f"{secrets.token_urlsafe(24)}.c{''.join(flags)}"


def headers(params: Mapping[str, Any]) -> dict[str, str]:
    """The headers of an ``initialize`` answer to ``params``: the client's session id."""
    return {SESSION_HEADER: new_id(params.get("capabilities"))}


def current() -> str | None:
    """The request's session id, when it sent a well-formed one."""
    return well_formed(request.headers.get(SESSION_HEADER))


def well_formed(value: str | None) -> str | None:
    """``value`` (an ``Mcp-Session-Id`` header as sent) when it is a well-formed session id."""
    return value if value is not None and _SESSION.fullmatch(value) else None


def declared_by(session: str) -> frozenset[str] | None:
    """The kinds of request ``session`` (a well-formed session id) says its client can answer
    (``None``: an id of another form, which says nothing)."""
    found = _DECLARED.search(session)
    if found is None:
        return None
    flags = found.group(1)
    return frozenset([*(kind for kind, flag in FLAGS.items() if flag in flags),
                      *(ext for ext, (flag, _) in EXTENSION_FLAGS.items() if flag in flags)])


__all__ = ["EXTENSION_FLAGS", "FLAGS", "SESSION_HEADER", "current", "declared_by", "declares_extension", "headers",
           "new_id", "well_formed"]
