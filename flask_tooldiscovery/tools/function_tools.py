"""A decorated function as a :class:`~.model.Tool`: the options ``@discovery.tool(...)`` accepts,
their checks, the tool-name rule, and :func:`tool_from_function` (schemas from the signature or
given explicitly, checked once at registration)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import RegistrationError as RegistrationError
from ..schema.check import InvalidSchemaError, check_schema
from ..schema.json_schema import walk
from ..schema.signature import describe_function
from ..schema.sources import resolve_input_schema, resolve_output_schema
from ..settings_parsers import icons as read_icons
from .envelope import return_annotation, returns_envelope
from .model import METADATA_OPTIONS, Tool, parse_version
from .platform_options import PLATFORM_OPTIONS, PlatformOptionError, platform_metadata
from .questions import options_error as questions_error
from .results import mime_type_error

#: Every keyword ``@discovery.tool(...)`` accepts.
TOOL_OPTIONS = (
    "name", "description", "title", "input_schema", "output_schema", "annotations", "category",
    "tags", "version", "toolkit", "examples", "requirements", "timeout", "scopes", "visible", *METADATA_OPTIONS,
    *PLATFORM_OPTIONS, "proteus",  # its native Opal UI (catalog/proteus.py)
)
#: MCP's tool-name rule (1-128 of letters, digits, "_", "-", "."), ASCII only, no "..": safe in
#: every dialect's URLs and ids.
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def valid_tool_name(name: Any) -> bool:
    """True for a name every dialect can carry safely."""
    return isinstance(name, str) and bool(_NAME.fullmatch(name)) and ".." not in name


_REQUIREMENT_KEYS = {"authorization", "secrets", "user_id"}


@dataclass(frozen=True)
class OptionRule:
    """How a layer above the tool model checks and keeps some of the options (``catalog.ui``:
    ``ui``, ``visibility``, ``proteus``), registered with :func:`add_option_rule` when it is imported."""

    #: Why the options cannot work (``None``: they can), asked at registration.
    error: Callable[[Mapping[str, Any]], str | None]
    #: Writes what the tool keeps of the options (the second argument) into its metadata (the third).
    keep: Callable[[Mapping[str, Any], dict[str, Any]], None]


_RULES: list[OptionRule] = []


def add_option_rule(rule: OptionRule) -> None:
    """Check and keep some options by ``rule`` from now on."""
    _RULES.append(rule)


def _check_options(label: str, options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(TOOL_OPTIONS))
    if unknown:
        raise RegistrationError(
            f"{label}: unknown option(s) {', '.join(unknown)}; known: {', '.join(TOOL_OPTIONS)}"
        )
    if options.get("version") is not None:
        try:
            parse_version(options["version"])
        except ValueError as exc:
            raise RegistrationError(f"{label}: {exc}") from None
    req = options.get("requirements")
    if req is not None and (not isinstance(req, Mapping) or set(req) - _REQUIREMENT_KEYS):
        raise RegistrationError(
            f"{label}: requirements must be a dict with keys among {sorted(_REQUIREMENT_KEYS)}"
        )
    timeout = options.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise RegistrationError(f"{label}: timeout must be a positive number of seconds")
    rate = options.get("rate_limit_per_minute")
    if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0):
        raise RegistrationError(f"{label}: rate_limit_per_minute must be a positive whole number")
    for key in ("tags", "scopes"):
        if options.get(key) is not None and (isinstance(options[key], str)
                                             or not all(isinstance(t, str) for t in options[key])):
            raise RegistrationError(f"{label}: {key} must be a list of strings")
    if options.get("result_mime_type") is not None and (error := mime_type_error(options["result_mime_type"])):
        raise RegistrationError(f"{label}: result_mime_type: {error}")
    if options.get("task_support") not in (None, "forbidden", "optional", "required"):
        raise RegistrationError(f"{label}: task_support must be 'forbidden', 'optional' or 'required'")
    if options.get("questions") is not None and (error := questions_error(options["questions"])):
        raise RegistrationError(f"{label}: {error}")
    if options.get("icons") is not None:
        try:
            read_icons(options["icons"])
        except ValueError as exc:
            raise RegistrationError(f"{label}: {exc}") from None
    for rule in _RULES:
        if (error := rule.error(options)) is not None:
            raise RegistrationError(f"{label}: {error}")
    if options.get("visible") is not None and not callable(options["visible"]):
        raise RegistrationError(f"{label}: visible must be a callable taking the caller's Identity (or None)")


def normalize_requirements(req: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Requirements as OXP writes them: ``authorization``/``secrets`` as lists of ``{"id"}``."""
    if not req:
        return None
    out: dict[str, Any] = {}
    for key in ("authorization", "secrets"):
        items = req.get(key)
        if items:
            out[key] = [{"id": i} if isinstance(i, str) else dict(i) for i in items]
    if req.get("user_id"):
        out["user_id"] = True
    return out or None


