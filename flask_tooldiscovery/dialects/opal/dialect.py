"""Dialect ``opal``: Optimizely Opal tool discovery and execution.

``GET <prefix>/discovery`` (and ``/discovery/``) lists the tools as Opal "functions";
``POST <prefix>/tools/<name>`` (and ``<prefix>/discovery/tools/<name>``) runs one.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, request

from ...errors import BadRequest, CoreError, Unauthorized
from ...serving.identity import Authenticator
from ...serving.openapi import arguments_body, body_required, openapi_post
from ...serving.pipeline import Pipeline
from ...serving.verifiers import BearerVerifier
from ...serving.wire import json_response
from ...settings import Settings
from ...tools.json_schema import inline_refs, primary_type, split_nullable
from ...tools.model import Tool
from ...tools.targets import Target
from ...tools.targets.object_root import WORD_NAME, one_type_lint, one_type_simplify
from .. import Dialect, Protocol
from . import async_mode as opal_async
from .discovery import NAME, OpalParameterSchema, discovery_document, media_type
from .driver import OpalDriver
from .settings import OpalSettings

NO_CACHE = {"Cache-Control": "no-cache, no-store, must-revalidate"}


def error_response(exc: CoreError) -> tuple[Any, int]:
    """Opal's error shape: ``error`` and ``detail`` (the official SDK's key) carry the message."""
    message = exc.message
    if isinstance(exc, Unauthorized):  # which credential, named by the challenge the answer carries
        wanted = "a signed request (epi-hmac)" if exc.challenge.startswith("epi-hmac") else "a valid bearer token"
        message = f"Unauthorized: {wanted} is required."
    body: dict[str, Any] = {"error": message, "detail": message, **exc.extra}  # approvals: code, approval_state
    retry_after_ms = getattr(exc, "retry_after_ms", None)
    if retry_after_ms is not None:
        body.update(can_retry=True, retry_after_ms=retry_after_ms)
    return body, exc.status


def authenticator(settings: Settings) -> Authenticator | None:
    """A static bearer token on calls, when ``TOOLDISCOVERY_OPAL_BEARER_TOKEN`` is set."""
    token = OpalSettings.of(settings).bearer_token
    return Authenticator((BearerVerifier(token, "opal"),)) if token else None


def security_warning(settings: Settings, authenticator: Authenticator | None) -> str | None:
    """Why this dialect would run tools for anyone (no credential of its own nor of the identity layer), or ``None``."""
    if authenticator is None:
        return "opal runs tools without authentication (set TOOLDISCOVERY_OPAL_BEARER_TOKEN or use the identity layer)"
    return None


_OPAL_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def lint_tool(tool: Tool) -> list[str]:
    """Problems Opal would have with ``tool``."""
    problems = []
    if not _OPAL_NAME.match(tool.name):
        problems.append(f"name {tool.name!r} is not letters, digits and underscores")
    schema = tool.resolved_input_schema
    for name, prop in (schema.get("properties") or {}).items():
        inner, _ = split_nullable(prop if isinstance(prop, dict) else {})
        if isinstance(inner.get("anyOf") or inner.get("oneOf"), list):
            problems.append(f"parameter {name!r} is a union; Opal sees it as {primary_type(inner)!r}")
    return problems


#: The body of every error answer: the message under both keys, and what a refusal adds.
ERROR_SCHEMA = {"type": "object", "required": ["error", "detail"], "properties": {
    "error": {"type": "string"}, "detail": {"type": "string"}, "parameter_errors": {"type": "object"},
    "can_retry": {"type": "boolean"}, "retry_after_ms": {"type": "integer"}, "code": {"type": "string"},
    "approval_state": {"type": "string"}, "prompt": {"type": "string"}}}


def openapi_paths(pipe: Pipeline) -> dict[str, Any]:
    """OpenAPI path items of the per-tool execution endpoints: the body is the envelope (``parameters``,
    ``auth``, ``environment``) or, as Opal's SDK reads a body without ``parameters``, the bare arguments."""
    paths: dict[str, Any] = {}
    for tool in pipe.tools().latest():
        parameters = tool.resolved_input_schema
        context = {"type": ["object", "null"]}  # null: none given
        envelope = {"type": "object", "required": ["parameters"], "properties": {
            "parameters": arguments_body(parameters), "auth": context, "environment": context}}
        opal_async.openapi(tool, envelope)
        item = openapi_post(pipe, [tool], operation_id=f"opal_{tool.name}", tags=["opal"],
                            summary=tool.description.split("\n")[0], required=body_required(parameters),
                            schema={"anyOf": [envelope, arguments_body(parameters)]}, error_schema=ERROR_SCHEMA,
                            responses={
                                "200": {"description": "The tool's return value.", "content": {
                                    "application/json": {"schema": inline_refs(tool.output_schema or {})}}},
                                **opal_async.responses(tool),
                                "400": "Malformed body or invalid parameters.", "404": "No such tool (any longer).",
                                "500": "The tool failed."})
        paths[f"{pipe.prefix}/tools/{tool.name}"] = item
    return paths


