"""The call runtime: one invocation path for every dialect (coerce, validate, call, time it), the
bridge that runs coroutines from Flask's sync views, and the call log."""
