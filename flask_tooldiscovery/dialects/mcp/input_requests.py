"""A tool asking its MCP caller (:mod:`...tools.questions`): the input requests on the wire (the
one place their shape is built), and the rounds of a stateless-era call.

Each input request is one server-to-client request: a :class:`Question` is ``elicitation/create``
(form mode), a :class:`SamplingRequest` ``sampling/createMessage``, a :class:`RootsRequest`
``roots/list``. In the stateless era they travel in an ``InputRequiredResult`` (multi-round-trip
requests, SEP-2322): the call answers ``{"resultType": "input_required", "inputRequests": {key:
request}, "requestState": ...}``, the client answers each request and sends the call again with
``inputResponses`` and the ``requestState``, and the tool runs again with the answers
(:mod:`...calls.input_rounds`: state sealed, bound to the caller, single-use; an app without a
``SECRET_KEY`` seals nothing, so each retry must bring every answer: one round only). A request is only
ever made of a client whose ``_meta`` client capabilities declare it; asking anything else is
-32021 naming the missing capability, unless the tool catches
:class:`~...tools.questions.CannotAsk` and carries on without. In the handshake era the requests
go out on the call's SSE stream (:mod:`.elicit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from flask import current_app

from ...calls import Named, RoundAsker, Sealable, open_round, round_sealer, seal_round
from ...errors import InvalidApproval, UnsealedState
from ...observe.logs import log
from ...serving.pipeline import ApprovalGate, Pipeline
from ...tools.model import ToolContext
from ...tools.questions import InputRequest, Question, SamplingRequest, kind
from . import jsonrpc as rpc
from . import revisions
from .request import McpRequest, missing

#: The method of each kind of input request.
METHODS = {"elicitation": "elicitation/create", "sampling": "sampling/createMessage", "roots": "roots/list"}
INVALID_STATE = "Invalid or expired requestState"
#: The approval's input request (a form with one boolean), and its accepted answer.
APPROVAL_KEY = "approval"
APPROVED: dict[str, Any] = {"action": "accept", "content": {"approve": True}}
R = TypeVar("R")


def wire_request(request: InputRequest, version: str) -> dict[str, Any]:
    """``request`` as the JSON-RPC method and params a client of revision ``version`` answers (a
    question is a form elicitation, which names its ``mode`` when the revision has one)."""
    if isinstance(request, Question):
        params: dict[str, Any] = {"message": request.message, "requestedSchema": dict(request.schema)}
        if revisions.has_elicitation_mode(version):
            params = {"mode": "form", **params}
    elif isinstance(request, SamplingRequest):
        params = request.to_params()
    else:
        params = {}
    return {"method": METHODS[kind(request)], "params": params}


def input_required(requests: Sequence[InputRequest], state: str | None, version: str) -> dict[str, Any]:
    """The ``InputRequiredResult`` asking ``requests`` (each keyed), with the round's sealed state
    (``None``: none, the next request brings every answer)."""
    result = {"resultType": "input_required", "inputRequests": {str(r.key): wire_request(r, version) for r in requests}}
    return result if state is None else {**result, "requestState": state}


def invalid_state() -> rpc.RpcError:
    """The refusal of a bad ``requestState``, worded as the official SDK's server words it."""
    return rpc.RpcError(rpc.INVALID_PARAMS, INVALID_STATE, {"reason": "invalid_request_state"})


def _subject(context: ToolContext) -> str | None:
    return context.user_id if context.identity is None else context.identity.subject


def in_rounds(pipe: Pipeline, target: Sealable | str, arguments: dict[str, Any] | None, context: ToolContext,
              req: McpRequest, run: Callable[[Mapping[str, Any]], R], ended: Callable[[R], bool], *,
              approval: bool = False, renew: Callable[[], str | None] = lambda: None) -> R | dict[str, Any]:
    """A stateless-era request ``req`` (``tools/call``, ``prompts/get``, ``resources/read``) whose
    function may ask its caller: ``run(params)`` runs it with ``context`` answering from the round's state and
    ``inputResponses``, and ``ended(result)`` says whether it stopped because it asked; the complete
    result, or the ``InputRequiredResult`` of the requests still open. The state is sealed for
    ``target`` (a tool, or the name of a prompt or resource; and the method), these arguments and
    this caller. For a call that needs approval
    (``approval``), an unsealed state is the approval's, and ``renew()`` seals the approval again
    for the next round."""
    params, version, method = req.params, req.revision, req.method
    target = Named(target) if isinstance(target, str) else target
    responses = params.get("inputResponses")
    if responses is not None and not isinstance(responses, Mapping):
        raise rpc.RpcError(rpc.INVALID_PARAMS, "params.inputResponses must be an object.")
    settings, state, subject = pipe.settings, params.get("requestState"), _subject(context)
    of = "" if method == "tools/call" else method  # a tool's rounds keep their purpose of old
    given: dict[str, Any] = {}
    if state is not None and not current_app.secret_key and not approval:
        raise invalid_state()  # no state was ever sealed here
    if state is not None and current_app.secret_key:
        try:
            given, approved = open_round(round_sealer(settings.approval_ttl, settings.server_name, of), state,
                                         target, arguments or {}, subject, settings.state_storage_uri)
            params = {k: v for k, v in params.items() if k != "requestState"}  # not an approval's state
            if approved:  # approved in an earlier round: its approval, as the client would send it
                params = {**params, "requestState": approved,
                          "inputResponses": {**(responses or {}), APPROVAL_KEY: APPROVED}}
        except InvalidApproval as exc:  # only an unsealed one may be an approval's state (its own purpose)
            if not isinstance(exc, UnsealedState) or not approval:
                log.info("flask-tooldiscovery: mcp %s %s refused: %s (trace_id=%s)", method, target.name, exc.reason,
                         context.trace_id)
                raise invalid_state() from None
    asker = RoundAsker(given, responses, req.abilities())
    context.asker = asker
    result = run(params)
    if not ended(result):
        return result
    if asker.missing is not None:
        raise missing({asker.missing: {}})
    if asker.invalid is not None:
        raise rpc.RpcError(rpc.INVALID_PARAMS, f"Invalid inputResponses: {asker.invalid}.")
    if asker.pending:
        if not current_app.secret_key:  # nothing to seal with: the answers of this request only (ephemeral)
            return input_required(asker.pending, None, version)
        sealed = seal_round(round_sealer(settings.approval_ttl, settings.server_name, of), target, arguments or {},
                            subject, context.call_id, asker.answers, renew())
        return input_required(asker.pending, sealed, version)
    return result


def call_in_rounds(pipe: Pipeline, gate: ApprovalGate, arguments: dict[str, Any] | None, context: ToolContext,
                   req: McpRequest, run: Callable[[Mapping[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """A stateless-era ``tools/call`` whose tool may ask its caller (:func:`in_rounds`): ``run(params)``
    runs it (the approval path); a round ends with the tool's error result. A tool that needs
    approval (``gate``: the call's approval, decided once) carries it into its next round, sealed
    again."""
    return in_rounds(pipe, gate.tool, arguments, context, req, run, lambda result: bool(result.get("isError")),
                     approval=gate.required, renew=lambda: gate.seal_again(arguments or {}, context))


__all__ = ["APPROVAL_KEY", "APPROVED", "INVALID_STATE", "METHODS", "call_in_rounds",
           "in_rounds", "input_required", "invalid_state", "wire_request"]
