"""What Opal's calls carry and how they are answered, for tools, rollbacks and interactions alike.

A body is ``{"parameters"|"data": {...}, "auth": {...}, "auth_credentials": [...],
"environment": {...}}`` plus ``X-Opal-*`` headers. What we accept, beside the official SDK
(``service.py``, 0.2.3.dev0), where it is lenient and where we are not:

- ``auth``, ``environment``, ``async_callback``: an object or ``null`` (``null`` is "none given",
  as the SDK reads it). Anything else is a client's mistake: 400 (the SDK answers a non-object
  ``auth`` with a 500, and passes a non-object ``environment`` to the tool).
- ``auth_credentials``: as the SDK reads it, since Opal's server sends it: absent or ``null``
  stays ``None`` (a server that predates the key), a non-list becomes ``[]``, entries that are
  not objects are dropped, every object entry is kept as sent, in order. The tool reads it in
  ``ctx.extra["auth_credentials"]``.

An answer is the tool's value (HTTP 200), or the v2 envelope (:data:`RESPONSE_V2`, HTTP 200 even
when it carries an error) when the tool returned one; a failed call is a 500, bad arguments a 400.
"""

from __future__ import annotations

import functools
from typing import Any

from flask import Response, request

from ...errors import BadRequest
from ...serving.pipeline import Pipeline
from ...serving.wire import json_response
from ...tools.model import ToolContext
from ...tools.results import Outcome

#: The media type of a v2 answer (the SDK's RESPONSE_MIME_TYPE).
RESPONSE_V2 = "application/vnd.optimizely.opal.tools+json"
NO_CACHE = {"Cache-Control": "no-cache, no-store, must-revalidate"}


#: The v2 envelope's JSON Schema (an answer of a tool that returns :class:`~flask_tooldiscovery.Envelope`).
ENVELOPE_SCHEMA = {"type": "object", "properties": {
    "message": {"type": "string"}, "content": {}, "content_type": {"type": "string"}, "ui": {},
    "operation": {"type": "object", "required": ["operation_id", "status"], "properties": {
        "operation_id": {"type": "string"}, "status": {"enum": ["completed", "pending", "failed"]},
        "rollback": {"type": "object", "required": ["tool_name", "parameters"], "properties": {
            "tool_name": {"type": "string"}, "parameters": {"type": "object"}, "resource_type": {"type": "string"}}},
        "affected_objects": {"type": "array", "items": {"type": "object"}}}},
    "error": {"type": "object", "required": ["type", "title", "status"], "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
        "detail": {"type": "string"}, "instance": {"type": "string"}, "error_code": {"type": "string"},
        "retry_after": {"type": "integer"}}},
    "interaction": {"type": "object", "required": ["status"], "properties": {
        "status": {"enum": ["waiting"]}, "reason": {"type": "string"}}}}}
#: What a call's body may carry beside its arguments (``null``: none given).
CONTEXT_PROPERTIES = {
    "auth": {"type": ["object", "null"]}, "environment": {"type": ["object", "null"]},
    "auth_credentials": {"description": "A list of objects; anything else reads as an empty list, null as none."}}


