"""One MCP request as the dialect reads it, once, at its entry: :class:`McpRequest`.

The endpoint reads each JSON-RPC request once (its method and params, the revision and era it
speaks, what its client declared it can be asked, and the SSE stream it is answered on, if any)
and hands the :class:`McpRequest` to the method that answers it; every module that needs to know
"which revision", "may this client be asked X" or "is this call streamed" is given it explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from flask import request

from ...serving.pipeline import ApprovalGate
from ...tools.model import Tool
from . import jsonrpc as rpc
from . import revisions, sessions
from .sse import Plan

#: Where a stateless-era request names its protocol version, in ``params._meta``.
VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
#: Where a stateless-era request's ``_meta`` envelope carries its client's capabilities.
CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
#: The kinds of request a server may make of its client (each one a capability of that name).
ASKABLE = ("elicitation", "sampling", "roots")
#: The error of a request that needs a capability its client did not declare (stateless era).
MISSING_CAPABILITY = -32021
#: The ``_meta`` of a request that sent none (or not an object): empty, and shared, so never written.
NO_META: Mapping[str, Any] = MappingProxyType({})


def speaks_stateless(meta: Any) -> bool:
    """Whether a request whose ``params._meta`` is ``meta`` is of the stateless era: its envelope
    names its revision, or its ``MCP-Protocol-Version`` header names a stateless-era one."""
    return (isinstance(meta, Mapping) and VERSION_META_KEY in meta) or (
        request.environ.get("HTTP_MCP_PROTOCOL_VERSION") in revisions.STATELESS_REVISIONS)


@dataclass(slots=True, eq=False)
class McpRequest:
    """One JSON-RPC request to the MCP endpoint, read once at its entry: its ``id`` (``None`` for a
    batch's member, answered by the batch), ``method`` and ``params``; the ``revision`` it speaks
    and whether that is of the ``stateless`` era; its ``params._meta`` (``meta``); the client
    capabilities its stateless-era envelope declares (:attr:`capabilities`); and the handshake-era
    session id it sent (``session_header``, as sent: :attr:`session` is it when well formed).

    What the endpoint works out before the method runs is written here once: for a ``tools/call``,
    the ``tool`` it names, the call's approval (``gate``, the
    :class:`~...calls.approvals.ApprovalGate`: it is never decided twice) and whether it is a
    ``plain`` call (run at once: nothing to stream, record, ask or approve); the ``plan`` of the
    SSE stream it is answered on (``None``: one JSON body); and, for a call that tool search's
    ``call_tool`` made (:func:`.tool_search.rewrite`), the name it was called by (``called_as``:
    the stateless era's ``Mcp-Name`` names it, not the tool that runs). Only the endpoint sets
    these: nothing a client sends does."""

    method: str
    params: dict[str, Any]
    revision: str
    stateless: bool
    meta: Mapping[str, Any]
    session_header: str | None = None
    id: str | int | None = None
    tool: Tool | None = None
    gate: ApprovalGate | None = None
    plain: bool = False
    plan: Plan | None = None
    called_as: str | None = None

    @classmethod
    def of(cls, method: str, params: Mapping[str, Any], environ: Mapping[str, Any] | None = None,
           id_: str | int | None = None) -> McpRequest:
        """The request ``method`` with ``params`` (of id ``id_``), read with the headers of
        ``environ`` (default: the current HTTP request's), as :meth:`of_message` reads a message's."""
        if environ is None:
            environ = request.environ
        meta = params.get("_meta")
        if meta is None or (type(meta) is not dict and not isinstance(meta, Mapping)):
            meta = NO_META
        return cls(method, params if type(params) is dict else dict(params), *_version(environ, meta), meta,
                   environ.get("HTTP_MCP_SESSION_ID"), id_)

    @classmethod
    def of_message(cls, message: Any, environ: Mapping[str, Any] | None = None) -> McpRequest | None:
        """The request ``message`` makes, or ``None`` when it is none the endpoint answers (a
        notification, a client's response, a malformed message: :func:`.jsonrpc.dispatch` says so).
        Its revision: the ``MCP-Protocol-Version`` header, else the stateless-era envelope's, else
        :data:`.revisions.DEFAULT`; it is of the stateless era when the envelope names a revision
        or the header names a stateless-era one."""
        if (type(message) is not dict and not isinstance(message, dict)) or message.get("jsonrpc") != "2.0":
            return None
        method, id_, params = message.get("method"), message.get("id"), message.get("params")
        if not isinstance(method, str) or not (type(id_) is str or type(id_) is int or rpc.valid_id(id_)):
            return None
        if params is None:
            params = {}
        elif type(params) is not dict:
            if not isinstance(params, Mapping):
                return None
            params = dict(params)
        if environ is None:
            environ = request.environ
        meta = params.get("_meta", NO_META)
        if type(meta) is not dict and meta is not NO_META and not isinstance(meta, Mapping):
            meta = NO_META
        header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if meta is NO_META and header:  # the usual request: a revision named by its header only
            return cls(method, params, header, header in revisions.STATELESS_REVISIONS, meta,
                       environ.get("HTTP_MCP_SESSION_ID"), id_)
        return cls(method, params, *_version(environ, meta), meta, environ.get("HTTP_MCP_SESSION_ID"), id_)

    @property
    def capabilities(self) -> Mapping[str, Any] | None:
        """The client capabilities the request's stateless-era ``_meta`` envelope declares."""
        caps = self.meta.get(CAPABILITIES_META_KEY)
        return caps if isinstance(caps, Mapping) else None

    @property
    def era(self) -> revisions.Era:
        """The era the request speaks (:data:`.revisions.STATELESS` or :data:`.revisions.HANDSHAKE`)."""
        return revisions.STATELESS if self.stateless else revisions.HANDSHAKE

    @property
    def session(self) -> str | None:
        """The handshake-era session id the request sent, when well formed."""
        return sessions.well_formed(self.session_header)

    @property
    def session_declares(self) -> frozenset[str] | None:
        """The kinds of request the session id says its client declared at ``initialize``
        (``None``: not known, no such id)."""
        session = self.session
        return sessions.declared_by(session) if session is not None else None

    def declares(self, capability: str) -> bool:
        """Whether the request's ``_meta`` envelope (the stateless era's) declares ``capability``
        (``"elicitation"``, ``"sampling"``, ``"roots"``; an extension's id, such as
        ``io.modelcontextprotocol/tasks``, under ``extensions``), by the rule a handshake-era
        session id is made by (:func:`.sessions.declares`)."""
        return sessions.declares(self.capabilities, capability)

    def declares_extension(self, extension: str) -> bool:
        """Whether the client declared ``extension`` (one of :data:`.sessions.EXTENSION_FLAGS`, such
        as MCP Apps): in the stateless era in the request's envelope; in the handshake era at
        ``initialize``, as its session id says (a request without such an id: not declared)."""
        if self.stateless:
            return sessions.declares_extension(self.capabilities, extension)
        if self.session_header is None:  # no session id: nothing declared (the usual request)
            return False
        declared = self.session_declares
        return declared is not None and extension in declared

    def may_ask(self, kind: str) -> bool:
        """Whether the server may ask this request's client a request of ``kind`` (``elicitation``,
        ``sampling``, ``roots``): in the stateless era when its envelope declares it; in the
        handshake era when the revision has it on a call's stream and the client's session id does
        not say it declared otherwise (a request without such an id: the revision decides)."""
        if self.stateless:
            return self.declares(kind)
        if not revisions.streams_requests(self.revision) or (
                kind == "elicitation" and not revisions.has_elicitation(self.revision)):
            return False
        declared = self.session_declares
        return declared is None or kind in declared

    def abilities(self) -> frozenset[str]:
        """The kinds of request the server may ask this request's client (:meth:`may_ask`)."""
        return frozenset(k for k in ASKABLE if self.may_ask(k))


def _version(environ: Mapping[str, Any], meta: Mapping[str, Any]) -> tuple[str, bool]:
    """(the revision, stateless?) of a request with headers ``environ`` and ``_meta`` ``meta``
    (:meth:`McpRequest.of_message` says the rule)."""
    header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    given = meta.get(VERSION_META_KEY)
    return (header or (given if isinstance(given, str) else None) or revisions.DEFAULT,
            VERSION_META_KEY in meta or header in revisions.STATELESS_REVISIONS)


#: A method of the endpoint: the request in, its result out (raising :class:`.jsonrpc.RpcError`).
Handler = Callable[[McpRequest], rpc.Result]


def missing(required: dict[str, Any]) -> rpc.RpcError:
    """-32021: processing the request needs a capability the client did not declare."""
    return rpc.RpcError(MISSING_CAPABILITY, "Missing required client capability", {"requiredCapabilities": required})


__all__ = ["ASKABLE", "CAPABILITIES_META_KEY", "MISSING_CAPABILITY", "NO_META", "VERSION_META_KEY", "Handler",
           "McpRequest", "missing", "speaks_stateless"]
