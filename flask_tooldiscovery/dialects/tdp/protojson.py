"""TDP's ``protojson`` wire form: a spec-form document written as protobuf's JSON encoding does: camelCase
keys, zero values left out (an explicit 0 kept in ``optional`` fields), a ``default`` as a ``common.v1.JsonValue``
and an example's ``input`` and ``expected_output`` as ``common.v1.JsonObject``s."""

from __future__ import annotations

import re
from typing import Any


def _camel(key: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m[1].upper(), key)


def typed_value(value: Any) -> dict[str, Any]:
    """A JSON value as a ``common.v1.JsonValue`` (int64 as a string)."""
    if value is None:
        return {"nullValue": "NULL_VALUE"}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, dict):
        return {"objectValue": {"fields": {str(k): typed_value(v) for k, v in value.items()}}}
    if isinstance(value, (list, tuple)):
        return {"listValue": {"values": [typed_value(v) for v in value]}}
    return {"stringValue": value if isinstance(value, str) else str(value)}


def json_object(value: Any) -> dict[str, Any]:
    """A ``common.v1.JsonObject``; any other value as ``{"value": ...}``, as the execute endpoint wraps it."""
    value = value if isinstance(value, dict) or value is None else {"value": value}
    return {"fields": {str(k): typed_value(v) for k, v in value.items()}} if value else {}


#: Keys whose values are data, not documents: written as ``JsonValue``s and ``JsonObject``s.
_VALUES = {"default": typed_value, "input": json_object, "expected_output": json_object}
#: Kept when zero in a parameter's schema: ``properties``, and the proto3 ``optional`` fields (0 is a value).
_KEEP = frozenset({"properties", "minimum", "maximum", "minLength", "maxLength"})


def to_protojson(value: Any, schema: bool = False) -> Any:
    """Rewrite a spec-form manifest or ToolDefinition (``schema``: ``value`` is a parameter's schema)."""
    if isinstance(value, list):
        return [to_protojson(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in _VALUES:
            item = _VALUES[key](item)
        elif key == "properties":  # parameter name -> schema: names are kept as they are
            item = {name: to_protojson(sub, True) for name, sub in item.items()}
        else:
            item = to_protojson(item, key == "items")
        if item or (schema and key in _KEEP):  # zero values are left out, as protobuf does
            out[_camel(key)] = item
    return out

