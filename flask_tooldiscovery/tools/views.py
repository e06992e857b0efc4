"""Existing Flask views as tools: ``discovery.add_view(...)`` and ``discovery.add_views(...)``.

A view becomes a tool whose input schema comes from what the view declares: flask-smorest
``@blp.arguments`` schemas, webargs ``use_args``/``use_kwargs`` schemas, an apispec YAML docstring
(``parameters``, ``requestBody``), else the URL rule's converters and the docstring. Its path,
query and body arguments are flat properties of one object (a location whose names collide with
another's is nested under ``query``, ``body`` or ``form``).

A call runs the view through the app itself, as a sub-request carrying the caller's headers
(``Authorization``, cookies...) on a fresh app context: the view's own authentication, validation
and error handlers apply. A 2xx body is the result; a 4xx is the tool's error carrying the view's
own messages (flask-smorest/webargs validation errors listed by field); a 5xx, or an exception
that escapes the view, is a failure whose details are logged and not sent.

Views are resolved against the app's URL map in ``init_app``: register them (or their
blueprints) before it.
"""

from __future__ import annotations

import base64
import fnmatch
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from flask import Flask, current_app, has_app_context
from werkzeug.routing import Rule
from werkzeug.routing import converters as conv
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Response

from ..errors import ToolDiscoveryError
from ..observe.logs import log
from .model import Tool, ToolContext, ToolError
from .registry import RegistrationError, ToolRegistry, tool_from_function
from .schema_sources import _field_schema as field_schema
from .schema_sources import marshmallow_to_json_schema
from .signature import parse_docstring

#: The environ key a view can read to know it runs as a tool: ``{"tool", "call_id", "dialect"}``.
ENVIRON_KEY = "flask_tooldiscovery.tool_call"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: Where a location's fields go when their names collide with another location's.
_NEST = {"query": "query", "json": "body", "form": "form"}
_LOCATIONS = {"querystring": "query", "query": "query", "json": "json", "form": "form", "path": "path",
              "view_args": "path", "json_or_form": "json"}
#: Headers of the caller's request that are not passed on to the view.
_NOT_FORWARDED = {"host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "te",
                  "trailer", "upgrade", "accept", "accept-encoding", "expect", "mcp-session-id",
                  "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id"}
_NEVER = ("static", "tooldiscovery_", "api-docs.")


class ViewFailed(ToolDiscoveryError, RuntimeError):
    """The view answered 5xx (or not at all): logged, never sent."""


@dataclass(frozen=True)
class Plan:
    """Where each tool argument goes in the sub-request."""

    endpoint: str
    method: str
    #: ``{argument: (location, key)}``; key ``None``: the argument is the whole location (nested).
    places: dict[str, tuple[str, str | None]]


# -- input schemas ---------------------------------------------------------------------------------


def _handler(view: Callable[..., Any], method: str) -> Callable[..., Any]:
    """The function that serves ``method``: a MethodView's method, else the view itself."""
    cls = getattr(view, "view_class", None)
    return getattr(cls, method.lower(), view) if cls is not None else view


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
        where = _LOCATIONS.get(location)
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


# -- calling ---------------------------------------------------------------------------------------


