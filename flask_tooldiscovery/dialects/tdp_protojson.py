"""TDP's ``protojson`` wire form: a spec-form document rewritten the way protobuf's JSON encoding
writes it: camelCase keys, zero values left out, a parameter's ``default`` and an example's
``input`` as ``google.protobuf.Value`` wrappers (int64 as a string), ``expected_output`` as text."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _is_zero(value: Any) -> bool:
    return not value and isinstance(value, (type(None), bool, str, int, float, list, dict))


def typed_value(value: Any) -> dict[str, Any]:
    """A JSON value as a ``google.protobuf.Value``-style wrapper (int64 as a string)."""
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


#: Keys whose values are data, not documents: written as protobuf values or text.
_VALUES: dict[str, Callable[[Any], Any]] = {
    "default": typed_value,
    "input": lambda v: {"fields": {k: typed_value(x) for k, x in v.items()}} if v else {},
    "expected_output": lambda v: v if isinstance(v, str) else json.dumps(v),
}


def to_protojson(value: Any, schema: bool = False) -> Any:
    """Rewrite a spec-form manifest or ToolDefinition (``schema``: ``value`` is a parameter's
    schema, whose ``properties`` are written even when empty)."""
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
        if not _is_zero(item) or (schema and key == "properties"):
            out[_camel(key)] = item
    return out

