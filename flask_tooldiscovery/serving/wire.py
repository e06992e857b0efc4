"""What every dialect's wire layer shares: a marshmallow base for wire schemas, JSON responses,
and the one strict JSON parser (bounded depth, finite numbers only)."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from flask import Request, Response, current_app
from flask.json.provider import DefaultJSONProvider, JSONProvider
from marshmallow import Schema, post_dump
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header
from werkzeug.sansio.utils import get_content_length

from ..identity.sources import Authenticator
from ..identity.verifiers import ApiKeyVerifier, JwksVerifier, JwtVerifier

JSON_MIMETYPE = "application/json"
#: How a JSON string is written, by ``ensure_ascii``: what ``json.dumps`` (and so Flask's default
#: provider, :func:`dumps`) writes of a ``str``. A text already written as JSON with
#: ``ensure_ascii=False`` (``content_blocks.json_text``) is written again verbatim inside an answer
#: only when this would not escape it: always without ``ensure_ascii``, with it when the text is
#: ASCII without DEL.
QUOTE: Mapping[bool, Callable[[str], str]] = {True: json.encoder.encode_basestring_ascii,
                                              False: json.encoder.encode_basestring}
#: A WSGI environ.
Environ = dict[str, Any]


def content_length(environ: Environ) -> int | None:
    """``request.content_length``, read from the environ (werkzeug's rule: none when chunked)."""
    given = environ.get("CONTENT_LENGTH")
    if given is not None and given.isdigit() and given.isascii() and "HTTP_TRANSFER_ENCODING" not in environ:
        return int(given)  # the usual header, plain digits: what werkzeug's parsing gives
    return get_content_length(given, environ.get("HTTP_TRANSFER_ENCODING"))


class WireSchema(Schema):
    """Base of every dialect's dump schema: ``None`` values are left out of the output.

    Keys named in ``keep_none`` are kept even when ``None`` (a wire format that needs an explicit
    ``null``, such as OXP's ``output_schema``).
    """

    keep_none: tuple[str, ...] = ()

    @post_dump
    def _drop_none(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {k: v for k, v in data.items() if v is not None or k in self.keep_none}


def json_encoder(*, ensure_ascii: bool = True, default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """The text ``json.JSONEncoder(ensure_ascii=ensure_ascii, default=default).encode(value)``
    writes (keys in the order given), as a function made once: each value then goes to the C
    encoder directly, without the two Python calls ``encode`` makes around it every time. The C
    encoders are kept for the next value (one per thread encoding at once: ``list.pop`` and
    ``append`` are atomic) once they have written one; one that failed is dropped (its circular
    reference check may still hold the containers it was in)."""
    reference = json.JSONEncoder(ensure_ascii=ensure_ascii, default=default)
    make = getattr(json.encoder, "c_make_encoder", None)  # (typeshed does not name it)
    if make is None:  # no C accelerator: the encoder as it is
        return reference.encode
    quote = QUOTE[bool(ensure_ascii)]
    fallback = reference.default

    kept: list[Callable[[Any, int], Any]] = []

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return quote(value)
        try:
            encoder = kept.pop()
        except IndexError:
            encoder = make({}, fallback, quote, None, ": ", ", ", False, False, True)
        chunks = encoder(value, 0)  # (raising: the encoder is not kept)
        kept.append(encoder)
        return "".join(chunks)

    return encode


def dumps(value: Any, provider: JSONProvider | None = None) -> str:
    """``value`` as JSON text by the app's JSON provider (``provider``, else the current app's),
    keys in the order the wire schemas and the tools declared them. Flask's default provider's
    encoder is made once per setting instead of once per call."""
    if provider is None:
        provider = current_app.json
    if type(provider) is not DefaultJSONProvider:
        return provider.dumps(value, sort_keys=False)
    ensure_ascii, default = provider.ensure_ascii, provider.default
    encode = _ENCODERS.get((ensure_ascii, default))
    if encode is None:
        encode = _ENCODERS[(ensure_ascii, default)] = json_encoder(ensure_ascii=ensure_ascii, default=default)
    return encode(value)


#: The encoder of Flask's default JSON provider, per (ensure_ascii, default).
_ENCODERS: dict[tuple[bool, Any], Callable[[Any], str]] = {}


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response, serialized by the app's JSON provider, keys in the order the wire
    schemas and the tools declared them (a schema's property order is what clients show);
    ``headers``: more of them (never ``Content-Type`` nor ``Content-Length``, which the body sets)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    response: Response = app.response_class(dumps(body, app.json), status=status, content_type=JSON_MIMETYPE)
    if headers:
        add = response.headers.add  # a new answer holds only those two: nothing to replace
        for name, value in headers.items():
            add(name, value)
    return response


def accepts(req: Request, mimetype: str) -> float:
    """How much the request's ``Accept`` header wants ``mimetype`` (0: not at all), as werkzeug's
    ``request.accept_mimetypes[mimetype]`` says; each header text is parsed once, not per request."""
    return _accept_quality(req.environ.get("HTTP_ACCEPT"), mimetype)


def best_accepted(req: Request, offers: tuple[str, ...]) -> str | None:
    """The offer the request's ``Accept`` header prefers, as werkzeug's
    ``request.accept_mimetypes.best_match(offers)`` says (parsed once per header text)."""
    return _best_match(req.environ.get("HTTP_ACCEPT"), offers)


@functools.lru_cache(maxsize=256)
def _accept_quality(header: str | None, mimetype: str) -> float:
    return float(parse_accept_header(header, MIMEAccept)[mimetype])


@functools.lru_cache(maxsize=256)
def _best_match(header: str | None, offers: tuple[str, ...]) -> str | None:
    return parse_accept_header(header, MIMEAccept).best_match(list(offers))


MAX_JSON_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


#: The one decoder of request bodies (made once: ``json.loads`` with hooks makes one per call).
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def parse_json(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a request body; ``ValueError`` with a readable message for anything that is not
    JSON, and for nesting deeper than ``max_depth`` (which would exhaust the stack later on)."""
    try:
        if isinstance(raw, (bytes, bytearray)):  # as json.loads reads bytes (a BOM is allowed)
            # An object whose second byte is not NUL is UTF-8 by json.detect_encoding's rules (a BOM
            # or UTF-16/32 would begin otherwise): the usual body, read without asking it.
            usual = raw[:1] == b"{" and raw[1:2] != b"\x00"
            text = raw.decode("utf-8" if usual else json.detect_encoding(raw), "surrogatepass")
        elif raw.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", raw, 0)
        else:
            text = raw
        value = _DECODER.decode(text)
    except UnicodeDecodeError:
        raise ValueError("The request body is not UTF-8 text.") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels.") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    except ValueError as exc:  # a non-finite number, from the hooks above
        raise ValueError(str(exc)) from None
    if text.count("[") + text.count("{") <= max_depth:
        return value  # not enough brackets to nest that deep (strings may hold some: only an over-count)
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"JSON nested deeper than {max_depth} levels.")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def key_name(key: Any) -> str:
    """A key as a message names it: a plain name as it is, anything else (an empty name, one with
    spaces or dots) quoted, so that every key shows."""
    return key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else repr(key)


def validation_messages(messages: Any, prefix: str = "") -> list[str]:
    """marshmallow's nested error messages as flat ``"path.to.key: message"`` lines (keys as
    :func:`key_name` writes them)."""
    if isinstance(messages, dict):
        return [line for key, value in messages.items()
                for line in validation_messages(value, f"{prefix}.{key_name(key)}" if prefix else key_name(key))]
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [f"{prefix}: {' '.join(messages)}" if prefix else " ".join(messages)]
    if isinstance(messages, list):
        return [line for item in messages for line in validation_messages(item, prefix)]
    return [f"{prefix}: {messages}"]


def security_schemes(authenticator: Authenticator | None) -> dict[str, Any]:
    """OpenAPI security schemes of a dialect's credentials, by name (any one of them lets a call in);
    a verifier of another kind (the identity hook) is named by the scheme of its challenge."""
    schemes: dict[str, Any] = {}
    for verifier in authenticator.verifiers if authenticator is not None else ():
        if isinstance(verifier, ApiKeyVerifier):
            schemes["apiKey"] = {"type": "apiKey", "in": "header", "name": verifier.header}
        elif isinstance(verifier, (JwtVerifier, JwksVerifier)):
            schemes["jwt"] = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
        else:
            schemes[verifier.scheme.lower()] = {"type": "http", "scheme": verifier.scheme.lower()}
    return schemes


def page_cursor(offset: int) -> str:
    """An opaque pagination cursor for ``offset``."""
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def read_cursor(cursor: Any, size: int) -> int:
    """The offset of a cursor from :func:`page_cursor`; ``ValueError`` unless it is one, within
    ``0..size``."""
    if not isinstance(cursor, str):
        raise ValueError("a cursor is a string")
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["o"])
    except (ValueError, KeyError, TypeError, OverflowError, binascii.Error):
        raise ValueError("not a cursor of this server") from None
    if not 0 <= offset <= size:
        raise ValueError("the cursor is out of range")
    return offset
