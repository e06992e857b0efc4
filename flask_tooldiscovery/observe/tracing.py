"""One OpenTelemetry span per tool call (the ``otel`` extra: ``opentelemetry-api``).

``TOOLDISCOVERY_OTEL`` turns it on. The span follows the semantic conventions for GenAI tool
execution: named ``execute_tool <tool>``, kind INTERNAL, with ``gen_ai.operation.name`` =
``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type`` and
``gen_ai.tool.description``; on failure, status ERROR and ``error.type``. Arguments and results
are never recorded. Its parent is the span already current (an instrumented Flask app's server
span), else the W3C ``traceparent`` the call came with (MCP's ``_meta.traceparent``; the header
of the request it came on, as its request state holds it: a task carries it where it runs). The
app configures the SDK (tracer provider, exporter) as usual; without one, spans are no-ops.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from typing import TYPE_CHECKING, Any

from ..settings import SettingsError, key
from ..tools.model import Tool, ToolContext

if TYPE_CHECKING:  # pragma: no cover
    from werkzeug.datastructures import Headers

INSTALL = 'pip install "flask-tooldiscovery[otel]"'
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def _package_version() -> str:
    """This package's version as installed (the span's instrumentation scope version)."""
    try:
        return metadata.version("flask-tooldiscovery")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def require() -> None:
    """:class:`~.settings.SettingsError` with the install line when the API is missing."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        raise SettingsError(f"{key('OTEL')} needs the OpenTelemetry API: {INSTALL}") from None


class Tracer:
    """Starts the span of one call; the tracer comes from the global provider at each call, so
    one set up after ``init_app`` is used."""

    def __init__(self) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._version = _package_version()

    @contextmanager
    def span(self, tool: Tool, context: ToolContext, dialect: str,
             headers: Mapping[str, Any] | Headers | None = None) -> Iterator[Any]:
        """The call's span, current for the ``with`` block (a tool's own spans nest under it);
        ``headers``: those of the request the call came on (its ``traceparent``), if any."""
        from opentelemetry import propagate
        from opentelemetry.trace import SpanKind

        parent = None
        if not self._trace.get_current_span().get_span_context().is_valid:
            given = (context.trace_id or "").strip().lower()
            carrier: Any = {"traceparent": given} if _TRACEPARENT.match(given) else (headers or {})
            parent = propagate.extract(carrier)
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.name,
                      "gen_ai.tool.call.id": context.call_id, "gen_ai.tool.type": "function",
                      "tooldiscovery.dialect": dialect, "tooldiscovery.tool.version": tool.version}
        if tool.description:
            attributes["gen_ai.tool.description"] = tool.description
        tracer = self._trace.get_tracer("flask_tooldiscovery", self._version)
        with tracer.start_as_current_span(f"execute_tool {tool.name}", context=parent, kind=SpanKind.INTERNAL,
                                          attributes=attributes) as span:
            yield span

    def failed(self, span: Any, error_type: str, message: str) -> None:
        """Mark ``span`` as failed: status ERROR with ``message``, ``error.type`` = ``error_type``."""
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, message))


__all__ = ["Tracer", "require"]
