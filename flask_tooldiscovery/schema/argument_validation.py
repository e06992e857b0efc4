"""Validating a call's arguments against its tool's input schema: a validator cached per schema
object, and every failure as an :class:`ArgumentError` (a JSON pointer, the parameter, a message
written for JSON clients and models)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from .check import canonical_json, compile_validator
from .quick_check import Check, quick_check


@dataclass(frozen=True)
class ArgumentError:
    """One way the arguments fail the input schema."""

    #: JSON Pointer to the offending value ("" is the arguments object itself).
    path: str
    #: The top-level parameter concerned, or ``None`` for the arguments object as a whole.
    parameter: str | None
    message: str
    #: The JSON Schema keyword that failed (``required``, ``type``, ``enum``...).
    keyword: str

    def as_dict(self) -> dict[str, str]:
        """``{path, message, keyword}`` as the explorer's F7 answer writes it."""
        return {"path": self.path, "message": self.message, "keyword": self.keyword}


#: Validators by schema object: a tool's schema is looked up by identity, without encoding it
#: (the entry keeps the schema alive, so its id cannot be reused while it is there), with the
#: quick check compiled for it (``None`` when it has none).
_BY_ID: OrderedDict[int, tuple[Any, Validator, Check | None]] = OrderedDict()
_BY_ID_MAX = 16_384
_BY_ID_LOCK = threading.Lock()
_ACCEPT_ALL: dict[str, Any] = {}


def _entry(schema: dict[str, Any] | None) -> tuple[Any, Validator, Check | None]:
    if schema is None:
        schema = _ACCEPT_ALL
    found = _BY_ID.get(id(schema))
    if found is not None and found[0] is schema:
        return found
    validator = compile_validator(canonical_json(schema))
    entry = (schema, validator, quick_check(schema))
    with _BY_ID_LOCK:
        _BY_ID[id(schema)] = entry
        if len(_BY_ID) > _BY_ID_MAX:
            _BY_ID.popitem(last=False)
    return entry


def quick_check_of(schema: dict[str, Any] | None) -> Check | None:
    """The fast check compiled for ``schema`` (true: the arguments are valid, nothing more to
    ask; false: :func:`validate_arguments` says why), or ``None`` when it has none. A caller may
    keep it beside the schema it was made for (a tool's call plan)."""
    return _entry(schema)[2]


def validator_for_schema(schema: dict[str, Any] | None) -> Validator:
    """The cached validator of ``schema`` (``None`` accepts everything). A schema must not be
    changed in place once it has been used (tools' schemas never are)."""
    return _entry(schema)[1]


def _pointer(parts: Iterable[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _as_json(value: Any, limit: int = 60) -> str:
    """A value as JSON text (``null``, ``true``, ``"text"``), shortened: messages go to JSON
    clients and models, who know JSON, not Python reprs."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_message(instance: Any, wanted: Iterable[Any]) -> str:
    return f"{_as_json(instance)} is not of type " + " or ".join(f"'{t}'" for t in wanted)


def _per_name(path: list[Any], names: Iterable[str], keyword: str, adjective: str) -> list[ArgumentError]:
    """One error per missing or unexpected name: "Missing required parameter." at the top level,
    "Missing required property 'x'." inside a parameter."""
    return [ArgumentError(_pointer([*path, name]), str(path[0]) if path else name,
                          f"{adjective} property {name!r}." if path else f"{adjective} parameter.", keyword)
            for name in names]


def _errors_of(error: jsonschema.ValidationError) -> list[ArgumentError]:
    path = list(error.absolute_path)
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return [ArgumentError(_pointer(path), str(path[0]) if path else None,
                              _type_message(error.instance, wanted), "type")]
    if error.validator == "required" and isinstance(error.instance, dict):
        required: Any = error.validator_value
        missing = [n for n in required if n not in error.instance]
        return _per_name(path, missing, "required", "Missing required")
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        parent: Any = error.schema
        known = set((parent.get("properties") or {}).keys())
        extras = [k for k in error.instance if k not in known]
        if extras and not parent.get("patternProperties"):
            return _per_name(path, extras, "additionalProperties", "Unexpected")
    if error.context and error.validator in ("anyOf", "oneOf"):
        # Say what was expected rather than "... is not valid under any of the given schemas".
        own = [e for e in error.context if not e.relative_path]
        if own and all(e.validator == "type" for e in own):
            wanted = []
            for e in own:
                for t in e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]:
                    if t not in wanted:
                        wanted.append(t)
            return [ArgumentError(
                _pointer(path), str(path[0]) if path else None, _type_message(error.instance, wanted), "type",
            )]
        best = jsonschema.exceptions.best_match(error.context)
        if best is not None and best.validator != "type":
            return _errors_of(best)
    return [
        ArgumentError(
            _pointer(path), str(path[0]) if path else None, error.message, str(error.validator)
        )
    ]


def validate_arguments(
    schema: dict[str, Any] | None, arguments: Any, *, limit: int | None = None
) -> list[ArgumentError]:
    """Every way ``arguments`` fails ``schema``, sorted by path; empty when valid.

    With ``limit``, at most that many are returned; one more entry (keyword ``limit``) says how
    many were left out (counted up to :data:`MAX_COUNTED`), so a huge bad input gets a small answer.
    """
    _, validator, check = _entry(schema)
    if check is not None and check(arguments):
        return []
    seen: set[tuple[str, str]] = set()
    out: list[ArgumentError] = []
    more = 0
    for error in validator.iter_errors(arguments):
        if limit is not None and len(out) >= limit:
            more += 1
            if more >= MAX_COUNTED:
                break
            continue
        for item in _errors_of(error):
            key = (item.path, item.message)
            if key not in seen:
                seen.add(key)
                out.append(item)
    out.sort(key=lambda e: e.path)
    if limit is not None and len(out) > limit:
        more += len(out) - limit
        out = out[:limit]
    if more:
        count = f"{more}" if more < MAX_COUNTED else f"at least {MAX_COUNTED}"
        out.append(ArgumentError("", None, f"... and {count} more errors not shown.", "limit"))
    return out


#: How far errors past the limit are counted before counting stops.
MAX_COUNTED = 10_000


def parameter_errors(errors: Iterable[ArgumentError]) -> dict[str, str]:
    """``{parameter: message}``; errors about the object as a whole go under ``""``... joined."""
    out: dict[str, str] = {}
    for err in errors:
        key = err.parameter if err.parameter is not None else ""
        out[key] = f"{out[key]} {err.message}" if key in out else err.message
    return out
