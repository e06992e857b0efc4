"""A handshake-era MCP call asks its caller on its own SSE stream (:func:`.revisions.streams_requests`;
elicitation from :func:`.revisions.has_elicitation`): a tool's input requests (:class:`StreamAsker`:
``elicitation/create``, ``sampling/createMessage``, ``roots/list``) and a person's approval. The
``tools/call`` is answered as an SSE stream (:mod:`.mcp_stream`) that carries each request with a
fresh unguessable id; the client POSTs its answer to the endpoint as a separate request, which may
reach any worker, and :func:`receive` hands it over through the rendezvous (:mod:`..rendezvous`:
this process, or Redis with ``TOOLDISCOVERY_STATE_STORAGE_URI``). An approval is asked the same way
(:func:`.approval.ask_on_stream`).

A client is asked only what it declared at ``initialize``: the session id that answer gave
(:mod:`.sessions`) names it (:meth:`.request.McpRequest.may_ask` reads it), so a request it did not declare raises
:class:`~...tools.questions.CannotAnswer` in the tool without being sent (the call ends with a tool
error saying so, unless the tool catches it), and an approval is not asked of a client without
elicitation (its call answers the ``isError`` result carrying the state in ``_meta``). A request
without such a session id is asked as its protocol version allows; a client that cannot take it
answers with an error (the spec's answer to an unsupported request; the official client without an
elicitation callback answers -32600 "Elicitation not supported"), and the tool's request raises
:class:`~...tools.questions.CannotAsk` the same way. A client that never answers gets "not received" after
``TOOLDISCOVERY_MCP_ELICITATION_TIMEOUT`` (for an approval, at most the approval TTL).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from flask import current_app as app

from ...errors import RendezvousError
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...settings import Settings
from ...state import Mailbox, for_uri
from ...tools.model import Identity, ToolContext
from ...tools.questions import CannotAnswer, CannotAsk, InputRequest, kind, reply_of
from . import input_requests as mcp_input
from . import sse
from .settings import McpSettings

ID_PREFIX = "tooldiscovery-approval-"
#: The ids of a tool's own input requests.
INPUT_PREFIX = "tooldiscovery-input-"
NO_ANSWER = "The caller did not answer in time, so the tool stopped waiting."
def timeout(settings: Settings) -> float:
    """How long a call waits for its answer (0: it is never asked)."""
    return min(McpSettings.of(settings).elicitation_timeout, float(settings.approval_ttl))


def _subject(identity: Identity | None) -> str | None:
    return identity.subject if identity is not None else None


def _await(mailbox: Mailbox, subject: str | None, wait: float, context: ToolContext) -> dict[str, Any] | None:
    """The caller's answer, or ``None`` (timeout, or the call was cancelled: its stream closed)."""
    deadline = time.monotonic() + wait
    while not context.cancelled and (left := deadline - time.monotonic()) > 0:
        data = mailbox.get(min(left, 1.0))
        if data is None:
            continue
        try:
            envelope = json.loads(data)
        except ValueError:
            envelope = None
        if not isinstance(envelope, dict) or not isinstance(envelope.get("message"), dict):
            continue
        if envelope.get("subject") != subject:
            log.warning("flask-tooldiscovery: mcp approval answer from another caller ignored (call_id=%s)",
                        context.call_id)
            continue
        answer: dict[str, Any] = envelope["message"]
        return answer
    return None


