"""Dialect ``explorer``: an MCP-shaped JSON API (F2, F3, F4, F7) and the embedded explorer page
(F1, F6), served from package templates and static files.

``GET /`` page, ``GET /tools``, ``GET /tools/<name>``, ``POST /tools/<name>/call`` (only when
``TOOLDISCOVERY_ALLOW_EXECUTE`` is true; the auth hook wraps reading the body and the call) and
``POST /tools/<name>/validate``; the prompts a developer can try (:mod:`.prompts`). The auth hook
(F4) is the identity source of this dialect asked around each call
(:class:`~flask_tooldiscovery.identity.sources.AuthHookVerifier`): the pipeline asks it once the
tool is found (403 and 404 come first, as F3 orders them) and its refusal is the pipeline's 401,
as any other source's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, current_app, render_template, request
from flask.json.provider import DefaultJSONProvider
from marshmallow import fields
from werkzeug.exceptions import RequestEntityTooLarge

from ...errors import CoreError, Forbidden, MalformedBody, MethodNotAllowed, PayloadTooLarge, Unauthorized
from ...identity.sources import Authenticator
from ...serving.openapi import arguments_body, body_required, openapi_post
from ...serving.pipeline import Pipeline
from ...serving.wire import JSON_MIMETYPE, QUOTE, WireSchema, json_response
from ...settings import DialectSettings, Settings, parse_bool, setting
from ...tools.results import Outcome, is_rich
from .. import Dialect, Protocol
from ..content_blocks import LATEST, PLAIN_VALUES, content_blocks, json_text
from . import prompts
from .driver import ExplorerDriver
from .live_calls import add_routes
from .stream import stream_response, wants_stream
from .ui_preview import add_routes as add_ui_preview
from .ui_preview import frame_url, interface, visibility, with_url

NAME = "explorer"
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; media-src 'self' blob:; style-src 'self'; "
                               "script-src 'self'; connect-src 'self'; frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
}


@dataclass(frozen=True)
class ExplorerSettings(DialectSettings):
    """The explorer's own keys (its title is the core's ``TOOLDISCOVERY_TITLE``)."""

    allow_execute: bool = setting("ALLOW_EXECUTE", False, parse_bool, "Let the explorer run tools.")


class ToolSummarySchema(WireSchema):
    """F2 summary: ``annotations`` omitted when the tool has none, never null."""

    name = fields.String(required=True)
    description = fields.Function(lambda tool: tool.description or "")
    annotations = fields.Function(lambda tool: dict(tool.annotations) if tool.annotations else None)
    visibility = fields.Function(visibility)  # ["app"]: only a tool UI calls it


class ToolDetailSchema(ToolSummarySchema):
    """F2 detail: the summary plus ``inputSchema`` (and ``outputSchema`` when the tool has one), and
    ``ui`` when the tool has an interface (the page previews it; the detail route adds ``ui.url``,
    where to frame it from: :func:`.ui_preview.frame_url`)."""

    inputSchema = fields.Function(lambda tool: tool.input_schema or {"type": "object"})
    outputSchema = fields.Function(lambda tool: tool.output_schema or None)
    ui = fields.Function(interface)


class CallResultSchema(WireSchema):
    """F3 result, MCP-shaped."""

    content = fields.List(fields.Dict())
    structuredContent = fields.Raw()
    isError = fields.Boolean(required=True)
    errors = fields.List(fields.Dict())
    _meta = fields.Dict(data_key="_meta")


_SUMMARY = ToolSummarySchema()
_DETAIL = ToolDetailSchema()
_RESULT = CallResultSchema()


def export_document(pipe: Pipeline) -> list[dict[str, Any]]:
    """Every tool in F2's detail form."""
    return [pipe.dump("detail", t, _DETAIL.dump) for t in pipe.tools().latest()]


def error_response(exc: CoreError) -> tuple[Any, int]:
    """The explorer's error shape: ``{"error": message}``."""
    if isinstance(exc, MalformedBody):
        return {"error": f"Invalid JSON: {exc.detail}"}, exc.status
    if isinstance(exc, PayloadTooLarge):  # the words the explorer has always used
        return {"error": RequestEntityTooLarge.description}, exc.status
    if isinstance(exc, Unauthorized):  # F3's words, whichever identity source refused
        return {"error": "Unauthorized"}, exc.status
    return {"error": exc.message, **exc.extra}, exc.status  # a 428 carries code, approval_state, prompt


