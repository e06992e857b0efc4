"""What every dialect's wire layer shares: a marshmallow base for wire schemas, JSON responses
and errors, and reading a JSON request body without ever answering 500 for a client's mistake."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flask import Blueprint, Response, current_app, request
from marshmallow import Schema, fields, post_dump
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

JSON_MIMETYPE = "application/json"


class WireSchema(Schema):
    """Base of every dialect's dump schema: ``None`` values are left out of the output.

    Keys named in ``keep_none`` are kept even when ``None`` (a wire format that needs an explicit
    ``null``, such as OXP's ``output_schema``).
    """

    keep_none: tuple[str, ...] = ()

    @post_dump
    def _drop_none(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {k: v for k, v in data.items() if v is not None or k in self.keep_none}


class ToolList(fields.Field):
    """A list of :class:`~flask_tooldiscovery.tool.Tool` dumped with ``schema``; each tool's dump
    is computed once per ``key`` (a value, or a callable read at dump time when the dump depends
    on config) and reused on later requests."""

    def __init__(self, schema: Schema, key: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tool_schema = schema
        self.memo_key = key

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        if value is None:
            return None
        key = self.memo_key() if callable(self.memo_key) else self.memo_key
        return [dump_tool(self.tool_schema, tool, key) for tool in value]


def dump_tool(schema: Schema, tool: Any, key: Any) -> Any:
    """``schema.dump(tool)``, memoized on the tool under ``key``."""
    return tool.memo(key, lambda: schema.dump(tool))


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response, serialized by the app's JSON provider, keys in the order the wire
    schemas and the tools declared them (a schema's property order is what clients show)."""
    text = current_app.json.dumps(body, sort_keys=False)
    response = current_app.response_class(text, status=status, mimetype=JSON_MIMETYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


class WireError(HTTPException):
    """An HTTP error whose body is a ready JSON document (raise it from a dialect view)."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(description=str(body))
        self.code = status
        self.body = body
        self.extra_headers = dict(headers or {})

    def get_response(self, environ: Any = None, scope: Any = None) -> Response:  # type: ignore[override]
        return json_response(self.body, self.code or 500, self.extra_headers)


MAX_JSON_DEPTH = 64


def parse_json(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a request body; ``ValueError`` with a readable message for anything that is not
    JSON, and for nesting deeper than ``max_depth`` (which would exhaust the stack later on)."""
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        raise ValueError("The request body is not UTF-8 text.") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels.") from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise ValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
        raise ValueError(str(exc)) from None
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"JSON nested deeper than {max_depth} levels.")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


def read_json_body(
    error: Callable[[str], WireError], *, allow_empty: bool = True
) -> Any:
    """The request body parsed as JSON. Malformed JSON raises ``error(message)``.

    The body size was already limited by ``TOOLDISCOVERY_MAX_CONTENT_LENGTH`` (413).
    """
    raw = request.get_data(cache=True)
    if not raw.strip():
        if allow_empty:
            return None
        raise error("The request body is empty; a JSON object was expected.")
    try:
        return parse_json(raw)
    except ValueError as exc:
        raise error(f"Malformed JSON: {exc}") from None


def limit_body_size() -> None:
    """``before_request`` hook: apply TOOLDISCOVERY_MAX_CONTENT_LENGTH to this blueprint."""
    limit = current_app.config.get("TOOLDISCOVERY_MAX_CONTENT_LENGTH")
    if limit:
        request.max_content_length = int(limit)
        if request.content_length is not None and request.content_length > int(limit):
            raise RequestEntityTooLarge()


def method_guard(
    bp: Blueprint, rule: str, allowed: Iterable[str], endpoint: str,
) -> None:
    """Answer every other method on ``rule`` inside the blueprint, so its JSON error handler
    (not Flask's app-wide HTML page) replies 405 with an ``Allow`` header."""
    methods = {m.upper() for m in allowed} | {"OPTIONS"}
    if "GET" in methods:
        methods.add("HEAD")
    allowed = sorted(methods)
    others = [m for m in ("GET", "POST", "PUT", "PATCH", "DELETE") if m not in allowed]
    if not others:
        return

    def not_allowed(**_: Any) -> Response:
        from werkzeug.exceptions import MethodNotAllowed

        raise MethodNotAllowed(valid_methods=allowed)

    bp.add_url_rule(rule, endpoint=endpoint, view_func=not_allowed, methods=others)


def register_json_errors(
    bp: Blueprint, body: Callable[[int, str], Any], headers: Mapping[str, str] | None = None
) -> None:
    """Answer every HTTP error raised inside ``bp`` (404, 405, 413...) as JSON.

    ``body(status, message)`` builds the dialect's error document; a :class:`WireError` is sent
    as it is. ``headers`` go on every error response (CORS, for instance).
    """

    @bp.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        if isinstance(exc, WireError):
            response = exc.get_response()
        else:
            status = exc.code or 500
            response = json_response(body(status, exc.description or exc.name), status)
            valid = getattr(exc, "valid_methods", None)
            if valid:
                response.headers["Allow"] = ", ".join(valid)
        for name, value in (headers or {}).items():
            response.headers.setdefault(name, value)
        return response
