"""The call services the serving core uses around a tool call: approvals, rate limits, the slots
of one worker, streamed calls, input rounds, and where a request to a URL a client named may go
(:mod:`.outbound`: a task's callback, identity's metadata fetches). The shared records they keep are in
:mod:`..state`, calls that outlive their request in :mod:`..tasks`."""
