"""The call services the serving core uses around a tool call: approvals, rate limits, the slots
of one worker, streamed calls, input rounds, and the callbacks to a URL a client named (with the
address rules identity's metadata fetches share). The shared records they keep are in
:mod:`..state`, calls that outlive their request in :mod:`..tasks`."""
