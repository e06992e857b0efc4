"""Dialect ``oxp``: the Open eXecution Protocol 1.0 (``/health``, ``/tools``, ``/tools/call``), as
the OXP 1.0 OpenAPI components (after their errata) write it: ``items``, closed ``ToolDefinition``s,
``value`` xor ``error``, 400 / 422 / 200-with-failure kept apart."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, request
from marshmallow import RAISE, Schema, ValidationError, fields, post_dump, validate

from ..errors import BadRequest, CoreError, Unauthorized, Unavailable
from ..identity.sources import Authenticator, Verifier
from ..identity.verifiers import ApiKeyVerifier, JwtVerifier
from ..lint.protocols import OXP
from ..schema.json_schema import inline_refs
from ..serving.openapi import body_required, one_of, openapi_post
from ..serving.pipeline import Pipeline, UnknownTool
from ..serving.wire import WireSchema, json_response, validation_messages
from ..settings import DialectSettings, Settings, optional, parse_bool, parse_list, parse_mapping, parse_str, setting
from ..tools.model import Tool, parse_version
from . import Dialect, Protocol
from .driver import Driver, Observation, WireRequest, failed_kind, message_of, status_kind

NAME = "oxp"
SCHEMA_URN = "urn:oxp:1.0"
#: ``$schema`` values a client may send: the URN and the OpenAPI document's published addresses.
ACCEPTED_SCHEMAS = {SCHEMA_URN} | {
    f"https://{where}/spec/http/1.0/openapi.json" for org in ("ArcadeAI", "openexecprotocol")
    for where in (f"github.com/{org}/oxp/blob/main", f"raw.githubusercontent.com/{org}/oxp/main")}
TOOL_ID = re.compile(r"^([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)(?:@([0-9]+|[0-9]+\.[0-9]+\.[0-9]+))?$")
_NOT_ID = re.compile(r"[^A-Za-z0-9_]+")


@dataclass(frozen=True)
class OxpSettings(DialectSettings):
    """OXP's own keys: its credentials and how its ids and list are written."""

    jwt_secret: str | None = setting("OXP_JWT_SECRET", None, parse_str,
                                     "HS256 secret for OXP bearer JWTs (needs the jwt extra).")
    jwt_audience: tuple[str, ...] | None = setting("OXP_JWT_AUDIENCE", None, optional(parse_list),
                                                   "Accepted JWT audience(s); unset: a token naming one is refused.")
    jwt_require_exp: bool = setting("OXP_JWT_REQUIRE_EXP", True, parse_bool, "Require an exp claim.")
    jwt_claims: Mapping[str, Any] = setting("OXP_JWT_CLAIMS", {}, parse_mapping,
                                            "Claims that must be present with these values.")
    api_key: str | None = setting("OXP_API_KEY", None, parse_str, "API key accepted in the OXP-API-Key header.")
    toolkit: str | None = setting("OXP_TOOLKIT", None, parse_str, "Toolkit for tools that name none.")
    legacy_tools_key: bool = setting("OXP_LEGACY_TOOLS_KEY", False, parse_bool, "Also send the list under 'tools'.")

    def __post_init__(self) -> None:
        self.only_with("jwt_secret", "jwt_audience", "jwt_require_exp", "jwt_claims")


@functools.lru_cache(maxsize=65_536)  # tool names only; a provider's tools get their ids on each request
def sanitize(text: str) -> str:
    """Keep ``[A-Za-z0-9_]``; runs of anything else become one ``_``."""
    return _NOT_ID.sub("_", text).strip("_") or "Tool"


