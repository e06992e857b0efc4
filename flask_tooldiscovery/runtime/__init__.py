"""The call runtime: one invocation path for every dialect (coerce, validate, call, time it), the
bridge that runs coroutines from Flask's sync views, the call log, and who is told when a
registry changes."""