def ok_response(envelope: bool, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI ``200`` of a call: the v2 envelope, or the value (``schema``)."""
    if envelope:
        return {"description": "The tool's v2 envelope (an error it carries is still a 200).",
                "content": {RESPONSE_V2: {"schema": ENVELOPE_SCHEMA}}}
    return {"description": "The tool's return value.", "content": {"application/json": {"schema": schema}}}


def body_object(body: Any, key: str) -> dict[str, Any]:
    """The request body as an object (empty: ``{}``); its context keys checked when it wraps the
    arguments in ``key`` (a bare body is all arguments)."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    for name in ("auth", "environment") if key in body else ():
        if body.get(name) is not None and not isinstance(body[name], dict):
            raise BadRequest(f"{name!r} must be a JSON object.")
    return body


def arguments_of(body: dict[str, Any], key: str) -> dict[str, Any]:
    """The call's arguments: ``body[key]`` (``parameters``; a rollback's ``data``) or, as the SDK
    reads a body without it, the whole body."""
    if key not in body:
        return body
    arguments = body[key]
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise BadRequest(f"{key!r} must be a JSON object.")
    return arguments


def auth_credentials(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The body's ``auth_credentials`` as the SDK reads them (see the module's text)."""
    raw = body.get("auth_credentials")
    if raw is None:
        return None
    if not isinstance(raw, list):
        return []
    return [entry for entry in raw if isinstance(entry, dict)]


def opal_headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's ``X-Opal-*`` headers (thread, workflow and agent execution ids), names in
    lower case as sent on the wire. Which of the environ's keys are such headers, and each one's
    name, is worked out once per tuple of keys (a client sends the same headers call after call):
    the tuple is made and hashed in C from the keys' own hashes, kept since the environ took them."""
    found = _opal_keys(tuple(environ))
    return {name: environ[key] for key, name in found} if found else {}


@functools.lru_cache(maxsize=64)
def _opal_keys(keys: tuple[Any, ...]) -> tuple[tuple[str, str], ...]:
    """The ``X-Opal-*`` headers' environ keys among ``keys`` (an environ's), each with its header's
    name in lower case."""
    return tuple((key, key[5:].lower().replace("_", "-")) for key in keys
                 if isinstance(key, str) and key.startswith("HTTP_X_OPAL_"))


def context_of(pipe: Pipeline, body: dict[str, Any], **extra: Any) -> ToolContext:
    """The :class:`ToolContext` of an Opal call: the claimed user and the provider's token from
    ``auth``; ``auth``, ``auth_credentials``, ``environment`` and the ``X-Opal-*`` headers (and
    ``extra``) in ``ctx.extra``."""
    auth, environment = body.get("auth"), body.get("environment")
    auth = auth if isinstance(auth, dict) else None
    environment = environment if isinstance(environment, dict) else None
    user_id, authorization = None, {}
    if auth:
        raw_credentials = auth.get("credentials")
        credentials: dict[str, Any] = raw_credentials if isinstance(raw_credentials, dict) else {}
        provider = auth.get("provider")
        user_id = credentials.get("user_id")
        if provider and credentials.get("access_token"):
            authorization = {str(provider): credentials["access_token"]}
    context = pipe.context(
        user_id=user_id, authorization=authorization,
        extra={"auth": auth, "auth_credentials": auth_credentials(body), "environment": environment,
               "headers": None, **extra},
    )
    # Read off the call's request itself (not through Flask's proxy), in the place kept for them.
    context.extra["headers"] = opal_headers((context.request or request).environ)
    return context


def answer(outcome: Outcome) -> Response:
    """An outcome as Opal's answer (see the module's text)."""
    if outcome.envelope is not None:
        response = json_response(outcome.envelope, 200, NO_CACHE)
        response.mimetype = RESPONSE_V2
        return response
    if outcome.status == "invalid":
        return json_response({"error": outcome.error_message, "detail": outcome.error_message,
                              "parameter_errors": outcome.parameter_errors}, 400)
    if outcome.status == "failure":
        extra = {"can_retry": True} if outcome.failure and outcome.failure.can_retry else {}
        status = 404 if outcome.failure and outcome.failure.not_found else 500
        return json_response({"error": outcome.error_message, "detail": outcome.error_message, **extra}, status)
    return json_response(outcome.value, 200, NO_CACHE)


__all__ = [
    "CONTEXT_PROPERTIES",
    "ENVELOPE_SCHEMA",
    "NO_CACHE",
    "RESPONSE_V2",
    "answer",
    "arguments_of",
    "auth_credentials",
    "body_object",
    "context_of",
    "ok_response",
    "opal_headers",
]
