"""Dialect ``opal``: Optimizely Opal tool discovery and execution.

``GET <prefix>/discovery`` (and ``/discovery/``) lists the tools as Opal "functions";
``POST <prefix>/tools/<name>`` (and ``<prefix>/discovery/tools/<name>``) runs one.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response

from ...errors import CoreError, Unauthorized
from ...identity.sources import Authenticator
from ...identity.verifiers import BearerVerifier
from ...lint.protocols import OPAL
from ...schema.json_schema import inline_refs
from ...serving.openapi import arguments_body, body_required, openapi_post
from ...serving.pipeline import Pipeline
from ...settings import Settings
from .. import Dialect, Protocol
from . import async_mode as opal_async
from . import interactions, rollbacks
from . import resources as ui_resources
from .discovery import NAME, OpalParameterSchema, discovery_document, media_type
from .driver import OpalDriver
from .requests import CONTEXT_PROPERTIES, NO_CACHE, answer, arguments_of, body_object, context_of, ok_response
from .settings import OpalSettings


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
        envelope = {"type": "object", "required": ["parameters"], "properties": {
            "parameters": arguments_body(parameters), **CONTEXT_PROPERTIES}}
        opal_async.openapi(tool, envelope)
        item = openapi_post(pipe, [tool], operation_id=f"opal_{tool.name}", tags=["opal"],
                            summary=tool.description.split("\n")[0], required=body_required(parameters),
                            schema={"anyOf": [envelope, arguments_body(parameters)]}, error_schema=ERROR_SCHEMA,
                            responses={
                                "200": ok_response(bool(tool.metadata.get("envelope")),
                                                   inline_refs(tool.output_schema or {})),
                                **opal_async.responses(tool),
                                "400": "Malformed body or invalid parameters.", "404": "No such tool (any longer).",
                                "500": "The tool failed."})
        paths[f"{pipe.prefix}/tools/{tool.name}"] = item
    return {**paths, **rollbacks.openapi(pipe, ERROR_SCHEMA)}


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
        body = body_object(pipe.body(), "parameters")
        parameters = arguments_of(body, "parameters")
        context = context_of(pipe, body)
        gate = pipe.approvals.gate(tool)  # whether it needs a person's approval, decided once for the call
        if body.get("async_callback") is not None:  # 202 when it runs in the background
            accepted = opal_async.accept(pipe, gate, parameters, context, body)
            if accepted is not None:
                return accepted
        return answer(pipe.invoke(tool, parameters, context, coerce=True, gate=gate))

    for rule in ("/tools/<path:name>", "/discovery/tools/<path:name>"):
        endpoint = "call" if rule.startswith("/tools") else "call_under_discovery"
        pipe.route(rule, "call", ["POST"], endpoint=endpoint)(call_tool)
    pipe.route("/tools/rollbacks/<name>", "call", ["POST"], endpoint="rollback")(lambda name: rollbacks.run(pipe, name))
    pipe.route("/interactions/execute", "call", ["POST"], endpoint="interaction")(lambda: interactions.execute(pipe))
    ui_resources.add_routes(pipe)  # POST /resources/read: the tools' UIs
    return bp


__all__ = ["DIALECT", "OpalParameterSchema"]

DIALECT = Dialect(
    name=NAME, make_blueprint=make_blueprint, default_prefix="/opal", error_response=error_response,
    protocol=Protocol("Optimizely Opal tools"), driver=OpalDriver(),
    target=OPAL, authenticator=authenticator, public_discovery=True,
    cors_headers=("x-opal-thread-id", "x-opal-workflow-execution-id", "x-opal-agent-execution-id"),
    export_document=lambda pipe, root: discovery_document(pipe), security_warning=security_warning,
    lint_tool=OPAL.lint_tool,
    openapi_paths=openapi_paths, settings=OpalSettings, finish_task=opal_async.deliver_result,
    task_headers=("X-Opal-Thread-Id", "X-Opal-Workflow-Execution-Id", "X-Opal-Agent-Execution-Id"),
)
