"""Observability of tool calls: the library's logger and call log format, Prometheus metrics and
OpenTelemetry spans (the serving core's operations around every call use them)."""
