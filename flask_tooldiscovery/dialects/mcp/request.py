"""One MCP request as the dialect reads it, once, at its entry: :class:`McpRequest`.

The endpoint reads each JSON-RPC request once (its method and params, the revision and era it
speaks, what its client declared it can be asked, and the SSE stream it is answered on, if any)
and hands the :class:`McpRequest` to the method that answers it; every module that needs to know
"which revision", "may this client be asked X" or "is this call streamed" is given it explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import request

from ...serving.pipeline import ApprovalGate
from . import jsonrpc as rpc
from . import revisions, sessions
from .content import VERSION_META_KEY, client_version
from .sse import Plan

#: Where a stateless-era request's ``_meta`` envelope carries its client's capabilities.
CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
#: The kinds of request a server may make of its client (each one a capability of that name).
ASKABLE = ("elicitation", "sampling", "roots")
#: The error of a request that needs a capability its client did not declare (stateless era).
MISSING_CAPABILITY = -32021


def speaks_stateless(meta: Any) -> bool:
    """Whether a request whose ``params._meta`` is ``meta`` is of the stateless era: its envelope
    names its revision, or its ``MCP-Protocol-Version`` header names a stateless-era one."""
    return (isinstance(meta, Mapping) and VERSION_META_KEY in meta) or (
        request.environ.get("HTTP_MCP_PROTOCOL_VERSION") in revisions.STATELESS_REVISIONS)


@dataclass(frozen=True)
class McpRequest:
    """One JSON-RPC request to the MCP endpoint: ``method`` and ``params``; the ``revision`` it
    speaks and its era; the client capabilities its stateless-era ``_meta`` envelope declares
    (``capabilities``); the handshake-era session id it sent and the kinds of request that id says
    its client declared at ``initialize`` (``session_declares``, ``None``: not known); the
    ``plan`` of the SSE stream it is answered on (``None``: one JSON body); and, for a
    ``tools/call`` whose approval was decided while its stream was planned, that decision
    (``gate``, the call's :class:`~...calls.approvals.ApprovalGate`: it is never decided twice)."""

    method: str
    params: dict[str, Any]
    revision: str
    era: revisions.Era
    capabilities: Mapping[str, Any] | None = None
    session: str | None = None
    session_declares: frozenset[str] | None = None
    plan: Plan | None = None
    gate: ApprovalGate | None = None
    #: Whether the request is of the stateless era (its ``_meta`` envelope, no handshake).
    stateless: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stateless", self.era == revisions.STATELESS)

    @classmethod
    def of(cls, method: str, params: Mapping[str, Any], plan: Plan | None = None) -> McpRequest:
        """The request ``method`` with ``params``, read from the current HTTP request's headers."""
        params = dict(params)
        meta = params.get("_meta")
        meta = meta if isinstance(meta, Mapping) else {}
        environ = request.environ
        header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        stateless = VERSION_META_KEY in meta or header in revisions.STATELESS_REVISIONS
        caps = meta.get(CAPABILITIES_META_KEY)
        session = sessions.current() if "HTTP_MCP_SESSION_ID" in environ else None
        return cls(method, params, client_version(meta), revisions.STATELESS if stateless else revisions.HANDSHAKE,
                   caps if isinstance(caps, Mapping) else None, session,
                   sessions.declared_by(session) if session is not None else None, plan)

    @classmethod
    def of_message(cls, message: Any) -> McpRequest | None:
        """The request ``message`` makes, or ``None`` when it is none the endpoint answers (a
        notification, a client's response, a malformed message: :func:`.jsonrpc.dispatch` says so)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(
                message.get("method"), str) or not rpc.valid_id(message.get("id")):
            return None
        params = message.get("params")
        params = {} if params is None else params
        return cls.of(message["method"], params) if isinstance(params, Mapping) else None

    @property
    def meta(self) -> Mapping[str, Any]:
        """The request's ``params._meta`` (empty when it sent none, or not an object)."""
        meta = self.params.get("_meta")
        return meta if isinstance(meta, Mapping) else {}

    def declares(self, capability: str) -> bool:
        """Whether the request's ``_meta`` envelope (the stateless era's) declares ``capability``
        (``"elicitation"``, ``"sampling"``, ``"roots"``; an extension's id, such as
        ``io.modelcontextprotocol/tasks``, under ``extensions``)."""
        caps = self.capabilities
        if caps is None:
            return False
        if "/" in capability:
            extensions = caps.get("extensions")
            found = extensions.get(capability) if isinstance(extensions, Mapping) else None
        else:
            found = caps.get(capability)
        return isinstance(found, Mapping)

    def declares_extension(self, extension: str) -> bool:
        """Whether the client declared ``extension`` (one of :data:`.sessions.EXTENSION_FLAGS`, such
        as MCP Apps): in the stateless era in the request's envelope; in the handshake era at
        ``initialize``, as its session id says (a request without such an id: not declared)."""
        if self.stateless:
            return sessions.declares_extension(self.capabilities, extension)
        return self.session_declares is not None and extension in self.session_declares

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
        return self.session_declares is None or kind in self.session_declares

    def abilities(self) -> frozenset[str]:
        """The kinds of request the server may ask this request's client (:meth:`may_ask`)."""
        return frozenset(k for k in ASKABLE if self.may_ask(k))


#: A method of the endpoint: the request in, its result out (raising :class:`.jsonrpc.RpcError`).
Handler = Callable[[McpRequest], rpc.Result]


def missing(required: dict[str, Any]) -> rpc.RpcError:
    """-32021: processing the request needs a capability the client did not declare."""
    return rpc.RpcError(MISSING_CAPABILITY, "Missing required client capability", {"requiredCapabilities": required})


__all__ = ["ASKABLE", "CAPABILITIES_META_KEY", "MISSING_CAPABILITY", "Handler", "McpRequest", "missing",
           "speaks_stateless"]
