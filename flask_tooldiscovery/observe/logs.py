"""The library's logger and how its call log is shown.

Every line the library writes goes to the ``flask_tooldiscovery`` logger: one INFO line per tool
call (:mod:`~flask_tooldiscovery.runtime.call_log`: tool, version, dialect, call id, trace id,
outcome, duration), WARNING for refused requests,
ERROR with the traceback for a tool's unexpected failure. Standard :mod:`logging` configuration
applies; ``TOOLDISCOVERY_CALL_LOG`` is a shortcut that shows the INFO lines on stderr, as text or
as JSON lines for log shippers.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from ..runtime.call_log import CALL_FIELDS, LOGGER_NAME

log = logging.getLogger(LOGGER_NAME)

class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the call fields, and the
    traceback (as ``exc_info`` text) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }
        for name in CALL_FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


JsonLinesFormatter.converter = time.gmtime  # UTC timestamps


class _CallLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``TOOLDISCOVERY_CALL_LOG`` installs (recognised, so it is installed once)."""


def show_call_log(mode: str | None) -> None:
    """``"text"`` or ``"json"``: show the library's INFO lines on stderr (once per process);
    ``None``: leave logging as the application configured it."""
    if not mode:
        return
    handler = next((h for h in log.handlers if isinstance(h, _CallLogHandler)), None)
    if handler is None:
        handler = _CallLogHandler(sys.stderr)
        log.addHandler(handler)
    handler.setFormatter(JsonLinesFormatter() if mode == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.setLevel(logging.INFO)
    log.propagate = mode != "json"  # JSON lines alone on stderr; text also reaches the app's handlers


__all__ = ["JsonLinesFormatter", "log", "show_call_log"]