def _split(plan: Plan, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments by location; a nested location's argument is the whole of it (a JSON array
    body stays an array)."""
    parts: dict[str, Any] = {"path": {}, "query": {}, "json": {}, "form": {}}
    for name, value in arguments.items():
        location, key = plan.places[name]
        if key is None:
            parts[location] = value
        else:
            parts[location][key] = value
    return parts


def _forwarded(context: ToolContext) -> dict[str, str]:
    headers = {k: v for k, v in context.request.headers.items() if k.lower() not in _NOT_FORWARDED} \
        if context.request is not None else {}
    headers["Accept"] = "application/json"
    if context.trace_id:
        headers["X-Trace-Id"] = context.trace_id
    return headers


def run_view(app: Flask, plan: Plan, arguments: Mapping[str, Any], context: ToolContext, tool: str) -> Response:
    """The view's response to a sub-request built from ``arguments``, with the caller's headers."""
    parts = _split(plan, arguments)
    outer = context.request
    base = outer.host_url.rstrip("/") + outer.script_root if outer is not None else \
        f"{app.config.get('PREFERRED_URL_SCHEME') or 'http'}://{app.config.get('SERVER_NAME') or 'localhost'}"
    query = [(k, str(v).lower() if isinstance(v, bool) else str(v))
             for k, v in parts["query"].items() for v in (v if isinstance(v, list) else [v]) if v is not None]
    with app.app_context():  # a fresh app context (g) for the view, as a request of its own would have
        path = app.url_map.bind("localhost").build(plan.endpoint, parts["path"], method=plan.method)
        body: dict[str, Any] = {"json": parts["json"]} if plan.method != "GET" and (
            parts["json"] or any(loc == "json" for loc, _ in plan.places.values())) else {}
        if parts["form"]:
            body = {"data": parts["form"]}
        builder = EnvironBuilder(path=path.split("?", 1)[0], base_url=base, method=plan.method,
                                 query_string=urlencode(query), headers=list(_forwarded(context).items()), **body)
        environ = builder.get_environ()
        if outer is not None:
            environ["REMOTE_ADDR"] = outer.remote_addr or environ.get("REMOTE_ADDR")
        environ[ENVIRON_KEY] = {"tool": tool, "call_id": context.call_id, "dialect": context.dialect}
        return Response.from_app(app.wsgi_app, environ, buffered=True)


def _messages(value: Any, where: str = "") -> list[str]:
    """``{"json": {"name": ["Missing data."]}}`` -> ``["json.name: Missing data."]``."""
    if isinstance(value, Mapping):
        return [m for k, v in value.items() for m in _messages(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [f"{where}: {' '.join(value)}" if where else " ".join(value)]
    if isinstance(value, list):
        return [m for i, v in enumerate(value) for m in _messages(v, f"{where}[{i}]")]
    return [f"{where}: {value}" if where else str(value)]


def _error_text(response: Response) -> str:
    if response.is_json:
        body = response.get_json(silent=True)
        if isinstance(body, Mapping):
            detail = next((str(body[k]) for k in ("message", "error", "detail", "description") if body.get(k)), "")
            errors = body.get("errors", body.get("messages"))
            if isinstance(errors, Mapping) and errors and set(errors) <= {*_LOCATIONS, "headers", "cookies", "files"}:
                errors = {k: v for by_location in errors.values() if isinstance(by_location, Mapping)
                          for k, v in by_location.items()}  # {"json": {"name": [...]}}: the field is enough
            listed = "; ".join(_messages(errors)) if errors else ""
            return " ".join(p for p in (detail.rstrip(".") + "." if detail else "", listed) if p)
        return "" if body is None else str(body)
    text = response.get_data(as_text=True)
    if response.mimetype == "text/html":
        paragraphs = re.findall(r"<p>(.*?)</p>", text, re.S)
        text = " ".join(paragraphs) if paragraphs else re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:500]


def result_of(response: Response) -> Any:
    """A view's response as a tool result; :class:`ToolError` for 3xx/4xx, :class:`ViewFailed` for 5xx."""
    status = response.status_code
    if status >= 500:
        raise ViewFailed(f"the view answered {response.status}")
    if status >= 300:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        text = f"redirect to {response.headers.get('Location')}" if status < 400 else _error_text(response)
        retry = response.headers.get("Retry-After", "")
        raise ToolError(f"{status} {phrase}" + (f": {text}" if text else ""), can_retry=status in (408, 429),
                        retry_after_ms=int(retry) * 1000 if retry.isdigit() else None)
    if status == 204 or not response.get_data():
        return None
    if response.is_json:
        return response.get_json()
    if (response.mimetype or "").startswith("text/"):
        return response.get_data(as_text=True)
    return {"content_type": response.mimetype, "base64": base64.b64encode(response.get_data()).decode("ascii")}


# -- registration ----------------------------------------------------------------------------------


@dataclass
class _Pending:
    views: list[tuple[Any, str | None, dict[str, Any]]] = field(default_factory=list)
    selections: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)


def _annotations(method: str) -> dict[str, Any]:
    if method == "GET":
        return {"readOnlyHint": True, "idempotentHint": True}
    return {"readOnlyHint": False, "destructiveHint": method == "DELETE", "idempotentHint": method in ("PUT", "DELETE")}


