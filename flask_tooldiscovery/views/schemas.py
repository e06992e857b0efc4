"""A Flask view's tool schemas, from what the view declares: flask-smorest ``@blp.arguments``
schemas, webargs ``use_args``/``use_kwargs`` schemas, an apispec YAML docstring (``parameters``,
``requestBody``), else the URL rule's converters. Its path, query and body arguments are flat
properties of one object (a location whose names collide with another's is nested under
``query``, ``body`` or ``form``); :func:`input_schema_of` also says where each argument goes."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from werkzeug.routing import Rule
from werkzeug.routing import converters as conv

from ..schema.sources import field_schema, marshmallow_to_json_schema
from ..tools.function_tools import RegistrationError

#: Where a location's fields go when their names collide with another location's.
_NEST = {"query": "query", "json": "body", "form": "form"}
#: webargs' and flask-smorest's location names -> the location of the sub-request they fill.
LOCATIONS = {"querystring": "query", "query": "query", "json": "json", "form": "form", "path": "path",
             "view_args": "path", "json_or_form": "json"}


def _path_parameter(converter: Any) -> dict[str, Any]:
    if isinstance(converter, conv.IntegerConverter):
        schema: dict[str, Any] = {"type": "integer"}
        low = converter.min if converter.min is not None else (None if converter.signed else 0)
        schema.update({k: v for k, v in (("minimum", low), ("maximum", converter.max)) if v is not None})
        return schema
    if isinstance(converter, conv.FloatConverter):
        return {"type": "number"} if converter.signed else {"type": "number", "minimum": 0}
    if isinstance(converter, conv.UUIDConverter):
        return {"type": "string", "format": "uuid"}
    if isinstance(converter, conv.AnyConverter):
        return {"type": "string", "enum": sorted(converter.items)}
    return {"type": "string", "minLength": 1}


def _declared(handler: Callable[..., Any]) -> list[tuple[str, Any, bool]]:
    """``(location, marshmallow schema, required)`` the handler declares: flask-smorest's ``_apidoc``,
    else the schemas held by webargs' ``use_args`` wrappers."""
    doc = getattr(handler, "_apidoc", None) or {}
    found = [(str(p.get("in", "json")), p.get("schema"), bool(p.get("required", True)))
             for p in (doc.get("arguments") or {}).get("parameters") or () if isinstance(p, Mapping)]
    if found:
        return found
    fn: Any = handler
    while fn is not None:
        code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
        names = code.co_freevars if code is not None else ()
        if "argmap" in names and "location" in names:
            values = dict(zip(names, (c.cell_contents for c in cells), strict=False))
            if not callable(values["argmap"]) or hasattr(values["argmap"], "load_fields"):
                found.append((str(values["location"]), values["argmap"], True))
        fn = getattr(fn, "__wrapped__", None)
    return found


def _apispec_doc(handler: Callable[..., Any], method: str) -> dict[str, Any]:
    """The apispec YAML operation in the handler's docstring (after ``---``), or ``{}``."""
    doc = inspect.getdoc(handler) or ""
    if "---" not in doc:
        return {}
    try:
        from apispec.yaml_utils import load_operations_from_docstring
    except ImportError:
        return {}
    try:
        operation = load_operations_from_docstring(doc).get(method.lower())
    except Exception:  # a docstring that is not YAML after all
        return {}
    return operation if isinstance(operation, dict) else {}