@functools.lru_cache(maxsize=64)
def default_toolkit(server_name: str) -> str:
    """``"example-tools"`` -> ``"ExampleTools"``."""
    parts = [p for p in _NOT_ID.split(server_name or "") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Tools"


def toolkit_of(tool: Tool, settings: Settings) -> str:
    """The sanitized toolkit of ``tool``: its own, the configured one, or one from SERVER_NAME."""
    return sanitize(tool.toolkit or OxpSettings.of(settings).toolkit or default_toolkit(settings.server_name))


def id_parts(settings: Settings) -> Any:
    """``tool -> (toolkit, name)`` as OXP ids write them (two tools may not share one)."""
    return lambda tool: (toolkit_of(tool, settings), sanitize(tool.name))


def tool_id(tool: Tool, settings: Settings, *, with_version: bool = True) -> str:
    """``Toolkit.Tool@x.y.z`` (or without the version)."""
    ident = f"{toolkit_of(tool, settings)}.{sanitize(tool.name)}"
    return f"{ident}@{tool.version}" if with_version else ident


class ToolDefinitionSchema(WireSchema):
    """A registry :class:`Tool` dumped as an OXP ``ToolDefinition`` (a closed object)."""

    keep_none = ("output_schema",)

    id = fields.Method("get_id")
    name = fields.Method("get_name")
    description = fields.String(attribute="description_or_title")
    version = fields.String()
    input_schema = fields.Method("get_input_schema")
    output_schema = fields.Method("get_output_schema")
    requirements = fields.Raw()

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings

    def get_id(self, tool: Tool) -> str:
        return tool_id(tool, self.settings)

    def get_name(self, tool: Tool) -> str:
        return f"{toolkit_of(tool, self.settings)}_{sanitize(tool.name)}"[:64]

    def get_input_schema(self, tool: Tool) -> dict[str, Any]:
        return tool.resolved_input_schema or {"type": "object"}

    def get_output_schema(self, tool: Tool) -> dict[str, Any] | None:
        return inline_refs(tool.output_schema) if tool.output_schema else None


class ToolErrorSchema(WireSchema):
    """``ToolError``: why a tool that ran failed."""
    message = fields.String(required=True)
    developer_message = fields.String()
    can_retry = fields.Boolean()
    additional_prompt_content = fields.String()
    retry_after_ms = fields.Integer()


class CallToolResultSchema(WireSchema):
    """``CallToolResponse``: ``value`` on success, ``error`` on failure, never both."""

    call_id = fields.String(required=True)
    duration = fields.Float()
    success = fields.Boolean(required=True)
    value = fields.Raw(allow_none=True)
    error = fields.Nested(ToolErrorSchema)

    keep_none = ("value",)  # a tool may return null; that is still a value

    @post_dump
    def _one_of(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        data.pop("error" if data["success"] else "value", None)
        return data


# -- request schemas (load): the context is open, the request itself closed ----------------

_OPEN: dict[str, Any] = {"unknown": "include"}
_ID = fields.String(required=True)
CallContextSchema = Schema.from_dict({
    "authorization": fields.List(fields.Nested(Schema.from_dict({"id": _ID, "token": fields.String(required=True)},
                                                                name="AuthorizationItem")(**_OPEN))),
    "secrets": fields.List(fields.Nested(Schema.from_dict({"id": _ID, "value": fields.String(required=True)},
                                                          name="SecretItem")(**_OPEN))),
    "user_id": fields.String(),
}, name="CallContext")
CallToolRequestSchema = Schema.from_dict({
    "call_id": fields.String(), "trace_id": fields.String(), "input": fields.Dict(keys=fields.String()),
    "tool_id": fields.String(required=True, validate=validate.Regexp(
        TOOL_ID, error="Not a valid tool id (Toolkit.Tool[@version]).")),
    "context": fields.Nested(CallContextSchema(**_OPEN)),
}, name="CallToolRequest")
_CALL_REQUEST = CallToolRequestSchema(unknown=RAISE)
_RESULT = CallToolResultSchema()


# -- errors and credentials -------------------------------------------------------------------


def error_response(exc: CoreError) -> tuple[Any, int]:
    """A ``ServerErrorResponse`` (``/health`` has its own ``status`` shape)."""
    if request.endpoint and request.endpoint.endswith(".health") and isinstance(exc, Unavailable):
        return {"status": "unavailable", "message": "A tools provider failed."}, 503
    if isinstance(exc, UnknownTool):
        return {"$schema": SCHEMA_URN, "message": f"Tool not found: {exc.name}"}, 400
    body: dict[str, Any] = {"$schema": SCHEMA_URN, "message": "Unauthorized" if isinstance(exc, Unauthorized)
                            else exc.message}
    body.update(exc.extra)
    retry_after_ms = getattr(exc, "retry_after_ms", None)
    if retry_after_ms is not None:
        body.update(can_retry=True, retry_after_ms=retry_after_ms)
    return body, exc.status


def authenticator(settings: Settings) -> Authenticator | None:
    """API key and/or HS256 JWT (either lets a request in); the list is guarded too."""
    verifiers: list[Verifier] = []
    options = OxpSettings.of(settings)
    if options.api_key:
        verifiers.append(ApiKeyVerifier(options.api_key, "OXP-API-Key", "oxp"))
    if options.jwt_secret:
        verifiers.append(JwtVerifier(options.jwt_secret, "oxp", audience=options.jwt_audience,
                                     require_exp=options.jwt_require_exp, claims=options.jwt_claims,
                                     required_claims=settings.jwt_required_claims))
    return Authenticator(tuple(verifiers), protect_discovery=True) if verifiers else None


def resolve(pipe: Pipeline, ident: str) -> Tool:
    """The tool ``Toolkit.Tool[@version]`` names (``@x`` is ``x.0.0``, none: the latest), else :class:`UnknownTool`."""
    match = TOOL_ID.match(ident)
    if match:  # the index is built once per tool set: a call never looks at every tool
        toolkit, name, version = match.groups()
        wanted = parse_version(version) if version is not None else None
        for tool in reversed(pipe.index("id", id_parts(pipe.settings)).get((toolkit, name), ())):
            if wanted is None or tool.version_tuple == wanted:  # lowest version first: the latest is last
                return tool
    raise UnknownTool(ident)


def list_document(pipe: Pipeline, tools: list[Tool]) -> dict[str, Any]:
    """``GET /tools``'s body for ``tools`` (every version)."""
    schema = ToolDefinitionSchema(pipe.settings)
    doc: dict[str, Any] = {"$schema": SCHEMA_URN, "items": [pipe.dump(NAME, t, schema.dump) for t in tools]}
    if OxpSettings.of(pipe.settings).legacy_tools_key:
        doc["tools"] = doc["items"]
    return doc


def export_document(pipe: Pipeline) -> dict[str, Any]:
    """What ``GET /tools`` answers now."""
    return list_document(pipe, list(pipe.tools()))


def security_warning(settings: Settings, authenticator: Authenticator | None) -> str | None:
    """Why this dialect would run tools for anyone (no credential of its own nor of the identity layer), or ``None``."""
    if authenticator is None:
        return ("oxp runs tools without authentication (set TOOLDISCOVERY_OXP_JWT_SECRET or TOOLDISCOVERY_OXP_API_KEY, "
                "or use the identity layer)")
    return None


def lint_tool(tool: Tool) -> list[str]:
    """Where ``tool``'s names change on their way into OXP ids."""
    problems = []
    if sanitize(tool.name) != tool.name:
        problems.append(f"name {tool.name!r} appears in OXP ids as {sanitize(tool.name)!r}")
    if tool.toolkit and sanitize(tool.toolkit) != tool.toolkit:
        problems.append(f"toolkit {tool.toolkit!r} appears in OXP ids as {sanitize(tool.toolkit)!r}")
    return problems


_S = {"type": "string"}
#: ``ServerErrorResponse`` / ``ValidationErrorResponse`` as :func:`error_response` writes them (a refusal's extras too).
ERROR_SCHEMA = {"type": "object", "required": ["message"], "properties": {"message": _S, "parameter_errors": {
    "type": "object"}, "missing_requirements": {"type": "object"}, "can_retry": {"type": "boolean"}}}
_CONTEXT = {"type": "object", "properties": {"user_id": _S, **{key: {"type": "array", "items": {
    "type": "object", "required": ["id", value], "properties": {"id": _S, value: _S}}}
    for key, value in (("authorization", "token"), ("secrets", "value"))}}}


def openapi_paths(pipe: Pipeline) -> dict[str, Any]:
    """``POST /tools/call`` in OpenAPI: one request shape per tool (its ids, its input schema)."""
    tools, latest = list(pipe.tools()), {id(t) for t in pipe.tools().latest()}

    def request(t: Tool) -> dict[str, Any]:
        ids = [tool_id(t, pipe.settings)] + ([tool_id(t, pipe.settings, with_version=False)] if id(t) in latest else [])
        return {"type": "object", "additionalProperties": False,
                "required": ["tool_id", "input"] if body_required(t.resolved_input_schema) else ["tool_id"],
                "properties": {"tool_id": {"enum": ids}, "call_id": _S, "trace_id": _S,
                               "input": {"type": "object", **t.resolved_input_schema}, "context": _CONTEXT}}

    schema = {"type": "object", "additionalProperties": False, "required": ["request"], "properties": {
        "$schema": {"enum": [*sorted(ACCEPTED_SCHEMAS), None]}, "request": one_of([request(t) for t in tools])}}
    return {f"{pipe.prefix}/tools/call": openapi_post(
        pipe, tools, operation_id="oxp_call_tool", tags=["oxp"], summary="Call a tool (OXP 1.0)", schema=schema,
        error_schema=ERROR_SCHEMA, responses={"200": "The call's result: its value, or the tool's error.",
                                              "400": "ServerErrorResponse", "422": "ValidationErrorResponse"})}


def _check_version(body: Any) -> None:
    version = body.get("$schema") if isinstance(body, dict) else None
    if version is not None and (not isinstance(version, str) or version not in ACCEPTED_SCHEMAS):
        raise BadRequest(f"Unsupported $schema: {version!r}; this server speaks {SCHEMA_URN}.")


_PLAIN_KEYS = frozenset({"call_id", "trace_id", "input", "tool_id", "context"})


def _plain_call(raw: dict[str, Any]) -> bool:
    """True only when :data:`_CALL_REQUEST` would load ``raw`` as it is: known keys, string ids,
    a tool id of the right form, an object ``input`` with string keys, a ``context`` naming at most
    a string ``user_id`` (anything else, secrets and tokens included, is loaded by the schema)."""
    if not _PLAIN_KEYS.issuperset(raw):
        return False
    tool = raw.get("tool_id")
    if type(tool) is not str or not TOOL_ID.match(tool):  # as the schema's Regexp matches it
        return False
    for name in ("call_id", "trace_id"):
        if name in raw and type(raw[name]) is not str:
            return False
    arguments = raw.get("input", {})
    if type(arguments) is not dict:
        return False
    for name in arguments:  # JSON keys are strings; a loop, not a generator: this runs on every call
        if type(name) is not str:
            return False
    context = raw.get("context", {})
    return type(context) is dict and not context.keys() & {"authorization", "secrets"} and (
        "user_id" not in context or type(context["user_id"]) is str)


def _call_request(body: Any) -> dict[str, Any]:
    """The ``CallToolRequest`` of a body: ``{"request": {...}}`` or the flat form."""
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    _check_version(body)
    if "request" in body:
        raw = body["request"]
        extra = sorted(set(body) - {"$schema", "request"})
        if extra:
            raise BadRequest(f"Unexpected key(s) beside 'request': {', '.join(map(repr, extra))}.")
    else:  # the flat form of an unmerged spec revision
        raw = {k: v for k, v in body.items() if k != "$schema"}
    if not isinstance(raw, dict):
        raise BadRequest("'request' must be a JSON object.")
    if _plain_call(raw):
        return dict(raw)
    try:
        call: dict[str, Any] = _CALL_REQUEST.load(raw)
    except ValidationError as exc:
        raise BadRequest("Malformed call request: " + "; ".join(validation_messages(exc.messages))) from None
    return call


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The OXP blueprint: health, list and call."""
    bp = pipe.blueprint(__name__)

    @pipe.route("/health", "health", ["GET"])
    def health() -> Response:
        pipe.tools()
        return json_response({"status": "ok"})

    @pipe.route("/tools", "discovery", ["GET"], endpoint="list_tools")
    def list_tools() -> Response:
        if pipe.has_body():  # the optional request body may name the client's OXP version
            _check_version(pipe.body())
        document = pipe.document("list", lambda toolset: list_document(pipe, list(toolset)))
        return pipe.send(document)

    @pipe.route("/tools/call", "call", ["POST"], endpoint="call_tool")
    def call_tool() -> Response:
        call = _call_request(pipe.body(required=True))
        tool = resolve(pipe, call["tool_id"])
        context = call.get("context") or {}
        secrets = {s["id"]: s["value"] for s in context.get("secrets", [])}
        authorization = {a["id"]: a["token"] for a in context.get("authorization", [])}
        ctx = pipe.context(call_id=call.get("call_id"), trace_id=call.get("trace_id"),
                           user_id=context.get("user_id"), secrets=secrets, authorization=authorization)
        missing = tool.missing_requirements(secrets=secrets, authorization=authorization,
                                            user_id=ctx.user_id) if tool.requirements else None
        if missing:  # user_id: the caller's identity names one too
            raise BadRequest(f"The call lacks requirements of {tool_id(tool, pipe.settings)}: "
                             f"{', '.join(sorted(missing))}.", extra={"missing_requirements": missing})
        outcome = pipe.invoke(tool, call.get("input") or {}, ctx)
        if outcome.status == "invalid":
            raise BadRequest(outcome.error_message, status=422, extra={"parameter_errors": outcome.parameter_errors})
        duration = round(outcome.duration_ms, 3)
        if outcome.ok:  # what _RESULT dumps for a success, built straight (tests compare the two)
            return json_response({"$schema": SCHEMA_URN, "result": {
                "call_id": outcome.call_id, "duration": duration, "success": True, "value": outcome.value}})
        result = {"call_id": outcome.call_id, "duration": duration, "success": False, "value": None,
                  "error": outcome.failure}
        return json_response({"$schema": SCHEMA_URN, "result": _RESULT.dump(result)})

    return bp


class OxpDriver(Driver):
    """How an OXP client calls tools: ``GET /tools``, then ``POST /tools/call`` naming a tool by its
    id (a bare name: in the server's default toolkit); a tool's failure is a 200 ``success: false``."""

    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("GET", f"{prefix}/tools")

    def tool_names(self, body: Any) -> list[str]:
        return sorted({item["id"].split(".", 1)[1].split("@")[0] for item in body["items"]})

    def call_path(self, prefix: str, name: str) -> str:
        return f"{prefix}/tools/call"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        ident = tool_id(tool, settings) if isinstance(tool, Tool) else \
            f"{sanitize(OxpSettings.of(settings).toolkit or default_toolkit(settings.server_name))}.{sanitize(tool)}"
        return {"request": {"tool_id": ident, "input": arguments}}

    def read(self, status: int, body: Any) -> Observation:
        if status == 200 and isinstance(body, dict):
            result = body.get("result") or {}
            if result.get("success"):
                return Observation("ok", [result.get("value")])
            message = str((result.get("error") or {}).get("message", ""))
            return Observation(failed_kind(message), message=message)
        message = message_of(body, "message")
        if status == 400:
            return Observation("unknown" if message.startswith("Tool not found") else "malformed", message=message)
        return Observation("invalid" if status == 422 else status_kind(status), message=message)


DIALECT = Dialect(
    name=NAME, make_blueprint=make_blueprint, default_prefix="/oxp", error_response=error_response,
    protocol=Protocol("Open eXecution Protocol", ("1.0",)), driver=OxpDriver(),
    target=OXP,
    authenticator=authenticator, tool_key=id_parts, cors_headers=("OXP-API-Key",),
    export_document=lambda pipe, root: export_document(pipe),
    security_warning=security_warning, lint_tool=lint_tool, openapi_paths=openapi_paths, settings=OxpSettings,
)
