"""Opal's rollbacks: ``POST <prefix>/tools/rollbacks/<name>`` undoes an operation a tool did.

A tool declares its rollback with the ``rollback=`` option (a function, registered as its own
unlisted tool, or the name of another tool); discovery lists each rollback of the listed tools
(:func:`listed`). Opal calls it with ``{"data": {...}, "operation_id": "...", "auth": ...,
"auth_credentials": ..., "environment": ...}`` (the SDK's ``register_rollback``: ``data``, else
the whole body less those keys, is the arguments). It runs through the same pipeline as a tool
call (identity, limits, approvals, signals), once per ``operation_id`` and caller (the identity's
subject, when a credential named one): the first success is kept in the state store
(:mod:`~flask_tooldiscovery.state.once`, ``TOOLDISCOVERY_STATE_STORAGE_URI`` when set) for
``TOOLDISCOVERY_TASK_TTL`` seconds and answered again to every later call with that id; a second
call while the first runs is a 409; a failed or refused run is forgotten, so Opal's retry runs it
again. Without an ``operation_id`` (the SDK accepts that) it runs each time it is called.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flask import Response

from ...errors import BadRequest, CoreError, NotFound, OnceError, Unavailable
from ...schema.json_schema import inline_refs
from ...serving.openapi import arguments_body, openapi_post
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from .requests import (
    CONTEXT_PROPERTIES,
    NO_CACHE,
    RESPONSE_V2,
    answer,
    arguments_of,
    body_object,
    context_of,
    ok_response,
)


def rollback_name(tool: Tool) -> str | None:
    """The name ``tool``'s rollback is listed and called by (``None``: it has none)."""
    rollback = tool.metadata.get("rollback")
    if isinstance(rollback, Tool):
        return rollback.name
    return rollback if isinstance(rollback, str) else None


def listed(pipe: Pipeline, tools: list[Tool]) -> list[dict[str, Any]]:
    """Discovery's ``rollbacks``: each rollback of ``tools`` once, in their order."""
    entries: dict[str, dict[str, Any]] = {}
    for tool in tools:
        name = rollback_name(tool)
        if name is None or name in entries:
            continue
        entry: dict[str, Any] = {"name": name, "endpoint": f"/tools/rollbacks/{name}"}
        target = _target(pipe, tool)
        requirements = target.metadata.get("auth_requirements") if target is not None else None
        if requirements:
            entry["auth_requirements"] = [{"provider": r.get("provider", ""), "scope_bundle": r.get("scope_bundle", ""),
                                           "required": r.get("required", True)} for r in requirements]
        entries[name] = entry
    return list(entries.values())


def _target(pipe: Pipeline, tool: Tool) -> Tool | None:
    """The tool that runs ``tool``'s rollback (another tool: as this caller sees it)."""
    rollback = tool.metadata.get("rollback")
    if isinstance(rollback, Tool):
        return rollback
    return pipe.tools().get(rollback) if isinstance(rollback, str) else None


def find(pipe: Pipeline, name: str) -> Tool:
    """The rollback called ``name`` of a tool this caller sees; :class:`UnknownTool` otherwise."""
    for tool in pipe.tools().latest():
        if rollback_name(tool) == name:
            target = _target(pipe, tool)
            if target is not None:
                return target
    raise NotFound(f"Rollback not found: {name}")


def openapi(pipe: Pipeline, error_schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI path items of the rollbacks of the listed tools."""
    paths: dict[str, Any] = {}
    tools = pipe.tools().latest()
    for entry in listed(pipe, tools):
        target = find(pipe, entry["name"])
        ok = ok_response(bool(target.metadata.get("envelope")), inline_refs(target.output_schema or {}))
        body = {"type": "object", "required": ["data"], "properties": {
            "data": arguments_body(target.resolved_input_schema),
            "operation_id": {"type": ["string", "null"], "minLength": 1}, **CONTEXT_PROPERTIES}}
        paths[f"{pipe.prefix}{entry['endpoint']}"] = openapi_post(
            pipe, [target], operation_id=f"opal_rollback_{entry['name']}", tags=["opal"], schema=body,
            summary=f"Undo an operation ({entry['name']}), once per operation_id.", error_schema=error_schema,
            responses={"200": ok,
                       "400": "Malformed body or invalid data.", "404": "No such rollback (any longer).",
                       "409": "A rollback of this operation is running.", "500": "The rollback failed."})
    return paths


class _RollbackRunning(CoreError):
    """A rollback of this operation was claimed by a call that has not ended yet."""

    status = 409
    default_message = "A rollback of this operation is running; ask again when it is done."


def run(pipe: Pipeline, name: str) -> Response:
    """The view of ``POST <prefix>/tools/rollbacks/<name>``."""
    tool = find(pipe, name)
    body = body_object(pipe.body(), "data")
    data = arguments_of(body, "data") if "data" in body else {  # a bare body: the arguments, less the call's own keys
        k: v for k, v in body.items() if k not in ("operation_id", "auth", "auth_credentials", "environment")}
    operation_id = body.get("operation_id")
    if operation_id is not None and not (isinstance(operation_id, str) and operation_id):
        raise BadRequest("'operation_id' must be a non-empty string.")
    context = context_of(pipe, body, operation_id=operation_id)
    if operation_id is None:
        return answer(pipe.invoke(tool, data, context, coerce=True))
    records, settings = pipe.core.once_records(), pipe.settings
    caller = pipe.identity.subject if pipe.identity is not None else None  # one caller's result is not another's
    named = json.dumps([settings.server_name, pipe.prefix, name, caller, operation_id])
    key = "opal-rollback:" + hashlib.sha256(named.encode()).hexdigest()
    claim = (tool.timeout or settings.default_timeout or 300) + 60  # a worker that died lets go after this
    try:
        found = records.begin(key, claim)
    except OnceError as exc:
        raise Unavailable("Rollbacks cannot be run right now.", reason=str(exc)) from None
    if found is not None:
        if found.get("state") != "done":
            raise _RollbackRunning()
        return Response(found["body"], status=200, mimetype=found["mimetype"], headers=NO_CACHE)
    try:
        outcome = pipe.invoke(tool, data, context, coerce=True)
    except BaseException:
        records.release(key)
        raise
    response = answer(outcome)
    if outcome.ok:
        records.finish(key, {"state": "done", "body": response.get_data(as_text=True),
                             "mimetype": RESPONSE_V2 if outcome.envelope is not None else response.mimetype},
                       settings.task_ttl)
    else:
        records.release(key)
    return response


__all__ = ["find", "listed", "openapi", "rollback_name", "run"]
