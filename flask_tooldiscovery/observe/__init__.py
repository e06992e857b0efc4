"""Observability of tool calls: the library's logger and call log format, Prometheus metrics,
OpenTelemetry spans, and the operations (rate limit, span, metrics) around every call."""
