"""A ``prompts/get`` or ``resources/read`` whose function asks its caller (``ctx.elicit``,
``ctx.sample``, ``ctx.list_roots``, ``ctx.ask_all``) as a tool does, by the tools' own mechanism:
in the stateless era in rounds of ``InputRequiredResult`` (:func:`.input_requests.in_rounds`: the state
sealed for this method, the prompt or resource, its arguments and the caller, good once); in the
handshake era on the request's own SSE stream, opened once the function asks or logs
(:mod:`.stream`), the answers handed over by the rendezvous. A request nobody can answer is -32603
saying so (-32021 in the stateless era when the client did not declare the capability)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ...serving.pipeline import Pipeline
from ...tools.model import ToolContext
from ...tools.questions import CannotAsk, InputRequired
from . import input_requests as mcp_input
from . import jsonrpc as rpc
from . import stream as mcp_stream
from .request import McpRequest

T = TypeVar("T")


@dataclass(frozen=True)
class Rendered(Generic[T]):
    """What the function returned, once it had every answer it asked for."""

    value: T


def asking(pipe: Pipeline, req: McpRequest, target: str, bound: Mapping[str, Any] | None,
           render: Callable[[ToolContext], T], label: str,
           error_data: Mapping[str, Any]) -> Rendered[T] | dict[str, Any]:
    """Run ``render`` (the prompt's or resource's function, given the caller's context) for the
    request ``req``, its state bound to ``target`` (a name) and ``bound`` (its arguments): what
    it returned, or the ``InputRequiredResult`` of the requests still open. ``label`` names it in
    the error of a request that could not be asked, whose ``data`` is ``error_data``."""
    meta = req.params.get("_meta")
    context = pipe.context(extra={"meta": meta if isinstance(meta, dict) else {}})
    unanswered: list[CannotAsk] = []

    def run(_: Any) -> Rendered[T] | None:
        try:
            with pipe.core.slots.hold():
                return Rendered(render(context))
        except InputRequired:  # the round ends: the caller answers, and the function runs again
            return None
        except CannotAsk as exc:
            unanswered.append(exc)
            return None

    forget = mcp_stream.listen(pipe, context, req)  # cancellable; handshake era: asks on the request's stream
    try:
        out = mcp_input.in_rounds(pipe, target, dict(bound or {}), context, req, run,
                                  lambda r: r is None) if req.stateless else run(req.params)
    finally:
        forget()
    if out is None:
        said = str(unanswered[0]) if unanswered else "it asked for nothing it could be given"
        raise rpc.RpcError(rpc.INTERNAL_ERROR, f"{label} could not ask its caller: {said}",
                           {**error_data, "reason": "cannot_ask"})
    return out


__all__ = ["Rendered", "asking"]
