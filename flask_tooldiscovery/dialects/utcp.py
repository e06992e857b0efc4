"""Dialect ``utcp``: a UTCP manual (``GET /utcp``), every tool once with an ``http`` call template
for ``POST /utcp/tools/<name>``. UTCP clients send one argument (``body_field``) as the JSON body and
the others as a query string, so each tool takes one, ``body``: the object of its typed arguments
(as UTCP's OpenAPI converter names a request body). Clients take any 200 as success: a tool's own
error is a 422 with its message, an unexpected failure a 500 that says nothing more."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, request

from ..schema.json_schema import inline_refs
from ..serving.openapi import arguments_body, body_required, openapi_post
from ..serving.pipeline import Pipeline
from ..serving.root import Root
from ..serving.wire import JSON_MIMETYPE, json_response, security_schemes
from ..settings import Settings
from ..tools.model import Tool
from ..tools.results import Outcome
from . import Dialect, Protocol
from .driver import Driver, Observation, WireRequest, message_of, status_kind

NAME = "utcp"
UTCP_VERSION = "1.0.1"
#: The body of every error answer (:func:`answer` and ``error_response``): the message, and what a
#: refusal adds (``parameter_errors``, the retry hints, an approval's ``approval_state`` and ``prompt``).
_ERROR = {"type": "object", "required": ["error"], "properties": {
    "error": {"type": "string"}, "parameter_errors": {"type": "object"}, "can_retry": {"type": "boolean"},
    "retry_after_ms": {"type": "integer"}, "code": {"type": "string"}, "approval_state": {"type": "string"},
    "prompt": {"type": "string"}}}


def object_schemas(schema: Any) -> Any:
    """``schema`` with boolean subschemas under ``properties`` and ``items`` written as objects
    (``true``: ``{}``, ``false``: ``{"not": {}}``). UTCP clients model those as objects only: one
    boolean there (a tuple's ``items: false``) and they refuse the whole manual."""
    if isinstance(schema, list):
        return [object_schemas(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _as_object(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = [_as_object(sub) for sub in value] if isinstance(value, list) else _as_object(value)
        else:
            out[key] = value if key in ("enum", "const", "default", "examples") else object_schemas(value)
    return out


def _as_object(schema: Any) -> Any:
    return {} if schema is True else {"not": {}} if schema is False else object_schemas(schema)


def arguments_schema(tool: Tool) -> dict[str, Any]:
    """The schema of ``body``: the tool's input schema, refs inlined, described."""
    schema = {k: v for k, v in object_schemas(tool.resolved_input_schema).items() if k != "$schema"}
    schema.setdefault("type", "object")
    schema.setdefault("description", f"The arguments of {tool.name}, as one JSON object.")
    return schema


def _outputs(tool: Tool) -> dict[str, Any]:
    return object_schemas(inline_refs(tool.output_schema)) if tool.output_schema else {}


def _tags(tool: Tool) -> list[str]:  # the category too: clients search tools by tag
    return list(dict.fromkeys([*tool.tags, *([tool.category] if tool.category else [])]))


def manual_tool(tool: Tool) -> dict[str, Any]:
    """A tool's manual entry, less its call template (which holds this request's URL)."""
    return {"name": tool.name, "description": tool.description_or_title,
            "inputs": {"type": "object", "properties": {"body": arguments_schema(tool)}, "required": ["body"]},
            "outputs": _outputs(tool), "tags": _tags(tool)}


def call_path(pipe: Pipeline, tool: Tool) -> str:
    return f"{pipe.prefix}/tools/{quote(tool.name, safe='')}"


def call_auth(pipe: Pipeline) -> dict[str, Any] | None:
    """The credential the call route needs, as a UTCP ``auth`` whose value the client fills from
    its variable ``<manual name>_TOKEN`` (``_API_KEY`` for an API key header); ``None`` when open."""
    scheme = next(iter(security_schemes(pipe.authenticator).values()), None)
    if scheme is None:
        return None
    if scheme["type"] == "apiKey":
        return {"auth_type": "api_key", "api_key": "${API_KEY}", "var_name": scheme["name"], "location": "header"}
    return {"auth_type": "api_key", "api_key": "Bearer ${TOKEN}", "var_name": "Authorization", "location": "header"}


def manual(pipe: Pipeline, root: Root, tools: list[Tool] | None = None) -> dict[str, Any]:
    """The manual served at ``root`` (``tools``: the latest version of each), its call URLs absolute."""
    base, auth = root.url_root.rstrip("/"), call_auth(pipe)
    template = {"name": re.sub(r"\W", "_", pipe.settings.server_name), "call_template_type": "http",
                "http_method": "POST", "content_type": JSON_MIMETYPE, "body_field": "body",
                "headers": {"Content-Type": JSON_MIMETYPE}, **({"auth": auth} if auth else {})}
    return {"utcp_version": UTCP_VERSION, "manual_version": pipe.settings.server_version, "tools": [
        {**pipe.dump(NAME, tool, manual_tool), "tool_call_template": {**template, "url": base + call_path(pipe, tool)}}
        for tool in (pipe.tools().latest() if tools is None else tools)]}


def answer(outcome: Outcome) -> Response:
    """An outcome as UTCP clients read it: the value on 200, any failure as an HTTP error."""
    if outcome.ok:
        return json_response(outcome.value)
    if outcome.status == "invalid":
        return json_response({"error": outcome.error_message, "parameter_errors": outcome.parameter_errors}, 400)
    failure = outcome.failure
    assert failure is not None
    more = failure.additional_prompt_content
    body = {"error": f"{failure.message}\n{more}" if more else failure.message,
            "can_retry": failure.can_retry or None, "retry_after_ms": failure.retry_after_ms}
    status = 404 if failure.not_found else 422 if failure.expected else 500
    return json_response({k: v for k, v in body.items() if v is not None}, status)


def openapi_paths(pipe: Pipeline) -> dict[str, Any]:
    """One ``POST`` operation per tool (``operationId``: its name), the body its arguments (optional
    when none is required: an empty body runs the tool with its defaults)."""
    return {call_path(pipe, tool): pipe.dump(f"{NAME}.openapi", tool, lambda t: _operation(pipe, t))
            for tool in pipe.tools().latest()}


def _operation(pipe: Pipeline, tool: Tool) -> dict[str, Any]:
    ok = {"description": "The tool's return value.",
          **({"content": {JSON_MIMETYPE: {"schema": _outputs(tool)}}} if tool.output_schema else {})}
    schema = arguments_schema(tool)
    return openapi_post(pipe, [tool], operation_id=tool.name, description=tool.description_or_title, tags=_tags(tool),
                        schema=arguments_body(schema), required=body_required(schema), error_schema=_ERROR, responses={
                            "200": ok, "400": "Malformed JSON, or arguments that fail the input schema "
                                              "(`parameter_errors`).",
                            "404": "No such tool (any longer).",
                            "422": "The tool reported an error; `error` is its message.",
                            "500": "The tool failed unexpectedly."})


def make_blueprint(pipe: Pipeline) -> Blueprint:
    bp = pipe.blueprint(__name__)

    @pipe.route("" if pipe.prefix else "/", "discovery", ["GET"], endpoint="manual", strict_slashes=False)
    def manual_view() -> Response:
        return pipe.send(pipe.document(("manual", request.url_root),
                                       lambda tools: manual(pipe, Root.of(request), tools.latest())))

    @pipe.route("/tools/<path:name>", "call", ["POST"], endpoint="call")
    def call(name: str) -> Response:
        return answer(pipe.invoke(pipe.find(name), pipe.body(), pipe.context()))

    return bp


class UtcpDriver(Driver):
    """How a UTCP client calls tools: the manual's call template, the arguments as the JSON body; any
    200 is the value, a tool's own error a 422, an unexpected failure a 500."""

    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("GET", prefix or "/")

    def tool_names(self, body: Any) -> list[str]:
        return [t["name"] for t in body["tools"]]

    def call_path(self, prefix: str, name: str) -> str:
        return f"{prefix}/tools/{quote(name, safe='')}"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        return arguments

    def read(self, status: int, body: Any) -> Observation:
        if status == 200:
            return Observation("ok", [body])
        if status == 400:
            kind = "invalid" if isinstance(body, dict) and "parameter_errors" in body else "malformed"
        elif status == 404 and not message_of(body, "error").startswith("Tool not found:"):
            kind = "tool_error"  # the tool ran: what it names is not there
        else:
            kind = {422: "tool_error", 500: "failure"}.get(status) or status_kind(status)
        return Observation(kind, message=message_of(body, "error"))


DIALECT = Dialect(name=NAME, make_blueprint=make_blueprint, default_prefix="/utcp", export_document=manual,
                  protocol=Protocol("Universal Tool Calling Protocol manual", (UTCP_VERSION,)), driver=UtcpDriver(),
                  error_response=lambda exc: ({"error": exc.message, **exc.extra}, exc.status),  # 428: approval_state
                  openapi_paths=openapi_paths, security_warning=lambda settings, auth: None if auth is not None else (
                      "utcp's POST /utcp/tools/<name> runs tools without authentication (none of its own): use the "
                      "identity layer, keep it on a private network or guard it in front of the app"))
