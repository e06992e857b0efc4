"""MCP subscriptions, when ``TOOLDISCOVERY_MCP_SUBSCRIPTIONS`` is on: clients hear that the tool,
prompt or resource list changed, and that a resource they subscribed to changed, from any worker.

- Stateless era: ``subscriptions/listen`` is answered as a stream of its own (SSE): first
  ``notifications/subscriptions/acknowledged`` with the part of the request's ``notifications``
  filter this server honours, then each change it asked for, every message stamped with
  ``_meta["io.modelcontextprotocol/subscriptionId"]`` (the request's id); after
  ``TOOLDISCOVERY_MCP_SUBSCRIPTION_SECONDS`` the listen result ends the stream, and the client
  listens again. Resource URIs are honoured when the caller may read them.
- Handshake era: ``initialize`` gives the client an ``Mcp-Session-Id`` (:mod:`.sessions`: an
  unguessable name for its stream, nothing the server keeps); ``resources/subscribe`` and
  ``resources/unsubscribe`` keep the caller's URIs under that name in the state store; the client's
  ``GET`` with that header is the stream of list changes and ``notifications/resources/updated`` for its URIs.

A stream whose client sees a part of the tools (a toolset's URL, a ``/readonly`` one, or
``X-MCP-Toolsets``/``X-MCP-Readonly`` on its request: :mod:`.choice`) is told a tools change only
when that part changed: the worker works out what the client sees again and compares its
fingerprint with what it saw (a change of another toolset's tools, or a tool hidden from the
caller, says nothing to it). The full mount's streams are told every tools change, as before.

Changes travel on the core's change bus (:mod:`...state.changes`: in process, or Redis pub/sub with
``TOOLDISCOVERY_STATE_STORAGE_URI``), so the worker a client listens on hears what another announced:
``discovery.resource_changed(uri)``, ``discovery.list_changed(...)``, or a registration after start.
Each open stream holds one server thread.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from flask import Response, current_app, g, request, stream_with_context

from ...errors import CoreError, NoSuchResource
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...serving.wire import accepts, json_response
from ...settings import Settings
from ...state import Change
from ...tools.registry import digest
from . import jsonrpc as rpc
from . import sessions
from .request import Handler, McpRequest
from .resources import RESOURCE_NOT_FOUND
from .sessions import SESSION_HEADER
from .settings import McpSettings
from .sse import frame

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
RESOURCE_UPDATED = "notifications/resources/updated"
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
#: The filter's list flags, and the list each names.
LIST_FLAGS = (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources"))
LIST_CHANGED = {"tools": "notifications/tools/list_changed", "prompts": "notifications/prompts/list_changed",
                "resources": "notifications/resources/list_changed"}
#: Seconds a handshake-era client's subscriptions are kept after they were last written or streamed.
SUBSCRIPTION_TTL = 3600
_STREAM_KEY = "_tooldiscovery_mcp_listen"


def enabled(settings: Settings) -> bool:
    return McpSettings.of(settings).subscriptions


def http_methods(settings: Settings) -> list[str]:
    """The endpoint's methods: a session's stream is a ``GET`` when subscriptions are on."""
    return ["POST", "GET"] if enabled(settings) else ["POST"]


def capabilities(settings: Settings, offered: Mapping[str, Any]) -> dict[str, Any]:
    """``offered`` with ``listChanged`` (and the resources' ``subscribe``) true where subscriptions
    reach them."""
    result = dict(offered)
    if not enabled(settings):
        return result
    for kind in ("tools", "prompts"):
        if isinstance(result.get(kind), Mapping):
            result[kind] = {**result[kind], "listChanged": True}
    if isinstance(result.get("resources"), Mapping):
        result["resources"] = {**result["resources"], "subscribe": True, "listChanged": True}
    return result


@dataclass(frozen=True)
class Stream:
    """What one stream carries: the lists it hears of, the resources it hears of (stateless era: the
    honoured URIs; handshake era: ``key``, where the client's subscriptions are kept), the listen
    request's id (stateless era; ``None`` for a handshake-era ``GET``)."""

    lists: frozenset[str]
    uris: frozenset[str] = frozenset()
    key: str | None = None
    subscription_id: str | int | None = None
    #: The fingerprint of the tools the stream's client sees, when the mount or the request narrows
    #: them (a toolset's URL, ``/readonly``, ``X-MCP-Toolsets``): a tools change is told only when
    #: it changes them. ``None``: every tools change is told (the full mount's whole list).
    tools: Hashable = None


def _lists(offered: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(kind for kind in LIST_CHANGED if kind in offered)


def _readable(pipe: Pipeline, uri: str) -> bool:
    if not McpSettings.of(pipe.settings).resources:
        return False
    try:
        pipe.core.resources.find(uri, pipe.identity)
    except NoSuchResource:
        return False
    return True


def _key(pipe: Pipeline, session: str) -> str:
    """Where a session's subscriptions are kept: its id and its caller, so another caller sending
    the same id reads nothing of them."""
    subject = pipe.identity.subject if pipe.identity is not None else ""
    return hashlib.sha256(f"{session}\0{subject}".encode()).hexdigest()


def methods(pipe: Pipeline, offered: Callable[[], Mapping[str, Any]]) -> dict[str, Handler]:
    """The subscription methods for the MCP method table (none unless subscriptions are on);
    ``offered()``: the server's capabilities now."""
    if not enabled(pipe.settings):
        return {}
    store = pipe.core.resource_subscriptions

    def listen(req: McpRequest) -> dict[str, Any]:
        if not req.stateless:
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Method not found: {LISTEN}")
        params = req.params
        wanted = params.get("notifications")
        if not isinstance(wanted, dict):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "subscriptions/listen needs params.notifications (an object).")
        uris = wanted.get("resourceSubscriptions")
        if uris is not None and not (isinstance(uris, list) and all(isinstance(u, str) for u in uris)):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "notifications.resourceSubscriptions must be a list of URIs.")
        body = pipe.body()
        if not isinstance(body, dict) or not rpc.valid_id(body.get("id")):
            raise rpc.RpcError(rpc.INVALID_REQUEST, "subscriptions/listen is a request: it needs an id.")
        if accepts(request, "text/event-stream") <= 0:
            raise rpc.RpcError(rpc.INVALID_REQUEST,
                               "subscriptions/listen is answered as a stream: accept text/event-stream.")
        lists = frozenset(kind for flag, kind in LIST_FLAGS if wanted.get(flag) is True) & _lists(offered())
        honoured = frozenset(uri for uri in dict.fromkeys(uris or ()) if _readable(pipe, uri))
        setattr(g, _STREAM_KEY, Stream(lists, honoured, subscription_id=body["id"]))
        return {"_meta": {SUBSCRIPTION_ID_META_KEY: body["id"]}}

    def subscription_of(req: McpRequest) -> tuple[str, str]:
        method = req.method
        if req.stateless:
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        uri, session = req.params.get("uri"), req.session
        if not isinstance(uri, str) or not uri:
            raise rpc.RpcError(rpc.INVALID_PARAMS, f"{method} needs params.uri (a string).")
        if session is None:
            raise rpc.RpcError(rpc.INVALID_REQUEST, f"{method} needs the {SESSION_HEADER} header this server "
                               "sent with its initialize answer.")
        return _key(pipe, session), uri

    def subscribe(req: McpRequest) -> dict[str, Any]:
        key, uri = subscription_of(req)
        if not _readable(pipe, uri):
            raise rpc.RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        try:
            store.add(key, uri, SUBSCRIPTION_TTL)
        except Exception as exc:  # the state store is unreachable
            log.warning("flask-tooldiscovery: mcp subscription not kept: %s (trace_id=%s)", type(exc).__name__,
                        pipe.trace_id)
            raise rpc.RpcError(rpc.INTERNAL_ERROR, "The subscription could not be kept; try again.") from None
        return {}

    def unsubscribe(req: McpRequest) -> dict[str, Any]:
        key, uri = subscription_of(req)
        try:
            store.remove(key, uri)
        except Exception as exc:
            log.warning("flask-tooldiscovery: mcp unsubscription failed: %s (trace_id=%s)", type(exc).__name__,
                        pipe.trace_id)
            raise rpc.RpcError(rpc.INTERNAL_ERROR, "The subscription could not be removed; try again.") from None
        return {}

    table: dict[str, Handler] = {LISTEN: listen}
    if McpSettings.of(pipe.settings).resources:
        table.update({"resources/subscribe": subscribe, "resources/unsubscribe": unsubscribe})
    return table


def listening(pipe: Pipeline, reply: Any) -> Any:
    """The stream a ``subscriptions/listen`` just answered by ``reply`` opens, else ``reply``."""
    stream: Stream | None = g.pop(_STREAM_KEY, None)
    if stream is None or not isinstance(reply, dict) or "error" in reply:
        return reply
    return _response(pipe, stream, reply)


def get_stream(pipe: Pipeline, offered: Mapping[str, Any]) -> Response:
    """A handshake-era ``GET``: the stream of the session its ``Mcp-Session-Id`` names (405 without one)."""
    session = sessions.current()
    if session is None or accepts(request, "text/event-stream") <= 0:
        message = (f"GET opens the notification stream of the session named by the {SESSION_HEADER} header the "
                   "initialize answer gave (Accept: text/event-stream); POST JSON-RPC messages otherwise.")
        return json_response(rpc.error_body(None, rpc.INVALID_REQUEST, message), 405,
                             {"Allow": "GET, OPTIONS, POST"})
    lists = _lists(offered) - ({"resources"} if not McpSettings.of(pipe.settings).resources else set())
    return _response(pipe, Stream(lists, key=_key(pipe, session)), None)


def _narrowed(pipe: Pipeline) -> bool:
    """Whether what this request's client sees is a part of the tools: the mount's (a toolset's,
    a read-only one) or the request's own choice (:mod:`.choice`'s headers)."""
    environ = request.environ
    return pipe.toolset is not None or pipe.read_only or any(key in environ for key in pipe.chosen_by)


def _seen(pipe: Pipeline) -> Hashable:
    """A digest of the tools this request's client sees now, of their content only (a part's
    fingerprint also names the whole set it was cut from); ``None`` when they cannot be told (a
    provider failing: a change is then always told)."""
    try:
        return digest(tool.fingerprint for tool in pipe.tools_now())
    except CoreError:
        return None


def _response(pipe: Pipeline, stream: Stream, final: dict[str, Any] | None) -> Response:
    if "tools" in stream.lists and _narrowed(pipe):
        stream = replace(stream, tools=_seen(pipe))
    return current_app.response_class(stream_with_context(_events(pipe, stream, final)), mimetype="text/event-stream",
                                      headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _message(method: str, params: dict[str, Any], stream: Stream) -> dict[str, Any]:
    if stream.subscription_id is not None:
        params = {**params, "_meta": {SUBSCRIPTION_ID_META_KEY: stream.subscription_id}}
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}


def _notification(pipe: Pipeline, stream: Stream, change: Change) -> dict[str, Any] | None:
    if change.kind in stream.lists:
        return _message(LIST_CHANGED[change.kind], {}, stream)
    if change.kind != "resource" or change.uri is None:
        return None
    wanted = change.uri in stream.uris if stream.key is None else \
        pipe.core.resource_subscriptions.has(stream.key, change.uri)
    return _message(RESOURCE_UPDATED, {"uri": change.uri}, stream) if wanted else None


def _events(pipe: Pipeline, stream: Stream, final: dict[str, Any] | None) -> Iterator[bytes]:
    """Listening from before the first message, so nothing announced after it is missed; keep-alive
    comments while nothing changes; the final reply (stateless era) when the stream's time is up."""
    keepalive = pipe.settings.stream_keepalive
    deadline = time.monotonic() + McpSettings.of(pipe.settings).subscription_seconds
    try:
        with pipe.core.changes.listen() as changes:
            if stream.subscription_id is not None:
                lists = {flag: True for flag, kind in LIST_FLAGS if kind in stream.lists}
                uris = {"resourceSubscriptions": sorted(stream.uris)} if stream.uris else {}
                yield frame(_message(ACKNOWLEDGED, {"notifications": {**lists, **uris}}, stream))
            else:
                yield b": stream\n\n"
            seen = stream.tools
            while (left := deadline - time.monotonic()) > 0:
                change = changes.get(min(keepalive, left))
                if change is None:
                    if stream.key is not None:
                        pipe.core.resource_subscriptions.touch(stream.key, SUBSCRIPTION_TTL)
                    yield b": keep-alive\n\n"
                    continue
                if seen is not None and change.kind == "tools" and "tools" in stream.lists:
                    now = _seen(pipe)  # a part of the tools: told only when that part changed
                    if now == seen:
                        continue
                    seen = now if now is not None else seen
                message = _notification(pipe, stream, change)
                if message is not None:
                    yield frame(message)
    except Exception as exc:  # the state store went away: the stream ends, the client listens again
        log.warning("flask-tooldiscovery: mcp subscription stream ended: %s (trace_id=%s)", type(exc).__name__,
                    pipe.trace_id)
        return
    if final is not None:
        yield frame(final)


__all__ = ["LISTEN", "SUBSCRIPTION_ID_META_KEY", "capabilities", "enabled", "get_stream", "http_methods",
           "listening", "methods"]
