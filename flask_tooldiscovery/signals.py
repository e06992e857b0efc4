"""Signals around every tool call a dialect makes, the Flask way (blinker, as Flask's own).

Each is sent by the core (never by a dialect) with the app as sender and these keyword
arguments: ``tool`` (the :class:`~flask_tooldiscovery.Tool`), ``dialect``, ``call_id``, ``trace_id``,
``identity`` (the caller's :class:`~flask_tooldiscovery.Identity`, or ``None``) and ``duration_ms``. Per call,
:data:`tool_called` comes first, then exactly one of the other three::

    from flask_tooldiscovery.signals import tool_failed

    @tool_failed.connect_via(app)
    def page_someone(app, tool, outcome, **fields):
        ...

A receiver runs in the request's thread; an exception it raises reaches the request, as with
Flask's signals.
"""

from __future__ import annotations

from blinker import Namespace

_signals = Namespace()

#: A call is about to run (before its rate limit and call slot are checked); ``duration_ms`` is 0.
tool_called = _signals.signal("tooldiscovery-tool-called")
#: The tool ran and returned; ``outcome`` is the :class:`~flask_tooldiscovery.Outcome`.
tool_succeeded = _signals.signal("tooldiscovery-tool-succeeded")
#: The call did not succeed: invalid arguments (the tool did not run) or a failing tool;
#: ``outcome`` is the :class:`~flask_tooldiscovery.Outcome` (``None`` when an unexpected exception left the
#: core, then ``error`` is that exception).
tool_failed = _signals.signal("tooldiscovery-tool-failed")
#: The call was refused before the tool ran; ``error`` is the core error (``RateLimited``,
#: ``Busy``, or the explorer auth hook's refusal).
tool_refused = _signals.signal("tooldiscovery-tool-refused")

__all__ = ["tool_called", "tool_failed", "tool_refused", "tool_succeeded"]
