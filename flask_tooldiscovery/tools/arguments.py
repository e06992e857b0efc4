"""A tool's arguments, checked and loaded before it runs: ``None`` read as ``{}``, strings coerced
to the declared types when asked, the input schema checked, then the JSON values loaded into the
Python values the function declared. :func:`prepare` is what a call does first (``runtime.invoke``,
the approval seal, a dialect deciding whether to accept a task); :func:`check_arguments` only
validates."""

from __future__ import annotations

import logging
import weakref
from typing import Any

from jsonschema.exceptions import SchemaError
from marshmallow import ValidationError as MarshmallowValidationError

from ..schema.argument_validation import ArgumentError, quick_check_of, validate_arguments
from ..schema.coerce import Coercion, coercion
from ..schema.quick_check import Check
from .model import Tool

log = logging.getLogger("flask_tooldiscovery")
#: Each tool's compiled argument coercion (its input schema read once, not on every call), with
#: the resolved schema it was compiled from.
_COERCIONS: weakref.WeakKeyDictionary[Tool, tuple[dict[str, Any], Coercion]] = weakref.WeakKeyDictionary()
#: Each tool's quick argument check (``None``: it has none), with the input schema it was made for.
_CHECKS: weakref.WeakKeyDictionary[Tool, tuple[Any, Check | None]] = weakref.WeakKeyDictionary()


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
    if coerce:
        schema = tool.resolved_input_schema
        compiled = _COERCIONS.get(tool)
        if compiled is None or compiled[0] is not schema:  # new, or its schema was assigned anew
            compiled = _COERCIONS[tool] = (schema, coercion({"type": "object", **schema}))
        arguments = compiled[1](arguments)
    schema = tool.input_schema
    checked = _CHECKS.get(tool)
    if checked is None or checked[0] is not schema:  # the tool's quick check, found once per schema
        try:
            checked = _CHECKS[tool] = (schema, quick_check_of(schema))
        except SchemaError:
            checked = (schema, None)  # answered (and logged) below
    if checked[1] is None or not checked[1](arguments):  # not known valid at a glance: every error
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


__all__ = ["check_arguments", "prepare"]