def _parameters(body: Any) -> dict[str, Any]:
    """The call's parameters: ``{"parameters": {...}}`` (whose ``auth`` and ``environment``, when
    given, are objects) or the bare object."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    if "parameters" not in body:
        return body
    for key in ("auth", "environment"):
        if body.get(key) is not None and not isinstance(body[key], dict):
            raise BadRequest(f"{key!r} must be a JSON object.")
    parameters = body["parameters"]
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise BadRequest("'parameters' must be a JSON object.")
    return parameters


def opal_headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's ``X-Opal-*`` headers (thread, workflow and agent execution ids), names in
    lower case as sent on the wire."""
    return {key[5:].lower().replace("_", "-"): value for key, value in environ.items()
            if key.startswith("HTTP_X_OPAL_")}


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The Opal blueprint: discovery and tool execution."""
    bp = pipe.blueprint(__name__)

    def discovery() -> Response:
        document = pipe.document("discovery", lambda toolset: discovery_document(pipe, toolset.latest()),
                                 media_type=lambda toolset: media_type(pipe, toolset))
        return pipe.send(document, NO_CACHE)

    for rule in ("/discovery", "/discovery/"):
        pipe.route(rule, "discovery", ["GET"], endpoint="discovery" if rule == "/discovery" else "discovery_slash",
                   strict_slashes=True)(discovery)

    def call_tool(name: str) -> Response:
        tool = pipe.find(name)
        body = pipe.body()
        parameters = _parameters(body)
        body = body if isinstance(body, dict) else {}
        auth: dict[str, Any] | None = body["auth"] if isinstance(body.get("auth"), dict) else None
        environment = body.get("environment") if isinstance(body.get("environment"), dict) else None
        raw_credentials = (auth or {}).get("credentials")
        credentials: dict[str, Any] = raw_credentials if isinstance(raw_credentials, dict) else {}
        provider = (auth or {}).get("provider")
        context = pipe.context(
            user_id=credentials.get("user_id"),
            authorization={str(provider): credentials["access_token"]}
            if provider and credentials.get("access_token") else {},
            extra={
                "auth": auth,
                "environment": environment,
                "headers": opal_headers(request.environ),
            },
        )
        accepted = opal_async.accept(pipe, tool, parameters, context, body)  # async_callback: 202
        if accepted is not None:
            return accepted
        outcome = pipe.invoke(tool, parameters, context, coerce=True)
        if outcome.status == "invalid":
            return json_response({"error": outcome.error_message, "detail": outcome.error_message,
                                  "parameter_errors": outcome.parameter_errors}, 400)
        if outcome.status == "failure":
            extra = {"can_retry": True} if outcome.failure and outcome.failure.can_retry else {}
            return json_response({"error": outcome.error_message, "detail": outcome.error_message, **extra}, 500)
        return json_response(outcome.value, 200, NO_CACHE)

    for rule in ("/tools/<path:name>", "/discovery/tools/<path:name>"):
        endpoint = "call" if rule.startswith("/tools") else "call_under_discovery"
        pipe.route(rule, "call", ["POST"], endpoint=endpoint)(call_tool)
    return bp


__all__ = ["DIALECT", "OpalParameterSchema"]

DIALECT = Dialect(
    name=NAME, make_blueprint=make_blueprint, default_prefix="/opal", error_response=error_response,
    protocol=Protocol("Optimizely Opal tools"), driver=OpalDriver(),
    target=Target("opal", "Optimizely Opal", WORD_NAME, lambda s: one_type_lint(s, "Opal", nested=False),
                  one_type_simplify), authenticator=authenticator, public_discovery=True,
    cors_headers=("x-opal-thread-id", "x-opal-workflow-execution-id", "x-opal-agent-execution-id"),
    export_document=discovery_document, security_warning=security_warning, lint_tool=lint_tool,
    openapi_paths=openapi_paths, settings=OpalSettings,
)
