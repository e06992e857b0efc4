"""A tool asking its MCP caller (:mod:`...tools.questions`): the input requests on the wire, and
the rounds of a 2026-07-28 call.

Each input request is one server-to-client request: a :class:`Question` is ``elicitation/create``
(form mode), a :class:`SamplingRequest` ``sampling/createMessage``, a :class:`RootsRequest`
``roots/list``. From 2026-07-28 they travel in an ``InputRequiredResult`` (multi-round-trip
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
from typing import Any

from flask import current_app

from ...calls.approvals import InvalidApproval, UnsealedState, needs_approval, sealer
from ...calls.input_rounds import RoundAsker, open_round, round_sealer, seal_round
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...tools.invoke import prepare
from ...tools.model import Tool, ToolContext
from ...tools.questions import InputRequest, Question, SamplingRequest, kind
from . import jsonrpc as rpc
from . import tasks as mcp_tasks

#: The method of each kind of input request.
METHODS = {"elicitation": "elicitation/create", "sampling": "sampling/createMessage", "roots": "roots/list"}
INVALID_STATE = "Invalid or expired requestState"
#: The approval's input request (a form with one boolean), and its accepted answer.
APPROVAL_KEY = "approval"
APPROVED: dict[str, Any] = {"action": "accept", "content": {"approve": True}}


def wire_request(request: InputRequest, version: str) -> dict[str, Any]:
    """``request`` as the JSON-RPC method and params the client answers (form elicitation has a
    ``mode`` from 2025-11-25 on)."""
    if isinstance(request, Question):
        params: dict[str, Any] = {"message": request.message, "requestedSchema": dict(request.schema)}
        if version >= "2025-11-25":
            params = {"mode": "form", **params}
    elif isinstance(request, SamplingRequest):
        params = request.to_params()
    else:
        params = {}
    return {"method": METHODS[kind(request)], "params": params}


def abilities(params: Mapping[str, Any]) -> set[str]:
    """What the 2026-07-28 request's ``_meta`` client capabilities let the server ask."""
    return {k for k in METHODS if mcp_tasks.declares(params, k)}


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


def approval_again(pipe: Pipeline, tool: Tool, arguments: dict[str, Any] | None, context: ToolContext) -> str | None:
    """For a tool that needs approval, which ran (so it was approved) and asked: a fresh sealed
    approval of this very call, for its next round (``None``: it needs none)."""
    settings = pipe.settings
    if not needs_approval(tool, destructive=settings.approve_destructive):
        return None
    ready, errors = prepare(tool, arguments or {}, coerce=settings.coerce_arguments,
                            max_errors=settings.max_validation_errors)
    return None if errors else sealer(settings.approval_ttl, settings.server_name).seal(
        tool, ready, _subject(context), context.call_id)


def call_in_rounds(pipe: Pipeline, tool: Tool, arguments: dict[str, Any] | None, context: ToolContext,
                   params: Mapping[str, Any], version: str,
                   run: Callable[[Mapping[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` whose tool may ask its caller: ``run(params)`` runs it (the
    approval path) with ``context`` answering from the round's state and ``inputResponses``; the
    complete result, or the ``InputRequiredResult`` of the requests still open."""
    responses = params.get("inputResponses")
    if responses is not None and not isinstance(responses, Mapping):
        raise rpc.RpcError(rpc.INVALID_PARAMS, "params.inputResponses must be an object.")
    settings, state = pipe.settings, params.get("requestState")
    given: dict[str, Any] = {}
    approved: str | None = None
    seal = None
    if state is not None and not current_app.secret_key and not needs_approval(
            tool, destructive=settings.approve_destructive):
        raise invalid_state()  # no state was ever sealed here
    if state is not None and current_app.secret_key:
        seal = round_sealer(settings.approval_ttl, settings.server_name)
        try:
            given, approved = open_round(seal, state, tool, arguments or {}, _subject(context),
                                         settings.state_storage_uri)
            params = {k: v for k, v in params.items() if k != "requestState"}  # not an approval's state
            if approved:  # approved in an earlier round: its approval, as the client would send it
                params = {**params, "requestState": approved,
                          "inputResponses": {**(responses or {}), APPROVAL_KEY: APPROVED}}
        except InvalidApproval as exc:  # only an unsealed one may be an approval's state (its own purpose)
            if not isinstance(exc, UnsealedState) or not needs_approval(tool, destructive=settings.approve_destructive):
                log.info("flask-tooldiscovery: mcp tools/call %s refused: %s (trace_id=%s)", tool.name, exc.reason,
                         context.trace_id)
                raise invalid_state() from None
    asker = RoundAsker(given, responses, abilities(params))
    context.asker = asker
    result = run(params)
    if asker.missing is not None and result.get("isError"):
        raise mcp_tasks.missing({asker.missing: {}})
    if asker.invalid is not None and result.get("isError"):
        raise rpc.RpcError(rpc.INVALID_PARAMS, f"Invalid inputResponses: {asker.invalid}.")
    if asker.pending and result.get("isError"):
        if not current_app.secret_key:  # nothing to seal with: the answers of this request only (ephemeral)
            return input_required(asker.pending, None, version)
        seal = seal or round_sealer(settings.approval_ttl, settings.server_name)
        sealed = seal_round(seal, tool, arguments or {}, _subject(context), context.call_id, asker.answers,
                            approval_again(pipe, tool, arguments, context))
        return input_required(asker.pending, sealed, version)
    return result


__all__ = ["APPROVAL_KEY", "APPROVED", "INVALID_STATE", "METHODS", "abilities", "approval_again", "call_in_rounds",
           "input_required", "invalid_state", "wire_request"]