def security_warning(settings: Settings, authenticator: Authenticator | None) -> str | None:
    """Why this dialect would run tools for anyone, or ``None``."""
    if ExplorerSettings.of(settings).allow_execute and authenticator is None:
        return ("explorer runs tools for anyone (TOOLDISCOVERY_ALLOW_EXECUTE is on and no auth hook "
                "is set): set one with @discovery.auth_hook")
    return None


#: The body of the core's refusals (:func:`error_response`; a 428 adds ``code``, ``approval_state``, ``prompt``).
ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
#: F3's call result (:func:`_result`): content blocks, ``isError``, the argument ``errors`` when invalid.
RESULT_SCHEMA = {"type": "object", "required": ["content", "isError"], "properties": {
    "content": {"type": "array", "items": {"type": "object"}}, "structuredContent": {}, "isError": {"type": "boolean"},
    "errors": {"type": "array", "items": {"type": "object"}}, "_meta": {"type": "object"}}}
#: Other methods get Flask's own 405 (its page, ``Allow``): these routes are not method-guarded.
_FLASK_405 = {"description": "Not a method this route takes (Flask's own answer)."}
#: What the validate route takes: any JSON value, whose faults as the tool's arguments it reports (a 200).
_ANY_ARGUMENTS = {"description": "The arguments to check, as the call route would take them."}
#: F7's answer (the validate route).
VALIDATION_SCHEMA = {"type": "object", "required": ["valid"], "properties": {
    "valid": {"type": "boolean"}, "errors": {"type": "array", "items": {"type": "object"}}}}


def _content(schema: dict[str, Any]) -> dict[str, Any]:
    return {JSON_MIMETYPE: {"schema": schema}}


def openapi_paths(pipe: Pipeline) -> dict[str, Any]:
    """OpenAPI path items of the per-tool call and validate endpoints."""
    paths: dict[str, Any] = {}
    for tool in pipe.tools().latest():
        operation, required = tool.name.replace("/", "_"), body_required(tool.resolved_input_schema)
        schema = arguments_body(tool.resolved_input_schema)
        paths[f"{pipe.prefix}/tools/{tool.name}/call"] = openapi_post(
            pipe, [tool], operation_id=f"explorer_call_{operation}", tags=[NAME],
            summary=(tool.description or tool.name).split("\n")[0], schema=schema, required=required,
            error_schema=ERROR_SCHEMA, responses={
                "200": {"description": "content, structuredContent, isError", "content": _content(RESULT_SCHEMA)},
                "400": {"description": "Malformed JSON, or invalid arguments (`errors`)",
                        "content": _content({"anyOf": [ERROR_SCHEMA, RESULT_SCHEMA]})},
                "403": "Execution disabled, or an origin not allowed", "404": "Unknown tool", "405": _FLASK_405,
                "500": {"description": "The tool failed (`isError`)", "content": _content(RESULT_SCHEMA)}})
        paths[f"{pipe.prefix}/tools/{tool.name}/validate"] = openapi_post(
            pipe, [tool], operation_id=f"explorer_validate_{operation}", tags=[NAME], summary="Validate arguments",
            schema=_ANY_ARGUMENTS, required=False, error_schema=ERROR_SCHEMA, reach="lookup", responses={
                "200": {"description": "valid, errors", "content": _content(VALIDATION_SCHEMA)},
                "400": {"description": "Malformed JSON (`valid: false`)",
                        "content": _content({"anyOf": [ERROR_SCHEMA, VALIDATION_SCHEMA]})},
                "404": "Unknown tool", "405": _FLASK_405})
    return paths


def _arguments(body: Any) -> Any:
    """The arguments a body carries: an empty body means ``{}`` (a JSON ``null`` stays ``None``)."""
    return {} if body is None and not request.content_length else body


