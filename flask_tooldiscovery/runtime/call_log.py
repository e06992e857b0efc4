"""The call log: one INFO line per tool call on the ``flask_tooldiscovery`` logger, with the
call's fields as the record's ``extra`` (how it is shown: :mod:`flask_tooldiscovery.observe.logs`)."""

from __future__ import annotations

import logging

from ..tools.model import Tool, ToolContext

#: The logger every line of the library goes to.
LOGGER_NAME = "flask_tooldiscovery"
log = logging.getLogger(LOGGER_NAME)

#: The ``extra`` fields a call's log records carry (JSON lines include them as keys).
CALL_FIELDS = ("tool", "version", "dialect", "call_id", "trace_id", "outcome", "duration_ms")


def log_call(tool: Tool, context: ToolContext, outcome: str, duration_ms: float, *, status: int | None = None,
             logger: logging.Logger = log) -> None:
    """The INFO line of one call (``outcome``: ``success``, ``invalid``, ``failure``, or ``refused``
    with the refusal's HTTP ``status``), its :data:`CALL_FIELDS` as the record's ``extra``."""
    if not logger.isEnabledFor(logging.INFO):
        return
    logger.info(
        "tool call tool=%s version=%s dialect=%s call_id=%s trace_id=%s outcome=%s%s duration_ms=%.2f",
        tool.name, tool.version, context.dialect, context.call_id, context.trace_id, outcome,
        "" if status is None else f" status={status}", duration_ms,
        extra={"tool": tool.name, "version": tool.version, "dialect": context.dialect, "call_id": context.call_id,
               "trace_id": context.trace_id, "outcome": outcome, "duration_ms": round(duration_ms, 3)},
    )


__all__ = ["CALL_FIELDS", "LOGGER_NAME", "log", "log_call"]
