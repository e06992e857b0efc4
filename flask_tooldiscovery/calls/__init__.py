"""The call services the serving core uses around a tool call: approvals, rate limits, the slots
of one worker, streamed calls, input rounds, and where a request to a URL a client named may go
(:mod:`.outbound`: a task's callback, identity's metadata fetches). The shared records they keep are in
:mod:`..state`, calls that outlive their request in :mod:`..tasks`.

This module is the call services' face to the dialects, the only way a dialect reaches them (the
serving core's pipeline runs them around a call; a dialect's wire carries what they exchange with
the client): a streamed call (:func:`.streaming.stream_call`, the items it yields, a stream's calls
in flight), an approval as the wire carries it (the ``X-Tool-Approval`` header, :class:`.approvals.Approval`,
the sealer of what a client carries back) and the rounds of input requests (:mod:`.input_rounds`).
The other modules are the serving core's."""

from .approvals import APPROVAL_HEADER, Approval, Sealable, Sealer, sealer
from .input_rounds import Named, RoundAsker, open_round, round_sealer, seal_round
from .streaming import InFlight, KeepAlive, StreamItem, stream_call

__all__ = ["APPROVAL_HEADER", "Approval", "InFlight", "KeepAlive", "Named", "RoundAsker", "Sealable", "Sealer",
           "StreamItem", "open_round", "round_sealer", "seal_round", "sealer", "stream_call"]