class ViewTools:
    """The views an extension offers as tools: kept until ``init_app`` resolves them on an app."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._pending = _Pending()
        self._made: dict[tuple[str, str], Tool] = {}

    def add_view(self, view: Any, method: str | None = None, **options: Any) -> None:
        """Offer one view (an endpoint name or a view function) as a tool; see :meth:`resolve`."""
        for option in ("input_schema",):
            if option in options:
                raise RegistrationError(f"add_view: {option} comes from the view; it cannot be given")
        self._pending.views.append((view, method.upper() if method else None, options))
        if has_app_context() and "tooldiscovery" in current_app.extensions:
            self.resolve(current_app._get_current_object())  # type: ignore[attr-defined]

    def add_views(self, *, blueprint: Any = None, rule: str | None = None, include: Iterable[str] | None = None,
                  exclude: Iterable[str] = (), methods: Iterable[str] = METHODS, **options: Any) -> None:
        """Offer many views: those of ``blueprint`` (a name or a Blueprint), whose URL rule matches
        ``rule`` (a glob: ``/api/pets*``), or whose endpoint matches one of ``include`` (globs);
        less those matching ``exclude``. At least one of ``blueprint``, ``rule``, ``include``."""
        if blueprint is None and rule is None and include is None:
            raise RegistrationError("add_views needs blueprint=, rule= or include=: it never offers every view")
        if "name" in options:
            raise RegistrationError("add_views names each tool after its endpoint; use add_view to name one")
        selection = {"blueprint": getattr(blueprint, "name", blueprint), "rule": rule,
                     "include": list(include) if include is not None else None, "exclude": list(exclude),
                     "methods": [m.upper() for m in methods]}
        self._pending.selections.append((selection, options))

    def resolve(self, app: Flask) -> None:
        """Turn the pending views into tools against ``app``'s URL map (once per view and method)."""
        rules = [r for r in app.url_map.iter_rules() if not str(r.endpoint or "").startswith(_NEVER)]
        for view, method, options in self._pending.views:
            if isinstance(view, str):
                matches = [r for r in rules if r.endpoint == view]
            else:
                matches = [r for r in rules if app.view_functions.get(r.endpoint) is view
                           or getattr(app.view_functions.get(r.endpoint), "view_class", None) is view]
            if not matches:
                raise RegistrationError(f"add_view: {view!r} is not a view of app {app.name!r}; register it (or "
                                        "its blueprint) before init_app")
            served = sorted(set().union(*(r.methods or () for r in matches)) & set(METHODS))
            if method is None and len(served) > 1:
                raise RegistrationError(f"add_view: {view!r} serves {', '.join(served)}; say which with method=")
            wanted = method or served[0]
            rule = next((r for r in matches if wanted in (r.methods or ())), None)
            if rule is None:
                raise RegistrationError(f"add_view: {view!r} does not serve {wanted}")
            self._make(app, rule, wanted, options, single=True)
        for selection, options in self._pending.selections:
            for rule in rules:
                endpoint = str(rule.endpoint or "")
                bp = selection["blueprint"]
                if (bp is not None and not endpoint.startswith(f"{bp}.")) or (
                        selection["rule"] is not None and not fnmatch.fnmatchcase(rule.rule, selection["rule"])) or (
                        selection["include"] is not None and not any(
                            fnmatch.fnmatchcase(endpoint, p) for p in selection["include"])) or any(
                        fnmatch.fnmatchcase(endpoint, p) for p in selection["exclude"]):
                    continue
                served = [m for m in METHODS if m in (rule.methods or ()) and m in selection["methods"]]
                for method in served:
                    self._make(app, rule, method, options, single=len(served) == 1)

    def _make(self, app: Flask, rule: Rule, method: str, options: dict[str, Any], *, single: bool) -> None:
        key = (str(rule.endpoint), method)
        if key in self._made:
            return
        handler = _handler(app.view_functions[rule.endpoint], method)
        description, docs, _ = parse_docstring((inspect.getdoc(handler) or "").split("---")[0])
        schema, places = input_schema_of(rule, handler, method, docs)
        plan = Plan(str(rule.endpoint), method, places)
        name = options.get("name") or re.sub(r"[^A-Za-z0-9_]+", "_", str(rule.endpoint)).strip("_") + (
            "" if single else f"_{method.lower()}")

        def call_view(_tooldiscovery_context: ToolContext, **arguments: Any) -> Any:
            app = current_app._get_current_object()  # type: ignore[attr-defined]
            return result_of(run_view(app, plan, arguments, _tooldiscovery_context, name))

        call_view.__name__ = call_view.__qualname__ = name
        merged = {"description": description or f"{method} {rule.rule}", "annotations": _annotations(method),
                  "output_schema": output_schema_of(handler), **options, "name": name, "input_schema": schema}
        self._made[key] = self.registry.add_tool(tool_from_function(call_view, merged))
        log.debug("flask-tooldiscovery: view %s %s offered as tool %r", method, rule.rule, name)


__all__ = ["ENVIRON_KEY", "ViewTools"]
