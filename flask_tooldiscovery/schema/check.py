"""Is this a valid JSON Schema? A quick walk for schemas made of the common keywords, jsonschema's
meta-schema pass for the rest, and validators compiled once per schema."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for

from ..errors import InvalidSchemaError as InvalidSchemaError


def canonical_json(schema: Any) -> str:
    """``schema`` as canonical JSON text (sorted keys, no spaces): the key of compiled validators."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)


def check_schema(schema: Any, *, what: str = "schema") -> None:
    """Raise :class:`InvalidSchemaError` unless ``schema`` is a valid JSON Schema.

    Schemas made of the common keywords (what signatures, marshmallow and pydantic produce) are
    accepted by :func:`plainly_valid` without jsonschema's meta-schema pass; anything else, and
    every invalid schema, goes through that pass, so the verdict and the message are its own."""
    if not isinstance(schema, (dict, bool)):
        raise InvalidSchemaError(f"{what} must be a JSON object, not {type(schema).__name__}")
    if plainly_valid(schema):
        return
    try:
        compile_validator(canonical_json(schema))
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise InvalidSchemaError(
            f"{what} is not a valid JSON Schema: {exc.message}" + (f" (at /{where})" if where else "")
        ) from None


_DRAFT_2020_12 = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
_SIMPLE_TYPES = frozenset(("array", "boolean", "integer", "null", "number", "object", "string"))
#: Keywords whose value is one schema / a non-empty list of schemas / an object of schemas.
_ONE_SCHEMA = frozenset(("items", "contains", "additionalProperties", "propertyNames", "if", "then", "else",
                         "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"))
_SCHEMA_LISTS = frozenset(("prefixItems", "allOf", "anyOf", "oneOf"))
_SCHEMA_MAPS = frozenset(("properties", "$defs", "dependentSchemas"))
_STRINGS = frozenset(("title", "description", "format", "contentEncoding", "contentMediaType", "$comment"))
_NUMBERS = frozenset(("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"))
_COUNTS = frozenset(("maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains",
                     "maxProperties", "minProperties"))
_BOOLEANS = frozenset(("uniqueItems", "deprecated", "readOnly", "writeOnly"))
_ANY_VALUE = frozenset(("const", "default"))
_ARRAYS = frozenset(("enum", "examples"))
_MAX_DEPTH = 64


def _plain_json(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is made of JSON's own types only (so encoding it cannot fail)."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if depth > _MAX_DEPTH:
        return False
    if kind is list:
        return all(_plain_json(v, depth + 1) for v in value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    return False


def _plain_schema(node: Any, depth: int) -> bool:
    kind = type(node)
    if kind is bool:
        return True
    if kind is not dict or depth > _MAX_DEPTH:
        return False
    for key, value in node.items():
        vtype = type(value)
        if key in _SCHEMA_MAPS:
            if vtype is not dict or not all(type(k) is str and _plain_schema(v, depth + 1) for k, v in value.items()):
                return False
        elif key in _ONE_SCHEMA:
            if not _plain_schema(value, depth + 1):
                return False
        elif key in _SCHEMA_LISTS:
            if vtype is not list or not value or not all(_plain_schema(v, depth + 1) for v in value):
                return False
        elif key == "type":
            if vtype is str:
                if value not in _SIMPLE_TYPES:
                    return False
            elif vtype is not list or not value or not all(type(t) is str and t in _SIMPLE_TYPES for t in value) \
                    or len(set(value)) != len(value):
                return False
        elif key == "required":
            if vtype is not list or not all(type(v) is str for v in value) or len(set(value)) != len(value):
                return False
        elif key in _STRINGS:
            if vtype is not str:
                return False
        elif key in _NUMBERS:
            if vtype not in (int, float):
                return False
        elif key in _COUNTS:
            if vtype is not int or value < 0:
                return False
        elif key in _BOOLEANS:
            if vtype is not bool:
                return False
        elif key in _ARRAYS:
            if vtype is not list or not _plain_json(value, depth):
                return False
        elif key in _ANY_VALUE:
            if not _plain_json(value, depth):
                return False
        elif key == "multipleOf":
            if vtype not in (int, float) or not value > 0:
                return False
        elif key == "pattern":
            if vtype is not str:
                return False
            try:
                re.compile(value)
            except re.error:
                return False
        else:  # "$ref", "$id", "patternProperties", other drafts' keywords, unknown ones...
            return False
    return True


def plainly_valid(schema: Any) -> bool:
    """True when ``schema`` is certainly a valid draft 2020-12 JSON Schema by a quick walk: every
    keyword one of the common ones, with the value the meta-schema asks for, every value made of
    JSON's own types. ``False`` means "not sure", never "invalid": ask :func:`check_schema`."""
    return _plain_schema(without_draft(schema), 0)


def without_draft(schema: Any) -> Any:
    """``schema`` without its ``$schema`` when that names draft 2020-12; ``None`` (which neither
    :func:`_plain_schema` nor :func:`_compile` vouches for) when it names another draft."""
    if type(schema) is not dict or "$schema" not in schema:
        return schema
    if schema["$schema"] not in _DRAFT_2020_12:
        return None
    return {k: v for k, v in schema.items() if k != "$schema"}


@lru_cache(maxsize=1024)
def compile_validator(canonical_schema: str) -> Validator:
    """A validator for a schema given as canonical JSON text (cached: compiled once per schema).

    Draft 2020-12 unless the schema's ``$schema`` names another draft; formats are checked.
    """
    schema = json.loads(canonical_schema)
    cls = validator_for(schema, default=Draft202012Validator)
    if not plainly_valid(schema):
        cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)