def success_body(value: Any, meta: dict[str, Any] | None) -> dict[str, Any]:
    """F3's body for a tool's ``value``: what :class:`CallResultSchema` dumps (content blocks, the
    value as ``structuredContent`` unless rich, ``isError``, ``_meta``), built straight, as every
    successful call answers it (tests compare the two)."""
    kind = type(value)
    if kind in PLAIN_VALUES:  # never a rich result: one text block (the JSON of anything but a string)
        body: dict[str, Any] = {"content": [{"type": "text", "text": value if kind is str else json_text(value)}]}
        if kind is dict:
            body["structuredContent"] = value
    else:
        body = {"content": content_blocks(value, LATEST)}
        if isinstance(value, (dict, list)) and not is_rich(value):  # images, audio...: content blocks only
            body["structuredContent"] = value
    body["isError"] = False
    if meta is not None:
        body["_meta"] = dict(meta)
    return body


def _result(outcome: Outcome, trace_id: str | None) -> Response:
    """F3: the outcome, MCP-shaped; 400 for invalid arguments, 500 when the tool failed (a not-found
    too: F3's 404 is an unknown tool)."""
    if outcome.ok:
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        text = _plain_text(outcome.value, trace_id, app.json)
        if text is not None:
            return app.response_class(text, content_type=JSON_MIMETYPE)  # type: ignore[no-any-return]
        body = success_body(outcome.value, None)
        if trace_id:
            body["_meta"] = {"_trace_id": trace_id}
        return json_response(body)
    meta = {"_trace_id": trace_id} if trace_id else None
    invalid = outcome.status == "invalid"
    return json_response(_RESULT.dump({
        "content": [{"type": "text", "text": outcome.error_message}], "isError": True, "_meta": meta,
        "errors": [e.as_dict() for e in outcome.errors] if invalid else None}), 400 if invalid else 500)


def _plain_text(value: Any, trace_id: str | None, provider: Any) -> str | None:
    """The text ``json_response`` writes of a dict ``value``'s body (:func:`success_body`, the trace
    id as ``_meta``) with the value's JSON written once, not twice (its text block, then again as
    ``structuredContent``: about 3% of an explorer call, timed side by side); ``None`` unless the
    bytes are the same. Flask's default provider writes with the separators ``": "`` and ``", "``
    (:func:`.wire.json_encoder`), as the text block does; with ``ensure_ascii`` (its default) it
    escapes what the text block keeps as it is (``json_text`` writes ``ensure_ascii=False``):
    anything past ASCII, and DEL. Only such a text is written again for ``structuredContent``."""
    if type(value) is not dict or type(provider) is not DefaultJSONProvider:
        return None
    text = json_text(value)
    if provider.ensure_ascii and not (text.isascii() and "\x7f" not in text):
        return None
    quote = QUOTE[bool(provider.ensure_ascii)]  # (as the provider writes a str)
    end = ', "_meta": {"_trace_id": ' + quote(trace_id) + "}}" if trace_id else "}"
    return "".join(('{"content": [{"type": "text", "text": ', quote(text), '}], "structuredContent": ', text,
                    ', "isError": false', end))


