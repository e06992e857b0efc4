"""One invocation path for every dialect: coerce, validate, load, call (sync or async), time it.

:func:`invoke` never raises for a client's mistake or a tool's failure; it returns an
:class:`Outcome` that each dialect translates into its wire format.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import datetime as _dt
import decimal
import enum
import inspect
import json
import logging
import math
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jsonschema.exceptions import SchemaError
from marshmallow import ValidationError as MarshmallowValidationError

from .async_bridge import run_sync
from .json_schema import ArgumentError, parameter_errors, primary_type, split_nullable, validate_arguments
from .tool import Tool, ToolContext, ToolError

log = logging.getLogger("flask_tooldiscovery")

GENERIC_FAILURE = "The tool failed with an unexpected error."
_INT = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class Failure:
    """Why a tool call failed, in the words that may be shown to a client."""

    message: str
    developer_message: str | None = None
    can_retry: bool = False
    retry_after_ms: int | None = None
    additional_prompt_content: str | None = None
    #: True when the tool raised :class:`ToolError` on purpose.
    expected: bool = True

    @classmethod
    def from_tool_error(cls, exc: ToolError) -> Failure:
        return cls(
            message=exc.message,
            developer_message=exc.developer_message,
            can_retry=exc.can_retry,
            retry_after_ms=exc.retry_after_ms,
            additional_prompt_content=exc.additional_prompt_content,
        )


@dataclass(frozen=True)
class Outcome:
    """The result of one call, before any dialect has shaped it.

    ``status`` is ``"success"`` (``value`` holds the JSON-ready return value), ``"invalid"``
    (``errors`` says how the arguments fail the input schema; the tool did not run) or
    ``"failure"`` (the tool ran and failed; ``failure`` says how).
    """

    tool: Tool
    call_id: str
    status: Literal["success", "invalid", "failure"]
    value: Any = None
    failure: Failure | None = None
    errors: tuple[ArgumentError, ...] = ()
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the tool ran and succeeded."""
        return self.status == "success"

    @property
    def parameter_errors(self) -> dict[str, str]:
        """``{parameter: message}`` for invalid arguments."""
        return parameter_errors(self.errors)

    @property
    def error_message(self) -> str:
        """One readable sentence for dialects that carry a single message."""
        if self.status == "invalid":
            parts = [
                (f"{e.parameter}: " if e.parameter else "") + e.message for e in self.errors
            ]
            return "Invalid arguments: " + "; ".join(parts)
        if self.failure is not None:
            return self.failure.message
        return ""


def to_jsonable(value: Any) -> Any:
    """Turn a tool's return value into JSON-ready data (dataclasses, enums, sets, dates...)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError("NaN and infinity cannot be sent as JSON")
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json"))
    raise TypeError(f"a value of type {type(value).__name__} cannot be sent as JSON")


def _parse_literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def coerce_value(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Best-effort: a string turned into the type ``schema`` declares, when it parses cleanly.

    Strings that do not parse are returned unchanged so that validation reports them.
    """
    if not isinstance(schema, Mapping) or not schema:
        return value
    inner, nullable = split_nullable(dict(schema))
    target = primary_type(inner, default="")
    if isinstance(value, str):
        text = value.strip()
        if nullable and text in ("null", "None", ""):
            return None
        if target == "integer" and _INT.match(text):
            return int(text)
        if target == "number":
            if _INT.match(text):
                return int(text)
            try:
                number = float(text)
            except ValueError:
                return value
            return number if math.isfinite(number) else value
        if target == "boolean":
            lowered = text.lower()
            if lowered in ("true", "1", "yes"):
                return True
            if lowered in ("false", "0", "no"):
                return False
            return value
        if target in ("array", "object"):
            parsed = _parse_literal(text)
            if isinstance(parsed, tuple):
                parsed = list(parsed)
            if target == "array" and isinstance(parsed, (set, frozenset)):
                parsed = list(parsed)
            if (target == "array" and isinstance(parsed, list)) or (
                target == "object" and isinstance(parsed, dict)
            ):
                return coerce_value(parsed, inner)
        return value
    if isinstance(value, dict) and target == "object":
        props = inner.get("properties") or {}
        extra = inner.get("additionalProperties")
        return {
            k: coerce_value(v, props.get(k, extra if isinstance(extra, Mapping) else None))
            for k, v in value.items()
        }
    if isinstance(value, list) and target == "array":
        items = inner.get("items")
        return [coerce_value(v, items if isinstance(items, Mapping) else None) for v in value]
    return value


