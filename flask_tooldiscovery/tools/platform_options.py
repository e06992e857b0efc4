"""Tool options that some agent platforms read (Opal's per-function fields), checked once when
the tool is registered and kept in its ``metadata``:

- ``sensitive``: ``True`` or an advisory sentence: the action needs the user's awareness (Opal
  shows it before the call); kept as the sentence (``True``: a generic one).
- ``wait``: the platform pauses the agent on each call until the caller says it is done.
- ``skippable_interaction``: the tool's confirmation card may be skipped (the tool then runs headless).
- ``in_context``: names of parameters the platform fills from its context rather than the model.
- ``principal_scope``: ``{parameter: scope}`` (at most one; ``im``, ``artifacts`` or
  ``personal_files``) for an optional string parameter the platform fills with the principal
  whose data the call may read; not on a long-running tool.
- ``rollback``: a function (registered as its own, unlisted tool) or the name of another tool
  that undoes what this one did (Opal's rollbacks); kept as that :class:`~.model.Tool` or name.

Values are those of the official Opal SDK's ``@tool`` (``models.py`` Function, ``decorators.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import PlatformOptionError as PlatformOptionError
from ..schema.json_schema import primary_type, split_nullable

PLATFORM_OPTIONS = ("sensitive", "wait", "skippable_interaction", "in_context", "principal_scope", "rollback")
PRINCIPAL_SCOPES = frozenset({"im", "artifacts", "personal_files"})
GENERIC_SENSITIVE = "This tool performs a sensitive action."


def platform_metadata(options: Mapping[str, Any], input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metadata`` entries of the platform options given (``rollback`` as given: a function is
    made a tool by the caller); :class:`PlatformOptionError` for a wrong one."""
    out: dict[str, Any] = {}
    properties = input_schema.get("properties") or {}
    sensitive = options.get("sensitive")
    if sensitive is True:
        out["sensitive"] = GENERIC_SENSITIVE
    elif isinstance(sensitive, str) and sensitive.strip():
        out["sensitive"] = sensitive.strip()
    elif sensitive not in (None, False, ""):
        raise PlatformOptionError("sensitive must be True or an advisory sentence")
    for flag in ("wait", "skippable_interaction"):
        if options.get(flag) is not None and not isinstance(options[flag], bool):
            raise PlatformOptionError(f"{flag} must be True or False")
        if options.get(flag):
            out[flag] = True
    in_context = options.get("in_context")
    if in_context is not None:
        names = [in_context] if isinstance(in_context, str) else list(in_context)
        if unknown := [n for n in names if n not in properties]:
            raise PlatformOptionError(f"in_context names no parameter {', '.join(map(repr, unknown))}")
        out["in_context"] = tuple(names)
    scope = options.get("principal_scope")
    if scope is not None:
        out["principal_scope"] = _principal_scope(scope, properties, set(input_schema.get("required") or ()),
                                                  long_running=bool(options.get("long_running")))
    rollback = options.get("rollback")
    if rollback is not None:
        if not (callable(rollback) or (isinstance(rollback, str) and rollback)):
            raise PlatformOptionError("rollback must be a function or the name of another tool")
        out["rollback"] = rollback
    return out


def _principal_scope(scope: Any, properties: Mapping[str, Any], required: set[str], *,
                     long_running: bool) -> tuple[str, str]:
    if not isinstance(scope, Mapping) or len(scope) != 1:
        raise PlatformOptionError("principal_scope must be {parameter: scope}, one parameter")
    ((name, value),) = scope.items()
    if value not in PRINCIPAL_SCOPES:
        raise PlatformOptionError(f"principal_scope must be one of {', '.join(sorted(PRINCIPAL_SCOPES))}")
    prop = properties.get(name)
    inner = split_nullable(dict(prop))[0] if isinstance(prop, Mapping) else {}
    if not inner or name in required or primary_type(dict(inner)) != "string":
        raise PlatformOptionError(f"principal_scope: {name!r} must be an optional string parameter (str | None = None)")
    if long_running:
        raise PlatformOptionError("principal_scope is only allowed on a tool that answers at once (not long_running)")
    return name, value


__all__ = ["GENERIC_SENSITIVE", "PLATFORM_OPTIONS", "PRINCIPAL_SCOPES", "PlatformOptionError", "platform_metadata"]
