"""The call services the serving core uses around a tool call: approvals, rate limits, the slots
of one worker, streamed calls, input rounds, callbacks, rendezvous and single-use keys, and the
shared records (tasks, subscriptions, changes) kept in process memory or in Redis."""