def ask_on_stream(settings: Settings, plan: sse.Plan, context: ToolContext, request: InputRequest,
                  prefix: str = INPUT_PREFIX, meta: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Send ``request`` on the call's stream under a fresh unguessable id and wait for the client's
    answer (``{"result": ...}`` or ``{"error": ...}``), which may reach any worker; ``None`` when it
    did not come in time or the call was cancelled (the client is told the request is off).
    :class:`~...errors.RendezvousError` when the storage is unreachable."""
    request_id = prefix + secrets.token_urlsafe(24)
    wait = timeout(settings) if prefix == ID_PREFIX else McpSettings.of(settings).elicitation_timeout
    sent = mcp_input.wire_request(request, plan.version)
    if meta:
        sent["params"] = {**sent["params"], "_meta": dict(meta)}
    with for_uri(settings.state_storage_uri).expect(request_id) as mailbox:
        plan.channel.put(sse.frame({"jsonrpc": "2.0", "id": request_id, **sent}))
        answer = _await(mailbox, _subject(context.identity), wait, context)
    if answer is None or context.cancelled:  # no answer in time, or the client went away
        plan.channel.put(sse.frame({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": request_id, "reason": (
                                        "approval" if prefix == ID_PREFIX else "answer") + " not received in time"}}))
        return None
    return answer


class StreamAsker:
    """Answers a handshake-era call's input requests by asking them on its SSE stream, one after
    the other (a client that cannot answer one answers it with an error: :class:`CannotAsk`); a
    kind of request not in ``abilities`` (:meth:`.request.McpRequest.abilities`: what the revision
    has, and of that what the client declared at ``initialize``) is never sent."""

    def __init__(self, settings: Settings, plan: sse.Plan, context: ToolContext, abilities: frozenset[str]) -> None:
        self.settings, self.plan, self.context = settings, plan, context
        self.app = app._get_current_object()  # type: ignore[attr-defined]
        self.abilities = abilities

    def __call__(self, requests: Sequence[InputRequest]) -> list[Any]:
        return [self._one(r) for r in requests]

    def _one(self, request: InputRequest) -> Any:
        if kind(request) not in self.abilities:
            raise CannotAnswer(kind(request))
        try:
            with self.app.app_context():
                answer = ask_on_stream(self.settings, self.plan, self.context, request)
        except RendezvousError as unreachable:
            raise CannotAsk(f"The caller's answer could not be received: {unreachable}.") from None
        if answer is None:
            raise CannotAsk(NO_ANSWER)
        if not isinstance(answer.get("result"), dict):
            refused = answer.get("error")
            said = str(refused.get("message"))[:200] if isinstance(refused, dict) else "no result"
            raise CannotAsk(f"The caller could not answer this tool's {kind(request)} request ({said}).")
        try:
            return reply_of(answer["result"], request)
        except ValueError as exc:
            raise CannotAsk(f"The caller's answer does not fit: {exc}.") from None


def ask_approval(settings: Settings, plan: sse.Plan, context: ToolContext,
                 question: InputRequest) -> dict[str, Any] | str | None:
    """Ask a person's approval (``question``, its form) on the call's stream: the client's answer
    (as :func:`ask_on_stream`), ``None`` when none came in time, or why it could not be received
    (the storage it travels through is unreachable)."""
    try:
        return ask_on_stream(settings, plan, context, question, ID_PREFIX)
    except RendezvousError as error:
        return str(error)


def receive(pipe: Pipeline, payload: Any) -> None:
    """A client's answer to one of these requests, POSTed to the endpoint: handed to the call
    that waits for it, in this process or through the storage, with the sender's identity."""
    id_ = payload.get("id") if isinstance(payload, dict) and "method" not in payload else None
    if not (isinstance(id_, str) and id_.startswith((ID_PREFIX, INPUT_PREFIX)) and len(id_) <= 100
            and ("result" in payload or "error" in payload)):
        return
    answer = {k: payload[k] for k in ("result", "error") if k in payload}
    data = json.dumps({"subject": _subject(pipe.identity), "message": answer}).encode("utf-8")
    storage = pipe.settings.state_storage_uri
    if not for_uri(storage).deliver(id_, data, timeout(pipe.settings)) and not storage:
        log.warning("flask-tooldiscovery: mcp approval answer dropped: no call waits for it in this worker process "
                    "(with several workers, set TOOLDISCOVERY_STATE_STORAGE_URI) (trace_id=%s)", pipe.trace_id)


__all__ = ["ID_PREFIX", "INPUT_PREFIX", "NO_ANSWER", "StreamAsker", "ask_approval", "ask_on_stream", "receive",
           "timeout"]
