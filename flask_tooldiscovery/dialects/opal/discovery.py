"""Opal's discovery document: the tools as Opal "functions", the server's identity and
``instructions``, and the media type it is sent as.

Wire facts, from the Python SDK ``optimizely-opal.opal-tools-sdk`` 0.2.3.dev0 (``models.py``
Function.to_dict, ``service.py`` discovery, ``response.py``): a function carries ``name``,
``description``, ``parameters``, ``endpoint``, ``http_method``, and when declared
``auth_requirements``, ``ui_resource``, ``mode``/``timeout``, ``sensitive`` (one advisory string),
``wait``, ``skippable_interaction``, ``hints``. The document is sent as
``application/vnd.optimizely.opal.tools.discovery+json`` (:data:`DISCOVERY_V2`) as soon as a v2
feature is listed; under ``application/json`` Opal keeps the v1 keys only. Ours: v2 whenever a
function carries a v2-only key (:data:`V2_FUNCTION_KEYS`), a tool returns the v2 envelope, or the
document lists rollbacks; v1, exactly as before, otherwise. Everything the document holds is built
here (:func:`discovery_document`): a new key goes in :class:`OpalFunctionSchema` or the document.
"""

from __future__ import annotations

import json
from typing import Any

from marshmallow import fields

from ...schema.json_schema import primary_type, split_nullable
from ...serving.pipeline import Pipeline
from ...serving.wire import JSON_MIMETYPE, WireSchema
from ...tools.model import Tool
from ...tools.registry import ToolSet
from . import async_mode as opal_async
from . import rollbacks
from .resources import ui_resource

NAME = "opal"
OPAL_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
#: The media type of a discovery document that lists v2 features (the SDK's DISCOVERY_MIME_TYPE).
DISCOVERY_V2 = "application/vnd.optimizely.opal.tools.discovery+json"
#: Function keys Opal reads only from a v2 document.
V2_FUNCTION_KEYS = frozenset({"mode", "timeout", "sensitive", "wait", "skippable_interaction"})


def describe_parameter(name: str, schema: dict[str, Any]) -> str:
    """A parameter's description, always a non-empty string; enum values and the default are
    written into it since Opal parameters carry no ``enum`` or ``default`` keys."""
    inner, _ = split_nullable(schema)
    text = str(inner.get("description") or schema.get("description") or "").strip()
    if not text:
        text = f"The {name.replace('_', ' ')} parameter."
    enum = inner.get("enum")
    if isinstance(enum, list) and enum:
        text = f"{text.rstrip('.')}. One of: {', '.join(_prose(v) for v in enum)}."
    if "default" in schema and schema["default"] is not None:
        text = f"{text.rstrip('.')}. Defaults to {_prose(schema['default'])}."
    return text


def _prose(value: Any) -> str:
    """A value as a sentence shows it: strings bare, anything else as JSON (``false``, ``{"k": 1}``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class OpalParameterSchema(WireSchema):
    """One entry of an Opal function's ``parameters`` array."""
    name = fields.String(required=True)
    type = fields.String(required=True)
    description = fields.String(required=True)
    required = fields.Boolean(required=True)
    in_context = fields.Boolean(dump_default=False)
    schema = fields.Dict()


class OpalAuthRequirementSchema(WireSchema):
    """One of a function's ``auth_requirements`` (OAuth provider and scope bundle)."""
    provider = fields.String(required=True)
    scope_bundle = fields.String(dump_default="")  # the official SDK always sends it
    required = fields.Boolean(dump_default=True)


