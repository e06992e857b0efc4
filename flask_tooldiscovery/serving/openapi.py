"""OpenAPI operations of the routes that run tools, for the dialects' ``openapi_paths``.

A dialect says what its own wire format answers (its success, its invalid-argument and tool-error
answers); :func:`openapi_post` adds every status the core itself can answer on the way to the call,
from the settings and tools in force: credentials (401), origin (403), other methods (405), body
size and type (413, 415), host (421), approval (428), rate limit (429, ``Retry-After``) and busy
call slots or a failing tools provider (503). Each error answer carries the dialect's error body
schema, as its one ``error_response`` writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..calls.approvals import APPROVAL_HEADER, needs_approval
from ..tools.model import Tool
from .pipeline import Pipeline
from .wire import JSON_MIMETYPE

#: A response header as OpenAPI declares it: ``(description, required)``.
Header = tuple[str, bool]
#: How far the core's refusals on a route reach HTTP: ``"call"``, a route that runs a tool (all of
#: them); ``"lookup"``, one that finds a tool but runs none (the explorer's validation: no approval,
#: rate limit or call slot, but a failing tools provider); ``"body"``, one that answers whatever
#: happens after reading the body inside its own protocol (MCP's JSON-RPC).
Reach = Literal["body", "lookup", "call"]


@dataclass(frozen=True)
class CoreAnswer:
    """One status the core can answer a route with: why, and the headers it always (or may) send."""

    description: str
    headers: Mapping[str, Header] = field(default_factory=dict)


_SECONDS = {"type": "integer", "minimum": 1}


def core_answers(pipe: Pipeline, tools: Iterable[Tool], *, reach: Reach = "call") -> dict[int, CoreAnswer]:
    """What the core may answer a ``POST`` of a JSON body to a route of ``pipe`` that runs ``tools``,
    by status, under these settings (``reach``: how far its refusals reach HTTP, :data:`Reach`)."""
    guard, authenticator, settings = pipe.core.guard, pipe.authenticator, pipe.settings
    answers = {
        400: CoreAnswer("The body is not JSON (or nests too deep)."),
        405: CoreAnswer("Not a method this route takes: `Allow` lists those it does.",
                        {"Allow": ("The methods this route takes.", True)}),
        413: CoreAnswer(f"The body is over {settings.max_content_length} bytes (TOOLDISCOVERY_MAX_CONTENT_LENGTH)."),
        415: CoreAnswer("The body is not sent as `Content-Type: application/json`."),
    }
    if authenticator is not None:
        answers[401] = CoreAnswer("Credentials are missing or wrong: `WWW-Authenticate` names the scheme.",
                                  {"WWW-Authenticate": ("The scheme the route takes.", True)})
    if not guard.any_origin or authenticator is not None:
        answers[403] = CoreAnswer("Forbidden: a browser page of an origin that is not allowed "
                                  "(TOOLDISCOVERY_ALLOWED_ORIGINS), or a token without a scope the route needs.")
    if guard.hosts is not None:
        answers[421] = CoreAnswer("The `Host` header names a host this server does not answer for.")
    if reach == "lookup":  # the explorer's validation looks the tool up (MCP's JSON-RPC answers that too)
        answers[503] = CoreAnswer("The tool list is unavailable right now (a tools provider failed).")
    if reach != "call":
        return answers
    tools = list(tools)
    if any(needs_approval(tool, destructive=settings.approve_destructive) for tool in tools):
        answers[428] = CoreAnswer(
            "The tool needs a person's approval first: the body carries the sealed request (`approval_state`) "
            f"and the question to ask (`prompt`); call again with the approval in `{APPROVAL_HEADER}`.")
    limits = pipe.core.operations.limits
    if any(limits.limits_for(tool, pipe.name) for tool in tools):
        answers[429] = CoreAnswer("The caller's rate limit for this tool is used up.",
                                  {"Retry-After": ("Seconds until a call is counted again.", True)})
    answers[503] = CoreAnswer(
        "Every call slot of this worker is taken (TOOLDISCOVERY_MAX_CONCURRENT_CALLS): retry after `Retry-After` "
        "seconds; or the tool list is unavailable right now (a tools provider failed).",
        {"Retry-After": ("Seconds to wait before calling again (when the slots were busy).", False)})
    return answers


def call_responses(pipe: Pipeline, tools: Iterable[Tool], own: Mapping[str, str | Mapping[str, Any]],
                   error_schema: Mapping[str, Any], *, reach: Reach = "call") -> dict[str, Any]:
    """The ``responses`` of an operation that runs ``tools``: the dialect's ``own`` (status: a
    description, or a whole response object kept as it is) and every status of :func:`core_answers`
    it does not name; error answers carry ``error_schema`` as their JSON body, the core's headers
    their declaration."""
    core = core_answers(pipe, tools, reach=reach)
    responses: dict[str, Any] = {}
    for status in sorted({*(int(s) for s in own), *core}):
        given, answer = own.get(str(status)), core.get(status)
        if isinstance(given, Mapping):
            response = dict(given)
        else:
            response = {"description": given or (answer.description if answer else "")}
            if status >= 400:
                response["content"] = {JSON_MIMETYPE: {"schema": dict(error_schema)}}
        if answer is not None and answer.headers and "headers" not in response:
            response["headers"] = {name: {"description": text, "required": required, "schema": _header_schema(name)}
                                   for name, (text, required) in answer.headers.items()}
        responses[str(status)] = response
    return responses


def _header_schema(name: str) -> dict[str, Any]:
    return dict(_SECONDS) if name == "Retry-After" else {"type": "string"}


def body_required(input_schema: Mapping[str, Any]) -> bool:
    """Whether a call needs a body: only when the tool has a required argument (an empty ``POST``
    runs a tool whose arguments are all optional)."""
    return bool(input_schema.get("required"))


def arguments_body(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a body (or a field) holding a tool's arguments, as the core reads it: ``null``
    is no argument at all, so it is allowed where none is required."""
    if body_required(input_schema):
        return dict(input_schema)
    return {**input_schema, "type": ["object", "null"]}


def one_of(shapes: list[dict[str, Any]]) -> dict[str, Any]:
    """A body that is one of ``shapes`` (one per tool); with none, no body is valid (no tool to call)."""
    return {"oneOf": shapes} if shapes else {"not": {}}


def openapi_post(pipe: Pipeline, tools: Iterable[Tool], *, operation_id: str, tags: list[str], schema: Any,
                 responses: Mapping[str, str | Mapping[str, Any]], error_schema: Mapping[str, Any],
                 summary: str | None = None, description: str | None = None, required: bool = True,
                 reach: Reach = "call") -> dict[str, Any]:
    """An OpenAPI path item for a ``POST`` of a JSON body (``schema``; ``required`` false when it may
    be left out) that runs ``tools``: its responses from :func:`call_responses`."""
    operation: dict[str, Any] = {"operationId": operation_id, "tags": tags}
    if summary is not None:
        operation["summary"] = summary
    if description is not None:
        operation["description"] = description
    operation["requestBody"] = {"required": required, "content": {JSON_MIMETYPE: {"schema": schema}}}
    operation["responses"] = call_responses(pipe, tools, responses, error_schema, reach=reach)
    return {"post": operation}


__all__ = ["CoreAnswer", "Reach", "arguments_body", "body_required", "call_responses", "core_answers", "one_of",
           "openapi_post"]
