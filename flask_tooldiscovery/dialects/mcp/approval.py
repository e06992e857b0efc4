"""MCP approvals: a ``tools/call`` of a tool that needs a person's approval, as MCP asks it. Whether
the call needs one is decided once, at the endpoint, by the app's approvals service
(:class:`~...calls.approvals.ApprovalGate`); this module only puts the question on the wire, in
each era's way, and runs the call with the answer through the pipeline.

Stateless era (multi-round-trip requests): the call answers an ``InputRequiredResult`` asking the client for
one form elicitation (``inputRequests.approval``: a boolean ``approve``), with the sealed request as
``requestState``. A client whose ``_meta`` capabilities do not declare ``elicitation`` is refused
with -32021 naming it (nothing runs). The client asks its user and retries the same call with ``inputResponses`` and
the ``requestState``; whichever worker receives it checks the seal (signed with ``SECRET_KEY``,
nothing stored). An ``accept`` with ``approve: true`` runs the tool, anything else answers an
``isError`` result, unrun; a tampered, expired or foreign ``requestState`` is refused as the
official SDK refuses one (-32602 ``Invalid or expired requestState``).

Handshake era: a client whose revision has elicitation (2025-06-18 on) accepting SSE is asked by a real
``elicitation/create`` on the call's stream (:mod:`.elicit`). Any other, or one answering that
request with an error, gets an ``isError`` result saying the approval could not be asked; its
``_meta`` carries the sealed state and prompt (:data:`META_KEY`), which a client may send back in
the ``X-Tool-Approval`` header once its user approved, as JSON dialects' clients do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app, request

from ...calls import APPROVAL_HEADER, Approval
from ...errors import ApprovalRequired, InvalidApproval
from ...observe.logs import log
from ...serving.pipeline import ApprovalGate, Pipeline
from ...tools.model import ToolContext
from ...tools.questions import Question
from . import elicit as mcp_elicit
from . import input_requests as mcp_input
from . import jsonrpc as rpc
from .content import call_result
from .request import McpRequest, missing
from .revisions import LATEST

#: The key of the one input request (and of its response) in ``inputRequests``/``inputResponses``.
APPROVAL_KEY = mcp_input.APPROVAL_KEY
INVALID_STATE = mcp_input.INVALID_STATE
#: Where a handshake-era refusal carries the sealed state, for a client that can send it back in
#: ``X-Tool-Approval`` once its user approved.
META_KEY = "flask-tooldiscovery/approval"
#: The form the client shows: one boolean the person ticks to approve.
REQUESTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve",
                               "description": "Allow the tool to run with these arguments."}},
    "required": ["approve"],
}
NOT_RECEIVED = "The approval was not received in time, so the tool did not run."


def approval_of(params: Mapping[str, Any]) -> Approval | None:
    """The approval a retried ``tools/call`` carries: its ``requestState`` and whether the
    person accepted the form with ``approve: true``. ``None`` without a ``requestState`` or
    without an answer to the approval request (then it is asked again)."""
    state = params.get("requestState")
    if state is None:
        return None
    if not isinstance(state, str):
        raise invalid_state()
    responses = params.get("inputResponses")
    answer = responses.get(APPROVAL_KEY) if isinstance(responses, dict) else None
    if not isinstance(answer, dict):
        return None
    content = answer.get("content")
    approved = answer.get("action") == "accept" and isinstance(content, dict) and content.get("approve") is True
    return Approval(state, approved)


def invalid_state() -> rpc.RpcError:
    """The refusal of a bad ``requestState``, worded as the official SDK's server words it."""
    return mcp_input.invalid_state()


def input_required(exc: ApprovalRequired) -> dict[str, Any]:
    """The stateless era's ``InputRequiredResult`` asking the person to approve the call: one form
    question, as a tool's own questions are asked, with the sealed approval as its state."""
    question = Question(exc.prompt, REQUESTED_SCHEMA, APPROVAL_KEY)
    return mcp_input.input_required([question], exc.state, LATEST)