def _limit(given: str | None) -> object:
    """A search's ``limit`` query parameter: its integer (the core checks its range), ``None`` (the
    default) when absent, else the text as given (refused by the core as not an integer)."""
    if given is None:
        return None
    return int(given) if given.lstrip("-").isdigit() and len(given) < 10 else given


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The explorer blueprint: the page, its static files and the F2/F3/F7 API."""
    bp = pipe.blueprint(__name__, template_folder="../../templates", static_folder="../../static",
                        static_url_path="/static")
    # No method guards: other methods get Flask's own 405 and OPTIONS its own Allow, as before.
    allow_execute = ExplorerSettings.of(pipe.settings).allow_execute
    page_settings = {"title": pipe.settings.title or "Tool Explorer", "allow_execute": allow_execute}

    @bp.app_template_filter("tooldiscovery_page")
    def page_filter(config: Any) -> dict[str, Any]:
        """``{% set page = config|tooldiscovery_page %}``: the page's title and allow_execute flag; put
        ``page.title`` in HTML (autoescaped) and ``page|tojson`` in a script (``tojson`` escapes ``<``)."""
        return dict(page_settings)

    @pipe.route("/", "page", ["GET"], endpoint="page", guard_methods=False)
    def page() -> Response:
        response = current_app.make_response(render_template("tooldiscovery/explorer.html"))
        response.headers.update(PAGE_HEADERS)
        return response

    add_ui_preview(pipe, bp)

    @pipe.route("/tools", "discovery", ["GET"], endpoint="list_tools", guard_methods=False)
    def list_tools() -> Response:
        if "q" in request.args:  # a search: the best first (never cached as the list, nor learned)
            found = pipe.search(request.args["q"], _limit(request.args.get("limit")))
            return json_response([pipe.dump("summary", t, _SUMMARY.dump) for t in found])
        return pipe.send(pipe.document("list", lambda toolset: [
            pipe.dump("summary", t, _SUMMARY.dump) for t in toolset.latest()]))

    @pipe.route("/tools/<path:name>", "discovery", ["GET"], endpoint="tool_detail", guard_methods=False)
    def tool_detail(name: str) -> Response:
        base, _, action = name.rpartition("/")
        if action in ("call", "validate") and pipe.tools().get(name) is None and pipe.tools().get(base) is not None:
            raise MethodNotAllowed(["OPTIONS", "POST"])  # a GET of a tool's call or validate route
        tool = pipe.find(name)
        url, shared = frame_url(pipe, tool)  # where the page frames the tool's UI from (ui.url)

        def detail(_: object = None) -> dict[str, Any]:
            return with_url(pipe.dump("detail", tool, _DETAIL.dump), url)

        if not shared:  # a grant for this caller, good for minutes: neither cached nor learned
            return json_response(detail(), headers={"Cache-Control": "no-store"})
        return pipe.send(pipe.document(("detail", name, url), detail))

    @pipe.route("/tools/<path:name>/validate", "call", ["POST"], endpoint="validate", guard_methods=False)
    def validate(name: str) -> Response:
        tool = pipe.find(name)
        try:
            arguments = _arguments(pipe.body())
        except MalformedBody as exc:
            return json_response({"valid": False, "errors": [
                {"path": "", "message": f"Invalid JSON: {exc.detail}", "keyword": "format"}]}, 400)
        errors = pipe.argument_errors(tool, arguments, load=False, max_errors=pipe.settings.max_validation_errors)
        if not errors:
            return json_response({"valid": True})
        return json_response({"valid": False, "errors": [e.as_dict() for e in errors]})

    @pipe.route("/tools/<path:name>/call", "call", ["POST"], endpoint="call", guard_methods=False)
    def call(name: str) -> Response:
        if not allow_execute:
            raise Forbidden("Tool execution is disabled.")
        tool = pipe.find(name)
        context = pipe.context()
        # Accept: text/event-stream: progress and log lines live (read off the request itself, not Flask's proxy)
        if wants_stream(context.request or request):
            return stream_response(pipe, tool, context, lambda: _arguments(pipe.body()),
                                   lambda outcome: _result(outcome, context.trace_id), error_response)
        # The body is read once the caller is admitted: the auth hook's 401 comes before its 400.
        if pipe.admission.around_call is None:
            outcome = pipe.invoke(tool, _arguments(pipe.body()), context)
        else:
            outcome = pipe.admitted(lambda: pipe.invoke(tool, _arguments(pipe.body()), context))
        return _result(outcome, context.trace_id)

    if allow_execute:
        add_routes(pipe)
    prompts.add_routes(pipe, allow_execute)  # GET /prompts, POST /prompts/<name>/get and /complete
    return bp


DIALECT = Dialect(
    name=NAME, make_blueprint=make_blueprint, default_prefix="/explorer", error_response=error_response,
    protocol=Protocol("Tool explorer: JSON API and page"), driver=ExplorerDriver(),
    export_document=lambda pipe, root: export_document(pipe), security_warning=security_warning,
    openapi_paths=openapi_paths,
    runs_tools=lambda settings: ExplorerSettings.of(settings).allow_execute, takes_auth_hook=True,
    settings=ExplorerSettings, lists_app_tools=True,
)