def _groups(rule: Rule, handler: Callable[..., Any], method: str) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
    """``[(location, object schema)]`` of the view's arguments, and whether any was declared."""
    path_props = {name: _path_parameter(c) for name, c in getattr(rule, "_converters", {}).items()
                  if name not in (rule.defaults or {})}
    groups: list[tuple[str, dict[str, Any]]] = [("path", {"type": "object", "properties": path_props,
                                                          "required": list(path_props)})]
    declared = bool(getattr(handler, "_apidoc", None))  # flask-smorest documents it: no other arguments
    for location, schema, required in _declared(handler):
        where = LOCATIONS.get(location)
        if where is None or schema is None:
            continue  # headers, cookies and files are not tool arguments (headers come from the caller)
        declared = True
        if where == "path":
            continue  # already read from the rule
        instance = schema() if isinstance(schema, type) else schema
        json_schema = marshmallow_to_json_schema(instance)
        if getattr(instance, "many", False):
            json_schema = {"type": "array", "items": json_schema, "x-nest": True, "x-required": required}
        elif not required:
            json_schema.pop("required", None)
        groups.append((where, json_schema))
    operation = _apispec_doc(handler, method)
    if not declared and operation:
        query = {p["name"]: {**(p.get("schema") or {"type": p.get("type", "string")}),
                             **({"description": p["description"]} if p.get("description") else {})}
                 for p in operation.get("parameters") or () if isinstance(p, dict) and p.get("in") == "query"}
        needed = [p["name"] for p in operation.get("parameters") or ()
                  if isinstance(p, dict) and p.get("in") == "query" and p.get("required")]
        if query:
            groups.append(("query", {"type": "object", "properties": query, "required": needed}))
        body = (((operation.get("requestBody") or {}).get("content") or {}).get("application/json") or {}).get("schema")
        if isinstance(body, dict) and "$ref" not in body:
            groups.append(("json", body))
        declared = bool(query or body)
    return groups, declared


def input_schema_of(rule: Rule, handler: Callable[..., Any], method: str,
                    docs: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, tuple[str, str | None]]]:
    """The tool's input schema and where each argument goes."""
    groups, declared = _groups(rule, handler, method)
    if not declared:
        groups.append(("query", {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]},
                                 "description": "Query string parameters sent to the view.", "x-nest": True}))
        if method != "GET":
            groups.append(("json", {"type": "object", "description": "The JSON body sent to the view.",
                                    "x-nest": True}))
    properties: dict[str, Any] = {}
    required: list[str] = []
    places: dict[str, tuple[str, str | None]] = {}
    for location, schema in groups:
        props = schema.get("properties") or {}
        whole = schema.pop("x-required", False)
        nest = schema.pop("x-nest", False) or bool(set(props) & set(properties)) or "properties" not in schema
        if nest:
            key = _NEST.get(location, location)
            if key in properties:
                raise RegistrationError(f"view {rule.endpoint!r}: argument names collide in {location} and path")
            properties[key], places[key] = schema, (location, None)
            if whole or (schema.get("required") and location != "query") or location == "path":
                required.append(key)
            continue
        for name, prop in props.items():
            prop = dict(prop)
            if location == "path" and name in docs and "description" not in prop:
                prop["description"] = docs[name]
            properties[name], places[name] = prop, (location, name)
        required += [n for n in schema.get("required") or () if n in props]
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(dict.fromkeys(required))
    out["additionalProperties"] = False
    return out, places


def output_schema_of(handler: Callable[..., Any]) -> dict[str, Any] | None:
    """The success response schema flask-smorest documents, loosened (no ``required``, open objects)
    so that nothing the view really sends is refused by a strict client."""
    doc = getattr(handler, "_apidoc", None) or {}
    responses = (doc.get("response") or {}).get("responses") or {}
    for status in doc.get("success_status_codes") or ():
        for item in responses.get(status) or ():
            schema = item.get("schema") if isinstance(item, Mapping) else None
            if schema is None or isinstance(schema, (dict, str)):
                continue
            instance = schema() if isinstance(schema, type) else schema
            props = {f.data_key or n: _loosen(field_schema(f)) for n, f in instance.dump_fields.items()}
            dumped: dict[str, Any] = {"type": "object", "properties": props}
            return {"type": "array", "items": dumped} if getattr(instance, "many", False) else dumped
    return None


def _loosen(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_loosen(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: _loosen(v) for k, v in schema.items() if k not in ("required", "additionalProperties")
            and not (k == "type" and v == "number")}  # marshmallow Decimal dumps as text