class OpalFunctionSchema(WireSchema):
    """A registry :class:`Tool` dumped as an Opal function."""

    name = fields.String(required=True)
    description = fields.String(attribute="description_or_title")
    parameters = fields.Method("get_parameters")
    endpoint = fields.Method("get_endpoint")
    http_method = fields.Constant("POST")
    auth_requirements = fields.Method("get_auth_requirements")
    ui_resource = fields.Function(ui_resource)  # the ui:// URI of its UI (POST /resources/read)
    hints = fields.Method("get_hints")
    mode = fields.Function(opal_async.mode)  # "async": long_running, answered 202 + callback
    timeout = fields.Function(opal_async.timeout)
    sensitive = fields.Function(lambda tool: tool.metadata.get("sensitive"))  # one advisory sentence
    wait = fields.Function(lambda tool: True if tool.metadata.get("wait") else None)
    skippable_interaction = fields.Function(lambda tool: True if tool.metadata.get("skippable_interaction") else None)

    def get_endpoint(self, tool: Tool) -> str:
        return f"/tools/{tool.name}"

    def get_parameters(self, tool: Tool) -> list[dict[str, Any]]:
        schema = tool.resolved_input_schema
        required = set(schema.get("required") or ())
        in_context = set(tool.metadata.get("in_context") or ())
        scoped, scope = tool.metadata.get("principal_scope") or (None, None)
        params = []
        for name, prop in (schema.get("properties") or {}).items():
            prop = prop if isinstance(prop, dict) else {}
            ptype = primary_type(prop)
            ptype = ptype if ptype in OPAL_TYPES else "string"
            param: dict[str, Any] = {
                "name": name,
                "type": ptype,
                "description": describe_parameter(name, prop),
                "required": name in required,
                "in_context": name in in_context,
            }
            if ptype in ("array", "object"):
                param["schema"] = dict(split_nullable(prop)[0])
            if name == scoped:  # the SDK's place for it: the string parameter's schema
                param["schema"] = {"type": "string", "principal_scope": scope, "description": param["description"]}
            params.append(param)
        return params  # already what OpalParameterSchema dumps (its fields, in its order; no None)

    def get_auth_requirements(self, tool: Tool) -> list[dict[str, Any]] | None:
        reqs = tool.metadata.get("auth_requirements")
        return _AUTH_REQUIREMENTS.dump(reqs) if reqs else None

    def get_hints(self, tool: Tool) -> list[str] | None:
        if not tool.annotations:
            return None
        hints = set()
        if tool.hint("idempotentHint"):
            hints.add("idempotent")
        if tool.hint("openWorldHint"):
            hints.add("open_world")
        if tool.hint("readOnlyHint") is False or tool.hint("destructiveHint"):
            hints.add("write")
        return sorted(hints)


_AUTH_REQUIREMENTS = OpalAuthRequirementSchema(many=True)


class OpalDiscoverySchema(WireSchema):
    """The discovery document: ``functions`` (already dumped per tool), the server identity and
    its ``instructions`` (TOOLDISCOVERY_INSTRUCTIONS: what the tools are for, as a whole)."""
    functions = fields.Raw(required=True)
    name = fields.String()
    description = fields.String()
    version = fields.String()
    instructions = fields.String()
    rollbacks = fields.Raw()


_DISCOVERY = OpalDiscoverySchema()
_FUNCTION = OpalFunctionSchema()


def discovery_document(pipe: Pipeline, tools: list[Tool] | None = None) -> dict[str, Any]:
    """The discovery document (``tools``: the latest version of each tool)."""
    settings = pipe.settings
    tools = pipe.tools().latest() if tools is None else tools
    document: dict[str, Any] = _DISCOVERY.dump({
        "functions": [function_of(pipe, t) for t in tools],
        "rollbacks": rollbacks.listed(pipe, tools) or None,
        "name": settings.server_name,
        "description": settings.server_description or None,
        "version": settings.server_version,
        "instructions": settings.instructions or None,
    })
    return document


def function_of(pipe: Pipeline, tool: Tool) -> dict[str, Any]:
    """``tool`` as an Opal function (computed once per tool content; never mutate it)."""
    function: dict[str, Any] = pipe.dump(NAME, tool, _FUNCTION.dump)
    return function


def is_v2(pipe: Pipeline, tools: list[Tool]) -> bool:
    """True when the discovery document of ``tools`` lists a v2 feature: a v2-only function key, a
    tool that returns the v2 envelope, a rollback."""
    return any(V2_FUNCTION_KEYS.intersection(function_of(pipe, tool)) or tool.metadata.get("envelope")
               or rollbacks.rollback_name(tool) for tool in tools)


def media_type(pipe: Pipeline, toolset: ToolSet) -> str:
    """What the discovery document of ``toolset`` is sent as: v2 when it lists a v2 feature."""
    return DISCOVERY_V2 if is_v2(pipe, toolset.latest()) else JSON_MIMETYPE
