"""A request's JSON body: read once, never past the size limit (chunked bodies included), parsed
with the core's JSON rules, and kept in the request's state for every later reader."""

from __future__ import annotations

import io
from typing import Any

from flask import Request, request
from werkzeug.exceptions import RequestEntityTooLarge

from ..errors import BadRequest, MalformedBody, PayloadTooLarge
from . import request_state
from .wire import JSON_MIMETYPE, content_length, parse_json

#: The environ key of a body read before the app (the fast path's look at a POST to MCP's
#: endpoint): ``(stream, raw)``, the ``wsgi.input`` put back and the bytes read from it.
READ_BODY = "tooldiscovery.read_body"


def json_body(limit: int, *, required: bool = False) -> Any:
    """The request body parsed as JSON (``None`` when empty and not ``required``)."""
    state = request_state.ACTIVE.get() or request_state.current()
    if state.body is not request_state.UNREAD:
        return state.body
    raw = state.raw if state.raw is not None else read_body(limit, state.request)  # a signature's check read it first
    state.raw = raw
    if not raw.strip():
        if required:
            raise BadRequest("The request body is empty; a JSON object was expected.")
        value = None
    else:
        try:
            value = parse_json(raw)
        except ValueError as exc:
            raise MalformedBody(str(exc)) from None
    state.body = value
    return value


def has_body(limit: int) -> bool:
    """True when the request carries a non-empty body (read and kept by :func:`json_body`)."""
    state = request_state.current()
    if state.body is not request_state.UNREAD:
        return state.body is not None
    try:
        return json_body(limit) is not None
    except MalformedBody:
        return True


def peek_json(limit: int) -> Any:
    """The JSON body of a request refused before the pipeline read it (another extension's
    ``before_request``): the value already read, else a JSON body of at most ``limit`` bytes parsed
    now (kept for the app); ``None`` for anything else, or a body that is not JSON. Never raises."""
    state = request_state.peek()
    if state is not None and state.body is not request_state.UNREAD:
        return state.body
    length = request.content_length
    if not length or length > limit or request.mimetype != JSON_MIMETYPE:
        return None
    try:
        return parse_json(request.get_data(cache=True))
    except (ValueError, RecursionError):
        return None


def read_body(limit: int, req: Request | None = None) -> bytes:
    """At most ``limit`` bytes of body; :class:`~flask_tooldiscovery.errors.PayloadTooLarge` when
    there are more.

    A chunked body (no Content-Length; the server terminates the stream) is read from the
    server's stream itself, one byte past the limit, so that a body over it is refused whole
    instead of being cut at the limit and run.
    """
    if req is None:
        req = request._get_current_object()  # type: ignore[attr-defined]
    cached: bytes | None = getattr(req, "_cached_data", None)
    if cached is not None:  # read before us by the app's code (a before_request's request.get_data())
        if len(cached) > limit:
            raise PayloadTooLarge()
        return cached
    environ = req.environ
    handed = environ.get(READ_BODY)  # read before the app, and nothing read since: the same bytes
    if handed is not None and handed[0] is environ["wsgi.input"] and len(handed[1]) <= limit and not handed[0].tell():
        read: bytes = handed[1]
        return read
    length = content_length(environ)
    if length is not None and length <= limit and "stream" not in req.__dict__:
        # The usual case: exactly Content-Length bytes from the server's stream, which is then
        # replaced by the same bytes, so the app can still read the body after us.
        raw: bytes = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        return raw  # a body cut short is parsed as it came, as werkzeug's stream gives it
    if length is None and environ.get("wsgi.input_terminated"):
        stream, parts, size = environ["wsgi.input"], [], 0
        while size <= limit:
            part = stream.read(limit + 1 - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
        raw = b"".join(parts)
    else:
        try:
            raw = req.stream.read(limit + 1)
        except RequestEntityTooLarge:
            raise PayloadTooLarge() from None
    if len(raw) > limit:
        raise PayloadTooLarge()
    return raw


__all__ = ["READ_BODY", "has_body", "json_body", "read_body"]
