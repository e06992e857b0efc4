"""The serving core every dialect goes through: the pipeline (guard, identity, body, tool set,
then invoke or a task), each mounted dialect's authenticator, the request checks, CORS and
security headers, discovery caches and the fast path, the wire helpers dialects share, calls made
from outside a request, and the operations around every call (the rate limit, signals, span and
metrics)."""