_SAFE_SCALARS = frozenset((str, bool, type(None)))


def _unrepresentable(value: Any) -> Any:
    """The first number in a JSON value that strict readers refuse, or ``None``: a non-finite
    float (JSON has no ``Infinity`` or ``NaN``) or an integer outside int64 (protobuf consumers)."""
    if type(value) in _SAFE_SCALARS:
        return None
    if (isinstance(value, float) and not math.isfinite(value)) or (
            isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63):
        return value
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
    return next((bad for bad in map(_unrepresentable, items) if bad is not None), None)


def _check_defaults(label: str, schema: Any) -> None:
    """Refuse a ``default`` anywhere in ``schema`` that a wire format cannot carry."""
    for path, node in walk(schema):
        if "default" in node and (bad := _unrepresentable(node["default"])) is not None:
            where = "the input schema" if len(path) < 2 else \
                f"{'parameter' if path[0] == 'properties' else path[0]} {path[1]!r}"
            raise RegistrationError(
                f"{label}: {where} has a default holding {bad!r} (at /{'/'.join((*path, 'default'))}); defaults "
                f"must be finite numbers and integers within int64 (-2**63 .. 2**63-1) to be sent as JSON"
            )


def tool_from_function(func: Callable[..., Any], options: Mapping[str, Any]) -> Tool:
    """Build a :class:`Tool` from a decorated function and its ``@tool(...)`` options."""
    label = f"tool {options.get('name') or getattr(func, '__name__', func)!r}"
    _check_options(label, options)
    explicit = options.get("input_schema") is not None
    desc = describe_function(func, name=options.get("name"), derive_input=not explicit,
                             result_mime_type=options.get("result_mime_type"))
    name = desc.name
    label = f"tool {name!r}"
    if not valid_tool_name(name):
        raise RegistrationError(
            f"{label}: a tool name is 1-128 ASCII letters, digits, '_', '-' and '.', without '..'"
        )
    input_schema, load = desc.input_schema, desc.load_arguments
    try:
        if explicit:
            input_schema, explicit_load = resolve_input_schema(
                options["input_schema"], what=f"{label}: input_schema"
            )
            load = explicit_load or (lambda args: dict(args))
        output_schema = (
            resolve_output_schema(options["output_schema"], what=f"{label}: output_schema")
            if options.get("output_schema") is not None
            else desc.output_schema
        )
        check_schema(input_schema, what=f"{label}: input_schema")
    except InvalidSchemaError as exc:
        raise RegistrationError(str(exc)) from None
    _check_defaults(label, input_schema)

    metadata = {k: options[k] for k in METADATA_OPTIONS if options.get(k) is not None}
    try:
        metadata.update(platform_metadata(options, input_schema))
    except PlatformOptionError as exc:
        raise RegistrationError(f"{label}: {exc}") from None
    if callable(metadata.get("rollback")):  # its own tool, listed nowhere: run by name as the rollback
        metadata["rollback"] = tool_from_function(metadata["rollback"], {})
    if returns_envelope(return_annotation(func)):  # the plain result's shape is the envelope's content's
        metadata["envelope"] = True
        output_schema = output_schema if options.get("output_schema") is not None else None
    if "icons" in metadata:
        metadata["icons"] = read_icons(metadata["icons"])
    for rule in _RULES:
        rule.keep(options, metadata)
    description = options.get("description") or desc.description
    return Tool(
        name=name,
        description=description.strip(),
        input_schema=input_schema,
        output_schema=output_schema,
        title=options.get("title"),
        annotations=dict(options["annotations"]) if options.get("annotations") else None,
        version=str(options.get("version") or "1.0.0"),
        toolkit=options.get("toolkit"),
        category=options.get("category"),
        tags=list(options.get("tags") or []),
        examples=list(options.get("examples") or []),
        requirements=normalize_requirements(options.get("requirements")),
        timeout=options.get("timeout"),
        metadata=metadata,
        scopes=tuple(options.get("scopes") or ()),
        visible=options.get("visible"),
        func=func,
        is_async=desc.is_async,
        context_params=desc.context_params,
        load_arguments=load,
    )