def cannot_ask(exc: ApprovalRequired) -> dict[str, Any]:
    """A handshake-era answer: the tool did not run, since its approval could not be asked."""
    text = (f"{exc.message} This server asks for approval by elicitation (MCP 2026-07-28 input requests, or "
            "from 2025-06-18 on a streamed call), which this client did not take, so the tool did not run.")
    return {"content": [{"type": "text", "text": text}], "isError": True,
            "_meta": {META_KEY: {"approval_state": exc.state, "prompt": exc.prompt}}}


def asks_on_stream(pipe: Pipeline, gate: ApprovalGate | None, req: McpRequest) -> bool:
    """Whether the handshake-era ``tools/call`` ``req`` (``gate``: its tool's approval, ``None``: no
    such tool) would ask its approval by elicitation on its stream (the caller checked the client
    accepts ``text/event-stream``)."""
    return (gate is not None and gate.required and not req.stateless and req.may_ask("elicitation")
            and mcp_elicit.timeout(pipe.settings) > 0 and bool(current_app.secret_key)
            and req.params.get("requestState") is None and not request.headers.get(APPROVAL_HEADER))


def _not_received(text: str = NOT_RECEIVED) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def ask_on_stream(pipe: Pipeline, gate: ApprovalGate, arguments: dict[str, Any] | None, context: ToolContext,
                  exc: ApprovalRequired, req: McpRequest) -> dict[str, Any] | None:
    """Ask the approval of the handshake-era call ``req`` on its stream (a form question, as a tool
    asks its own) and run the call as answered; ``None`` when this call cannot be asked (not
    streamed, or the client answered the request with an error)."""
    plan, tool = req.plan, gate.tool
    if plan is None or plan.context is not context or req.stateless or not req.may_ask("elicitation"):
        return None
    answer = mcp_elicit.ask_approval(pipe.settings, plan, context, Question(exc.prompt, REQUESTED_SCHEMA))
    if isinstance(answer, str):  # the storage the answer travels through is unreachable
        log.error("flask-tooldiscovery: mcp approval of %s not received: %s (call_id=%s)", tool.name, answer,
                  context.call_id)
        return _not_received("The approval could not be received, so the tool did not run.")
    if answer is None:
        return _not_received()
    outcome = answer.get("result")
    if not isinstance(outcome, dict):
        return None  # the client cannot elicit: the state goes back in _meta
    content = outcome.get("content")
    approved = outcome.get("action") == "accept" and isinstance(content, dict) and content.get("approve") is True
    try:
        return call_result(pipe.invoke(tool, arguments or {}, context, approval=Approval(exc.state, approved),
                                       gate=gate), req.revision)
    except InvalidApproval:  # expired while the person read the prompt
        return _not_received()


def call(pipe: Pipeline, gate: ApprovalGate, arguments: dict[str, Any] | None, context: ToolContext,
         req: McpRequest, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the ``tools/call`` ``req`` (its ``params``, default the request's own) of the tool whose
    approval ``gate`` decided through the pipeline with the approval it carries: the result of its
    outcome (content blocks in the form the request's revision knows), or the request for approval
    (stateless era: an ``InputRequiredResult``)."""
    params, tool = req.params if params is None else params, gate.tool
    approval = approval_of(params)
    try:
        return call_result(pipe.invoke(tool, arguments or {}, context, approval=approval, gate=gate), req.revision)
    except ApprovalRequired as exc:
        if req.stateless and not req.declares("elicitation"):  # never a request it cannot answer
            raise missing({"elicitation": {}}) from None
        return input_required(exc) if req.stateless else (
            ask_on_stream(pipe, gate, arguments, context, exc, req) or cannot_ask(exc))
    except InvalidApproval as exc:
        log.info("flask-tooldiscovery: mcp tools/call %s refused: %s (trace_id=%s)", tool.name, exc.reason,
                 context.trace_id)
        if approval is None and params.get("requestState") is None:  # X-Tool-Approval, not requestState
            raise rpc.RpcError(rpc.INVALID_PARAMS, exc.message, {"reason": "invalid_approval"}) from None
        raise invalid_state() from None


__all__ = ["APPROVAL_KEY", "META_KEY", "NOT_RECEIVED", "REQUESTED_SCHEMA", "approval_of", "ask_on_stream",
           "asks_on_stream", "call", "cannot_ask", "input_required", "invalid_state"]
