"""One invocation path for every dialect: coerce, validate, load, call (sync or async), time it.

:func:`invoke` never raises for a client's mistake or a tool's failure; it returns an
:class:`~flask_tooldiscovery.tools.results.Outcome` that each dialect translates into its wire
format. :func:`prepare` makes the checks a call makes before it runs, without running it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from jsonschema.exceptions import SchemaError
from marshmallow import ValidationError as MarshmallowValidationError

from ..errors import ToolDiscoveryError
from ..schema.argument_validation import ArgumentError, quick_check_of, validate_arguments
from ..schema.coerce import Coercion, coercion, to_jsonable
from ..schema.quick_check import Check
from ..tools.envelope import Envelope
from ..tools.model import Tool, ToolContext, ToolError
from ..tools.questions import CannotAsk, InputRequired
from ..tools.results import CANCELLED as CANCELLED
from ..tools.results import GENERIC_FAILURE as GENERIC_FAILURE
from ..tools.results import Failure as Failure
from ..tools.results import Outcome as Outcome
from .async_bridge import run_sync
from .call_log import log, log_call

#: The keys of ``Tool._derived`` (worked out once per tool content) under which a tool's compiled
#: argument coercion and its quick argument check (``None``: it has none) are kept.
_COERCION, _CHECK = "runtime.coercion", "runtime.check"
#: The types of the values most tools return: never awaitable.
_PLAIN_VALUES = frozenset({dict, list, str, int, float, bool, type(None)})


class _DeadlinePassed(ToolDiscoveryError):
    """An async tool was cancelled at its call's deadline (not a ``TimeoutError`` the tool raised itself)."""


def _overran(tool: Tool, context: ToolContext, deadline: float, spent: float, logger: logging.Logger) -> None:
    logger.warning("tool %s ran %.3g seconds, past its deadline of %g: a sync tool cannot be stopped, so its "
                   "call waited for it and answers what it did (call_id=%s trace_id=%s)", tool.name, spent,
                   deadline, context.call_id, context.trace_id,
                   extra={"tool": tool.name, "call_id": context.call_id, "trace_id": context.trace_id})


def _call(tool: Tool, arguments: dict[str, Any], context: ToolContext, call_handler: Callable[..., Any] | None,
          deadline: float | None, logger: logging.Logger) -> Any:
    """Run the tool on this thread. A sync tool is never stopped: the call waits for it and answers
    what it did (past ``deadline``, a warning says so); an awaitable it returns (async tools, async
    call handlers) is cancelled at ``deadline``."""
    started = time.perf_counter()
    try:
        if tool.func is not None:
            if tool.context_params:
                arguments = dict(arguments)
                for name in tool.context_params:
                    arguments[name] = context
            result = tool.func(**arguments)
        elif call_handler is not None:
            result = call_handler(tool.name, dict(arguments))
        else:
            raise ToolError(
                f"Tool {tool.name!r} cannot be run here.",
                developer_message="the tool comes from a provider and the extension has no call_handler",
            )
    finally:
        if deadline and (spent := time.perf_counter() - started) > deadline:
            _overran(tool, context, deadline, spent, logger)
    # Async tools and async call handlers (a plain JSON value is never awaitable: no ABC asked); timeout
    # enforced here.
    if type(result) not in _PLAIN_VALUES and inspect.isawaitable(result):
        awaitable = result

        async def wait() -> Any:  # a cancelled call cancels the task, from whatever thread cancels it
            task = asyncio.ensure_future(awaitable)
            loop = asyncio.get_running_loop()

            def cancel() -> None:
                loop.call_soon_threadsafe(task.cancel)

            forget = context.on_cancel(cancel)
            try:
                return await (asyncio.wait_for(task, deadline) if deadline else task)
            except TimeoutError:
                if task.cancelled():  # cancelled by wait_for at the deadline, not the tool's own TimeoutError
                    raise _DeadlinePassed from None
                raise
            finally:
                forget()

        return run_sync(wait)
    return result


