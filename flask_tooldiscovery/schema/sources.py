"""Input schemas given explicitly: a JSON Schema dict, a marshmallow ``Schema`` class, or (when
pydantic happens to be installed) a pydantic model class, each turned into JSON Schema."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from marshmallow import Schema, fields, validate

from ..errors import SchemaSourceError as SchemaSourceError
from .check import check_schema
from .json_schema import inline_refs

_FIELD_TYPES: list[tuple[type, dict[str, Any]]] = [
    # Order matters: subclasses before their bases.
    (fields.Email, {"type": "string", "format": "email"}),
    (fields.URL, {"type": "string", "format": "uri"}),
    (fields.UUID, {"type": "string", "format": "uuid"}),
    (fields.IPv4, {"type": "string", "format": "ipv4"}),
    (fields.IPv6, {"type": "string", "format": "ipv6"}),
    (fields.IP, {"type": "string"}),
    (fields.String, {"type": "string"}),
    (fields.Integer, {"type": "integer"}),
    (fields.Decimal, {"type": "number"}),
    (fields.Float, {"type": "number"}),
    (fields.Number, {"type": "number"}),
    (fields.Boolean, {"type": "boolean"}),
    (fields.DateTime, {"type": "string", "format": "date-time"}),
    (fields.Date, {"type": "string", "format": "date"}),
    (fields.Time, {"type": "string", "format": "time"}),
    (fields.TimeDelta, {"type": "number"}),
]


def _apply_validators(field: fields.Field[Any], schema: dict[str, Any]) -> None:
    for v in field.validators:
        if isinstance(v, validate.OneOf):
            schema["enum"] = list(v.choices)
        elif isinstance(v, validate.Range):
            lo_key = "minimum" if v.min_inclusive else "exclusiveMinimum"
            hi_key = "maximum" if v.max_inclusive else "exclusiveMaximum"
            if v.min is not None:
                schema[lo_key] = v.min
            if v.max is not None:
                schema[hi_key] = v.max
        elif isinstance(v, validate.Length):
            array = schema.get("type") == "array"
            lo, hi = ("minItems", "maxItems") if array else ("minLength", "maxLength")
            if v.equal is not None:
                schema[lo] = schema[hi] = v.equal
            else:
                if v.min is not None:
                    schema[lo] = v.min
                if v.max is not None:
                    schema[hi] = v.max
        elif isinstance(v, validate.Regexp):
            schema["pattern"] = v.regex.pattern
        elif isinstance(v, validate.Email):
            schema["format"] = "email"
        elif isinstance(v, validate.URL):
            schema["format"] = "uri"


def field_schema(field: fields.Field[Any]) -> dict[str, Any]:
    schema: dict[str, Any]
    if isinstance(field, fields.Nested):
        nested = marshmallow_to_json_schema(field.schema)
        schema = {"type": "array", "items": nested} if field.many else nested
    elif isinstance(field, fields.Pluck):
        schema = {}
    elif isinstance(field, fields.List):
        schema = {"type": "array", "items": field_schema(field.inner)}
    elif isinstance(field, fields.Tuple):
        items = [field_schema(f) for f in field.tuple_fields]
        schema = {"type": "array", "prefixItems": items, "items": False,
                  "minItems": len(items), "maxItems": len(items)}
    elif isinstance(field, (fields.Dict, fields.Mapping)):
        schema = {"type": "object"}
        if field.value_field is not None:
            schema["additionalProperties"] = field_schema(field.value_field)
    elif isinstance(field, fields.Enum):
        if field.by_value:
            schema = {"enum": [m.value for m in field.enum]}
        else:
            schema = {"type": "string", "enum": [m.name for m in field.enum]}
    elif isinstance(field, fields.Constant):
        schema = {"const": field.constant}
    else:
        schema = next((dict(s) for cls, s in _FIELD_TYPES if isinstance(field, cls)), {})
    _apply_validators(field, schema)
    if field.allow_none and schema:
        schema = {"anyOf": [schema, {"type": "null"}]}
    meta = dict(field.metadata)
    if "description" in meta:
        schema["description"] = str(meta.pop("description"))
    if "title" in meta:
        schema["title"] = str(meta.pop("title"))
    default = field.load_default
    if default is not None and not callable(default) and isinstance(default, (str, int, float, bool, list, dict)):
        schema["default"] = default
    return schema


def marshmallow_to_json_schema(schema: Schema | type[Schema]) -> dict[str, Any]:
    """The JSON Schema of a marshmallow schema's *load* side (the keys a client sends)."""
    instance = schema() if isinstance(schema, type) else schema
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, field in instance.load_fields.items():
        key = field.data_key or name
        props[key] = field_schema(field)
        if field.required:
            required.append(key)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    unknown = getattr(instance, "unknown", None)
    if unknown == "raise":
        out["additionalProperties"] = False
    return out


def _is_pydantic_model(obj: Any) -> bool:
    return isinstance(obj, type) and hasattr(obj, "model_json_schema") and hasattr(obj, "model_validate")


def resolve_input_schema(
    source: Any, *, what: str
) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], dict[str, Any]] | None]:
    """(JSON Schema, argument loader or ``None``) for an explicit ``input_schema=`` value.

    A marshmallow schema also loads the arguments (so the function receives what ``load``
    returns); a pydantic model validates them into field values.
    """
    if isinstance(source, Mapping):
        schema = copy.deepcopy(dict(source))
        check_schema(schema, what=what)
        return schema, None
    if isinstance(source, Schema) or (isinstance(source, type) and issubclass(source, Schema)):
        instance = source() if isinstance(source, type) else source
        schema = marshmallow_to_json_schema(instance)
        check_schema(schema, what=what)
        return schema, lambda args: dict(instance.load(dict(args)))
    if _is_pydantic_model(source):
        # Self-contained, without $ref: nested models stay readable in every dialect (the explorer's
        # forms, MCP clients that resolve no references, an output schema MCP wraps in an object).
        schema = inline_refs(source.model_json_schema())
        check_schema(schema, what=what)
        return schema, lambda args: dict(source.model_validate(dict(args)))
    raise SchemaSourceError(
        f"{what} must be a JSON Schema dict, a marshmallow Schema class or a pydantic model, "
        f"not {type(source).__name__}"
    )


def resolve_output_schema(source: Any, *, what: str) -> dict[str, Any] | None:
    """The JSON Schema for an explicit ``output_schema=`` value (same sources as input)."""
    if source is None:
        return None
    return resolve_input_schema(source, what=what)[0]