def _call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext,
    call_handler: Callable[..., Any] | None,
) -> Any:
    if tool.func is not None:
        kwargs = dict(arguments)
        for name in tool.context_params:
            kwargs[name] = context
        result = tool.func(**kwargs)
    elif call_handler is not None:
        result = call_handler(tool.name, dict(arguments))
    else:
        raise ToolError(
            f"Tool {tool.name!r} cannot be run here.",
            developer_message="the tool comes from a provider and the extension has no call_handler",
        )
    if inspect.isawaitable(result):  # async tools and async call handlers; timeout enforced here
        awaitable = result

        async def wait() -> Any:
            return await (asyncio.wait_for(awaitable, tool.timeout) if tool.timeout else awaitable)

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


def check_arguments(tool: Tool, arguments: Any, logger: logging.Logger | None = None) -> list[ArgumentError]:
    """How ``arguments`` fail ``tool``'s input schema (empty when valid).

    A schema that cannot be compiled is reported as one error with keyword ``schema``: nothing
    validates against it, and nothing raises.
    """
    if not isinstance(arguments, dict):
        return [ArgumentError("", None, "Arguments must be a JSON object.", "type")]
    try:
        return validate_arguments(tool.input_schema, arguments)
    except SchemaError as exc:
        (logger or log).error("tool %s has an invalid input schema: %s", tool.name, exc.message)
        return [ArgumentError("", None, "The tool's input schema is not a valid JSON Schema.", "schema")]


def invoke(
    tool: Tool,
    arguments: Any,
    context: ToolContext,
    *,
    coerce: bool = False,
    call_handler: Callable[..., Any] | None = None,
    logger: logging.Logger | None = None,
) -> Outcome:
    """Validate ``arguments`` against ``tool``'s input schema and run it.

    ``coerce`` first turns string values into the declared types where they parse (for clients
    that send everything as strings). Never raises for bad input or a failing tool.
    """
    logger = logger or log
    started = time.perf_counter()

    def done(status: str, **fields: Any) -> Outcome:
        outcome = Outcome(
            tool=tool, call_id=context.call_id, status=status,  # type: ignore[arg-type]
            duration_ms=(time.perf_counter() - started) * 1000.0, **fields,
        )
        logger.info(
            "tool call tool=%s version=%s dialect=%s call_id=%s outcome=%s duration_ms=%.2f",
            tool.name, tool.version, context.dialect, context.call_id, status, outcome.duration_ms,
        )
        return outcome

    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return done("invalid", errors=(
            ArgumentError("", None, "Arguments must be a JSON object.", "type"),
        ))
    if coerce:
        arguments = coerce_value(arguments, {"type": "object", **tool.resolved_input_schema})
    errors = check_arguments(tool, arguments, logger)
    if errors:
        return done("invalid", errors=tuple(errors))

    if tool.func is not None and tool.load_arguments is not None:
        try:  # into the Python values the function declared (enum members, dataclasses...)
            arguments = tool.load_arguments(arguments)
        except Exception as exc:
            return done("invalid", errors=_loader_errors(exc))
    try:
        value = _call(tool, arguments, context, call_handler)
    except ToolError as exc:
        if exc.developer_message:
            logger.info("tool %s raised ToolError: %s", tool.name, exc.developer_message)
        return done("failure", failure=Failure.from_tool_error(exc))
    except TimeoutError as exc:
        if tool.timeout is None:
            return _unexpected(exc, tool, logger, done)
        return done("failure", failure=Failure(
            message=f"The tool did not finish within {tool.timeout:g} seconds.",
            can_retry=True, expected=False,
        ))
    except Exception as exc:
        return _unexpected(exc, tool, logger, done)
    try:
        value = to_jsonable(value)
    except TypeError as exc:
        return _unexpected(exc, tool, logger, done)
    return done("success", value=value)


def _unexpected(exc: BaseException, tool: Tool, logger: logging.Logger, done: Callable[..., Outcome]) -> Outcome:
    logger.error("tool %s failed with an unexpected error", tool.name, exc_info=(type(exc), exc, exc.__traceback__))
    return done("failure", failure=Failure(message=GENERIC_FAILURE, expected=False))