def _loader_errors(exc: Exception) -> tuple[ArgumentError, ...]:
    if isinstance(exc, MarshmallowValidationError) and isinstance(exc.messages, dict):
        out = []
        for key, msgs in exc.messages.items():
            text = "; ".join(msgs) if isinstance(msgs, list) and all(isinstance(m, str) for m in msgs) else str(msgs)
            out.append(ArgumentError(f"/{key}", str(key), text, "load"))
        return tuple(out)
    return (ArgumentError("", None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, "load"),)


def check_arguments(
    tool: Tool, arguments: Any, logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    *, max_errors: int | None = None,
) -> list[ArgumentError]:
    """How ``arguments`` fail ``tool``'s input schema (empty when valid), at most ``max_errors``
    of them: past that, one last entry says how many more there were.

    A schema that cannot be compiled is reported as one error with keyword ``schema``: nothing
    validates against it, and nothing raises.
    """
    if not isinstance(arguments, dict):
        return [ArgumentError("", None, "Arguments must be a JSON object.", "type")]
    try:
        errors = validate_arguments(tool.input_schema, arguments, limit=max_errors)
    except SchemaError as exc:
        (logger or log).error("tool %s has an invalid input schema: %s", tool.name, exc.message)
        return [ArgumentError("", None, "The tool's input schema is not a valid JSON Schema.", "schema")]
    return errors


def prepare(
    tool: Tool, arguments: Any, *, coerce: bool = False,
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None, max_errors: int | None = None,
) -> tuple[Any, tuple[ArgumentError, ...]]:
    """What :func:`invoke` does before it runs ``tool``: ``None`` read as ``{}``, a non-object
    refused, strings coerced (``coerce``), the input schema checked, then the arguments loaded
    into the Python values the function declared. ``(arguments ready to pass, ())``, or
    ``(arguments, errors)`` when they do not fit; nothing runs, nothing is logged but schema bugs."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return arguments, (ArgumentError("", None, "Arguments must be a JSON object.", "type"),)
    derived = tool._derived
    if coerce:
        coerced: Coercion | None = derived.get(_COERCION)
        if coerced is None:
            coerced = derived[_COERCION] = coercion({"type": "object", **tool.resolved_input_schema})
        arguments = coerced(arguments)
    schema = tool.input_schema
    if _CHECK not in derived:  # the tool's quick check, found once per tool content
        try:
            derived[_CHECK] = quick_check_of(schema)
        except SchemaError:
            derived[_CHECK] = None  # answered (and logged) below
    check: Check | None = derived[_CHECK]
    if check is None or not check(arguments):  # not known valid at a glance: every error
        try:
            errors = validate_arguments(schema, arguments, limit=max_errors)
        except SchemaError as exc:
            (logger or log).error("tool %s has an invalid input schema: %s", tool.name, exc.message)
            errors = [ArgumentError("", None, "The tool's input schema is not a valid JSON Schema.", "schema")]
        if errors:
            return arguments, tuple(errors)
    if tool.func is not None and tool.load_arguments is not None:
        try:  # into the Python values the function declared (enum members, dataclasses...)
            arguments = tool.load_arguments(arguments)
        except Exception as exc:
            return arguments, _loader_errors(exc)
    return arguments, ()


def invoke(
    tool: Tool,
    arguments: Any,
    context: ToolContext,
    *,
    coerce: bool = False,
    call_handler: Callable[..., Any] | None = None,
    logger: logging.Logger | None = None,
    max_errors: int | None = None,
    default_timeout: float | None = None,
) -> Outcome:
    """Validate ``arguments`` against ``tool``'s input schema and run it.

    ``coerce`` first turns string values into the declared types where they parse (for clients
    that send everything as strings). The deadline is the tool's ``timeout``, else
    ``default_timeout`` seconds (``None`` or 0: none): an async tool is cancelled there and its
    call answered as failed (retryable); a sync tool runs on this thread and cannot be stopped, so
    its call waits for it and answers what it did, and a warning says it overran. Never raises for
    bad input or a failing tool. Every log line names the call id and trace id.
    """
    base = logger or log
    started = time.perf_counter()
    deadline = tool.timeout or default_timeout or None
    arguments, errors = prepare(tool, arguments, coerce=coerce, logger=base, max_errors=max_errors)
    if errors:
        return _done(tool, context, base, started, "invalid", errors=errors)
    try:
        value = _call(tool, arguments, context, call_handler, deadline, base)
    except asyncio.CancelledError:
        _call_log(tool, context, base).info("tool %s was cancelled (%s)", tool.name, _ids(context))
        return _done(tool, context, base, started, "failure", failure=Failure(message=CANCELLED, cancelled=True))
    except InputRequired as exc:  # the round ends: the caller answers, and the call runs again
        return _done(tool, context, base, started, "failure", failure=Failure(message=str(exc)))
    except CannotAsk as exc:  # it asked its caller, who cannot answer where it runs
        return _done(tool, context, base, started, "failure", failure=Failure(message=str(exc)))
    except ToolError as exc:
        if exc.developer_message:
            _call_log(tool, context, base).info("tool %s raised ToolError (%s): %s", tool.name, _ids(context),
                                                exc.developer_message)
        return _done(tool, context, base, started, "failure", failure=Failure.from_tool_error(exc))
    except _DeadlinePassed:
        return _done(tool, context, base, started, "failure", failure=Failure(
            message=f"The tool did not finish within {deadline:g} second{'' if deadline == 1 else 's'}.",
            can_retry=True, expected=False,
        ))
    except Exception as exc:
        return _unexpected(tool, context, base, started, exc)
    mime_type = tool.metadata.get("result_mime_type")
    try:
        if isinstance(value, Envelope):
            wire = value.to_wire(lambda v: to_jsonable(v, bytes_mime_type=mime_type))
            if value.error is not None:
                retry = value.error.get("retry_after")
                return _done(tool, context, base, started, "failure", envelope=wire, failure=Failure(
                    message=str(value.error_message), can_retry=isinstance(retry, int),
                    retry_after_ms=retry * 1000 if isinstance(retry, int) else None))
            return _done(tool, context, base, started, "success", value=wire.get("content", value.message),
                         envelope=wire)
        value = to_jsonable(value, bytes_mime_type=mime_type)
    except (TypeError, ValueError) as exc:
        return _unexpected(tool, context, base, started, exc)
    return _done(tool, context, base, started, "success", value=value)


def _call_log(tool: Tool, context: ToolContext, base: logging.Logger) -> logging.LoggerAdapter[logging.Logger]:
    """The logger of a call's lines beyond its call log line (made only when there is more to say)."""
    return logging.LoggerAdapter(base, {"tool": tool.name, "call_id": context.call_id, "trace_id": context.trace_id})


def _ids(context: ToolContext) -> str:
    return f"call_id={context.call_id} trace_id={context.trace_id}"


#: What an :class:`Outcome` holds unless told otherwise.
_OUTCOME_DEFAULTS = {"value": None, "failure": None, "errors": (), "envelope": None}


def _done(tool: Tool, context: ToolContext, base: logging.Logger, started: float, status: str,
          **fields: Any) -> Outcome:
    """The call's :class:`Outcome`, its call log line written. Made as the frozen dataclass's
    ``__init__`` would make it, without its ``object.__setattr__`` per field (which costs more
    than the rest of a plain call's bookkeeping here)."""
    outcome: Outcome = object.__new__(Outcome)
    outcome.__dict__.update(_OUTCOME_DEFAULTS, tool=tool, call_id=context.call_id, status=status,
                            duration_ms=(time.perf_counter() - started) * 1000.0, **fields)
    if base.isEnabledFor(logging.INFO):
        log_call(tool, context, status, outcome.duration_ms, logger=base)
    return outcome


def _unexpected(tool: Tool, context: ToolContext, base: logging.Logger, started: float,
                exc: BaseException) -> Outcome:
    _call_log(tool, context, base).error("tool %s failed with an unexpected error (%s)", tool.name, _ids(context),
                                         exc_info=(type(exc), exc, exc.__traceback__))
    return _done(tool, context, base, started, "failure", failure=Failure(message=GENERIC_FAILURE, expected=False))
