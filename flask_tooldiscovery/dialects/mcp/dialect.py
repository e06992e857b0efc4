"""Dialect ``mcp``: the Model Context Protocol over streamable HTTP, stateless (no session: any
worker answers any request). One endpoint; ``POST`` carries JSON-RPC 2.0, answered with one JSON
body (202 for notifications). Both eras (:mod:`.revisions`) are served: the handshake era
(``initialize``) and the stateless era (``server/discover``, the per-request ``_meta`` envelope,
routing headers)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from flask import Blueprint, Response, current_app, has_request_context, request
from flask.json.provider import DefaultJSONProvider
from marshmallow import fields

from ...errors import CoreError, MalformedBody, RetryLater, Unavailable
from ...lint import chatgpt, claude_directory
from ...lint.protocols import MCP
from ...observe.logs import log
from ...serving import wire
from ...serving.body import json_body, peek_json
from ...serving.fastpath import Learnable
from ...serving.openapi import openapi_post
from ...serving.pipeline import Pipeline, UnknownTool
from ...serving.root import Root
from ...serving.wire import JSON_MIMETYPE, WireSchema, json_response, page_cursor, read_cursor
from ...tools.model import Tool
from ...tools.questions import declared
from ...tools.registry import ToolSet
from .. import Dialect, Protocol
from . import approval as mcp_approval
from . import (
    apps,
    choice,
    completion,
    param_headers,
    prompts,
    resources,
    revisions,
    skills,
    stream_task,
    subscriptions,
    task_questions,
    tool_search,
)
from . import input_requests as mcp_input
from . import jsonrpc as rpc
from . import stream as mcp_stream
from . import task_methods as mcp_tasks
from .auth import authenticator, authorization, remote_auth, root_blueprint, security_warning
from .content import object_output_schema, plain_reply, plain_result
from .driver import McpDriver
from .envelope import STATELESS_STATUS, UNREFUSED_VERSIONS, header_refusal, is_stateless, stateless_refusal
from .request import NO_META, Handler, McpRequest
from .sessions import headers as session_headers
from .settings import McpSettings

NAME = "mcp"
#: Every revision served (:data:`.revisions.SUPPORTED`).
ALL_VERSIONS = revisions.SUPPORTED
TRANSPORT = "streamable-http"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
def list_shape(raw: bytes) -> tuple[str, Any] | None:
    """:func:`.jsonrpc.shape` of a ``tools/list`` request; any other body (a ``tools/call``...)
    is told apart by a substring test before anything is parsed."""
    return rpc.shape(raw) if b"tools/list" in raw else None


class McpToolSchema(WireSchema):
    """A registry :class:`Tool` dumped as an MCP ``Tool``."""

    name = fields.String(required=True)
    title = fields.Function(lambda tool: tool.title or (tool.annotations or {}).get("title"))
    description = fields.String()
    inputSchema = fields.Function(lambda tool: {**(tool.input_schema or {}), "type": "object"}
                                  if "type" not in (tool.input_schema or {}) else tool.input_schema)
    outputSchema = fields.Function(lambda tool: object_output_schema(tool)[0])
    annotations = fields.Function(lambda tool: dict(tool.annotations) if tool.annotations else None)
    icons = fields.Function(lambda tool: [dict(i) for i in tool.metadata.get("icons") or ()] or None)
    _meta = fields.Function(apps.tool_meta, data_key="_meta")  # MCP Apps: the tool's interface


_TOOL = McpToolSchema()


def export_document(pipe: Pipeline) -> dict[str, Any]:
    """What ``tools/list`` answers, unpaginated."""
    return {"tools": [pipe.dump(NAME, t, _TOOL.dump) for t in pipe.tools().latest()]}


def to_rpc(exc: CoreError) -> rpc.RpcError:
    """A core error met while running one JSON-RPC method, as that message's error."""
    if isinstance(exc, UnknownTool):
        return rpc.RpcError(rpc.INVALID_PARAMS, f"Unknown tool: {exc.name}")
    if isinstance(exc, Unavailable):
        return rpc.RpcError(rpc.INTERNAL_ERROR, exc.message)
    return rpc.RpcError(rpc.INVALID_REQUEST, exc.message)


def error_response(exc: CoreError) -> tuple[Any, int]:
    """A transport-level refusal as a JSON-RPC error with no id; a 429 (another extension's rate
    limit, e.g. Flask-Limiter's) under the refused request's id when its body can be read
    (:func:`refused_id`), so that the client can match it to its request and retry it."""
    if isinstance(exc, MalformedBody):
        return rpc.error_body(None, rpc.PARSE_ERROR, f"Parse error: {exc.detail}"), 400
    if exc.status == 405:
        exc.headers["Allow"] = "POST, OPTIONS"
    message = {401: "Unauthorized.", 413: "Request body too large.",
               405: "Method Not Allowed: POST JSON-RPC messages to this endpoint."}.get(exc.status)
    error = rpc.RpcError(rpc.INVALID_REQUEST, message) if message else to_rpc(exc)
    return rpc.error_body(refused_id() if exc.status == 429 else None, error.code, error.message), exc.status


#: The largest body not read yet that a refusal reads to answer under the request's own id.
REFUSED_BODY_READ = 65536


def refused_id() -> Any:
    """The id of the JSON-RPC request being refused before its body was read (by another
    extension's ``before_request``: Flask-Limiter's 429), when the body is one JSON-RPC request of
    at most :data:`REFUSED_BODY_READ` bytes; else ``None``, JSON-RPC's id of an answer whose
    request's id cannot be told (a batch has several)."""
    if not has_request_context():
        return None
    message = peek_json(REFUSED_BODY_READ)
    ident = message.get("id") if isinstance(message, dict) else None
    return ident if rpc.valid_id(ident) else None


#: A JSON-RPC error with no id, as :func:`error_response` answers a refusal of the transport.
ERROR_SCHEMA = {"type": "object", "required": ["jsonrpc", "error"], "properties": {
    "jsonrpc": {"const": "2.0"}, "id": {}, "error": {"type": "object", "required": ["code", "message"], "properties": {
        "code": {"type": "integer"}, "message": {"type": "string"}, "data": {}}}}}


def openapi_paths(pipe: Pipeline) -> dict[str, Any]:
    """The OpenAPI path item of the JSON-RPC endpoint: what happens once the body is read (an
    unknown tool, a busy server, an approval...) is answered inside JSON-RPC."""
    message = {"type": "object", "required": ["jsonrpc", "method"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]}, "method": {"type": "string"},
        "params": {"description": "An object (null: none); anything else is answered by a JSON-RPC error."}}}
    # A batch (revisions that have them): each member is answered on its own, an invalid one by an error in the batch.
    schema = {"anyOf": [message, {"type": "array", "minItems": 1, "maxItems": McpSettings.of(pipe.settings).max_batch}]}
    return {pipe.prefix or "/": openapi_post(
        pipe, (), operation_id="mcp_jsonrpc", tags=["mcp"], schema=schema, error_schema=ERROR_SCHEMA,
        summary="MCP JSON-RPC over streamable HTTP (tools/list, tools/call, ...)", reach="body", responses={
            "200": "A JSON-RPC response.", "202": "A notification or response was accepted.",
            "400": "Not JSON, not a JSON-RPC request, or (stateless era) a request the protocol refuses.",
            "404": "(stateless era) An unknown method."})}


def plain(tool: Tool) -> bool:
    """Whether a call of ``tool`` may be run as a plain call when its request asks nothing more
    (:func:`make_blueprint`'s ``call_tool``): a sync tool without a ``ToolContext`` (nothing it
    could log, ask, or be stopped by), never a task, asking no questions first. Worked out once
    per tool content."""
    derived = tool._derived  # (emptied when a shown field of the tool is assigned)
    verdict: bool | None = derived.get(_PLAIN)
    if verdict is None:
        verdict = derived[_PLAIN] = (not tool.is_async and not tool.context_params
                                     and not tool.metadata.get("long_running")
                                     and mcp_tasks.support(tool) == "forbidden" and not declared(tool.metadata))
    return verdict


#: The key of a tool's :func:`plain` verdict in what it works out once from its content (``Tool._derived``).
_PLAIN = "mcp.plain"


def respond(reply: Any, status: int = 200) -> Response:
    """A JSON-RPC reply (or batch) as the response; pre-encoded results go in as they are."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    if type(reply) is dict and type(reply.get("result")) is dict:  # the usual reply: nothing spliced in
        body = wire.dumps(reply, app.json).encode("utf-8")
    else:  # a plain call's dict result written once, or a result spliced in (Encoded), or a batch
        provider = app.json
        body = plain_reply(reply, provider) or rpc.encode(reply, partial(wire.dumps, provider=provider),
                                                          type(provider) is DefaultJSONProvider)
    response: Response = app.response_class(body, status=status, content_type=JSON_MIMETYPE)
    return response


def server_capabilities(pipe: Pipeline) -> dict[str, Any]:
    """What this server offers (``initialize``, ``server/discover``, the manifest)."""
    settings, core = pipe.settings, pipe.core
    return subscriptions.capabilities(settings, skills.capabilities(pipe, apps.capabilities(pipe, {  # + tool UIs
        "tools": {"listChanged": False}, "logging": {}, **resources.capability(settings),
        **prompts.capability(core.prompts), **completion.capability(settings, core.prompts, core.resources)})))


def manifest_section(pipe: Pipeline, root: Root, entry: Mapping[str, Any], about: Mapping[str, Any]) -> dict[str, Any]:
    """The discovery manifest's ``mcp`` entry: the endpoint, its transport, versions and capabilities,
    the documents about it (the Server Card), how a client narrows what it sees (:func:`.choice.manifest`)
    and, with OAuth, where clients get access tokens."""
    section = {"url": entry["url"], "transport": TRANSPORT, "protocolVersions": list(ALL_VERSIONS),
               "capabilities": {**server_capabilities(pipe), "tasks": mcp_tasks.HANDSHAKE_CAPABILITY}, **about,
               **choice.manifest(pipe, entry["url"])}
    oauth = authorization(pipe.settings, root)
    return {**section, "authorization": oauth} if oauth else section


def make_blueprint(pipe: Pipeline) -> Blueprint:
    """The MCP blueprint: one streamable-HTTP endpoint."""
    bp = pipe.blueprint(__name__)
    settings, options = pipe.settings, McpSettings.of(pipe.settings)
    searching = settings.tool_search is not None  # the search tools may answer (tool_search.active)
    chosen_by = choice.install(pipe)  # X-MCP-Toolsets, X-MCP-Readonly: a request narrows what it sees
    narrowing = choice.KEYS
    server_info = {"name": settings.server_name, "version": settings.server_version, "title": settings.server_title,
                   **({"icons": [dict(i) for i in settings.server_icons]} if settings.server_icons else {})}

    def with_instructions(result: dict[str, Any]) -> dict[str, Any]:
        description = settings.instructions or settings.server_description
        return {**result, "instructions": description} if description else result

    def initialize(req: McpRequest) -> dict[str, Any]:
        params, requested = req.params, req.params.get("protocolVersion")
        if not isinstance(requested, str):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "initialize needs params.protocolVersion (a string).")
        version = requested if requested in revisions.HANDSHAKE_REVISIONS else revisions.LATEST_HANDSHAKE
        capabilities = server_capabilities(pipe)
        offered = {**capabilities, "tasks": mcp_tasks.HANDSHAKE_CAPABILITY} if revisions.has_tasks(version) \
            else capabilities
        pipe.add_headers(session_headers(params))  # names what the client declared it can be asked
        return with_instructions({"protocolVersion": version, "capabilities": offered, "serverInfo": server_info})

    def discover(req: McpRequest) -> dict[str, Any]:
        capabilities = server_capabilities(pipe)
        offered = {**capabilities, "extensions": {**capabilities.get("extensions", {}), mcp_tasks.EXTENSION: {}}}
        return with_instructions({"supportedVersions": list(ALL_VERSIONS), "capabilities": offered})

    def list_tools(req: McpRequest) -> rpc.Encoded:
        """One page, encoded once per (visible tool set, page, era) in the pipeline's cache."""
        toolset, params = pipe.tools(), req.params
        size, stateless, ui = options.page_size, req.stateless, apps.shows_ui(req)
        if tool_search.active(pipe, toolset):  # the search tools instead of every tool
            tools = tool_search.listed(toolset, ui)
        else:  # the tools only an interface calls to an MCP Apps host only (apps.reaches)
            tools = (toolset if ui else toolset.for_model()).latest()
        try:
            start = read_cursor(params["cursor"], len(tools)) if params.get("cursor") is not None else 0
        except ValueError:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "Invalid cursor.") from None

        def page() -> bytes:
            result: dict[str, Any] = {"tools": [shown(t, stateless, ui) for t in tools[start:start + size]]}
            if start + size < len(tools):
                result["nextCursor"] = page_cursor(start + size)
            return wire.dumps(complete("tools/list", result, stateless)).encode("utf-8")

        data = pipe.cache.document(("tools/list", start, stateless, ui), toolset, page).body
        if isinstance(pipe.body(), dict):  # one request, not a batch: the same again (the same headers
            learn(toolset, data)  # narrowing it alike, Learner checks) may skip Flask
        return rpc.Encoded(data)

    def shown(tool: Tool, stateless: bool, ui: bool) -> dict[str, Any]:
        """A tool as ``tools/list`` shows it; with ``execution.taskSupport`` to handshake-era clients,
        its interface (``_meta.ui``) to clients that declared MCP Apps."""
        entry, support = pipe.dump(NAME, tool, _TOOL.dump), mcp_tasks.support(tool)
        entry = entry if ui else apps.without_ui(entry)
        return entry if stateless or support == "forbidden" else {**entry, "execution": {"taskSupport": support}}

    def learn(toolset: ToolSet, data: bytes) -> None:
        """Let the core's fast path answer this very ``tools/list`` again (any id) with these bytes
        in the envelope this dialect writes (by Flask's own JSON provider, usable outside a request)."""
        provider = current_app.json
        if type(provider) is DefaultJSONProvider:
            pipe.remember_post(toolset, rpc.result_splice(data, lambda v: wire.dumps(v, provider)))

    def found(req: McpRequest) -> bool:
        """A ``tools/call``'s tool and approval, looked for once, before the call runs (``req.tool``,
        ``req.gate``: the stream's plan and the call take them from there), and whether it is a plain
        call (``req.plain``, returned): a :func:`plain` tool, no approval needed, not a task, no
        ``requestState``, progress token or log level (nothing to stream), in the handshake era.
        ``search_tools`` asking nothing more (no ``_meta``) is answered at once too (by :func:`call_tool`)."""
        name = req.params.get("name")
        try:
            tool = pipe.tools().get(name) if isinstance(name, str) else None
        except CoreError:
            return False  # the call answers it
        if tool is None:
            return searching and name == tool_search.SEARCH and not req.stateless and req.meta is NO_META \
                and "task" not in req.params and "requestState" not in req.params  # else the call answers it
        if "visibility" in tool.metadata and not apps.reaches(req, tool):
            return False  # the call answers it (one only an app calls, to a client without Apps)
        req.tool = tool
        req.gate = gate = pipe.approvals.gate(tool)
        params, meta = req.params, req.meta
        if gate.required or req.stateless or "task" in params or "requestState" in params or (
                meta is not NO_META and (mcp_stream.PROGRESS_TOKEN_META_KEY in meta
                                         or mcp_stream.LOG_LEVEL_META_KEY in meta)):
            return False
        verdict: bool | None = tool._derived.get(_PLAIN)  # plain(tool), as it keeps it
        req.plain = verdict = plain(tool) if verdict is None else verdict
        return verdict

    def call_tool(req: McpRequest) -> rpc.Result:
        params, name = req.params, req.params.get("name")
        if not isinstance(name, str) or not name:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "tools/call needs params.name (a string).")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "tools/call params.arguments must be an object.")
        if searching and (searched := searches.answer(req)) is not None:
            return searched
        tool = req.tool
        if tool is None:
            tool = pipe.find(name)
            if not apps.reaches(req, tool):  # only an interface calls it, and this client declared none
                raise UnknownTool(name)
        if req.plain:
            return call_plain(req, arguments)
        meta: dict[str, Any] = req.meta if isinstance(req.meta, dict) else {}
        traceparent = meta.get("traceparent")
        if req.stateless and (mismatch := param_headers.refusal(tool, arguments)) is not None:
            raise mismatch
        context = pipe.context(extra={"meta": meta}, trace_id=traceparent if isinstance(traceparent, str) else None)
        # Whether the call needs a person's approval: decided once (when the call was found, or now).
        gate = req.gate if req.gate is not None and req.gate.tool is tool else pipe.approvals.gate(tool)
        deferred = mcp_tasks.as_task(pipe, gate, arguments, context, req)
        if deferred is not None:  # a task, or the questions it asks first
            return deferred
        forget = mcp_stream.listen(pipe, context, req)  # cancellable from now on; streamed calls start their stream
        record = stream_task.open_record(pipe, tool, arguments, context, req)  # streamed: a task
        result: dict[str, Any] | None = None
        try:
            if req.stateless:  # the tool's own input requests: rounds of InputRequiredResults
                result = mcp_input.call_in_rounds(pipe, gate, arguments, context, req, lambda sent: (
                    mcp_approval.call(pipe, gate, arguments, context, req, sent)))
            else:
                result = mcp_approval.call(pipe, gate, arguments, context, req)
        except RetryLater as exc:
            result = retry_later(exc)
        finally:
            forget()  # the call is over: nothing left to cancel
            stream_task.close_record(record, context, result)
        return result

    def call_plain(req: McpRequest, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """A plain call (:func:`found`): no approval, task, question or stream, nothing a cancellation
        could stop (a sync tool without a ToolContext): run at once, with nothing to record or listen for."""
        meta: dict[str, Any] = req.meta if isinstance(req.meta, dict) else {}
        traceparent = meta.get("traceparent")
        context = pipe.context(extra={"meta": meta}, trace_id=traceparent if isinstance(traceparent, str) else None)
        try:
            return plain_result(pipe.invoke(req.tool, arguments or {}, context, gate=req.gate),  # type: ignore[arg-type]
                                req.revision)
        except RetryLater as exc:
            return retry_later(exc)

    def retry_later(exc: RetryLater) -> dict[str, Any]:
        """Busy, rate limited: a result the model can act on, and ``Retry-After``."""
        pipe.add_headers(exc.headers)
        return {"content": [{"type": "text", "text": f"{exc.message} Retry in {exc.retry_after} s."}],
                "isError": True, "_meta": {"retryAfterMs": exc.retry_after_ms}}

    searches = tool_search.Searches(pipe, shown, lambda result, stateless: complete("tools/call", result, stateless))
    methods: dict[str, Handler] = {"initialize": initialize, "ping": lambda req: {}, "server/discover": discover,
                                   "tools/list": list_tools, "tools/call": call_tool,
                                   **skills.methods(pipe, apps.methods(pipe, resources.methods(pipe))),
                                   **prompts.methods(pipe), **completion.methods(pipe),
                                   **mcp_tasks.methods(pipe, task_questions.relay),
                                   **subscriptions.methods(pipe, lambda: server_capabilities(pipe)),
                                   "logging/setLevel": mcp_stream.set_level}

    def complete(method: str, result: dict[str, Any], stateless: bool) -> dict[str, Any]:
        """``result`` with what the stateless era adds to every result (``stateless``)."""
        if stateless:
            result = dict(result)
            result.setdefault("resultType", "complete")
            if method in ("tools/list", "server/discover", *resources.METHODS):
                result.setdefault("ttlMs", 0)
                result.setdefault("cacheScope", "private")
            result["_meta"] = {**(result.get("_meta") or {}), SERVER_INFO_META_KEY: server_info}
        return result

    def run(req: McpRequest) -> rpc.Result:
        refusal = stateless_refusal(req.method, req.params, req.called_as) if req.stateless else None
        if refusal is not None:
            raise refusal
        handler = methods.get(req.method)
        if handler is None:
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"Method not found: {req.method}")
        try:
            result = handler(req)
        except CoreError as exc:
            raise to_rpc(exc) from None
        if req.stateless and not isinstance(result, rpc.Encoded):
            return complete(req.method, result, True)
        return result

    def answer_plain(req: McpRequest) -> dict[str, Any]:
        """The reply to a plain call (:func:`found`: handshake era, nothing to refuse or complete), as
        :func:`.jsonrpc.answer` answers :func:`run` of it (errors as :func:`to_rpc` and :func:`failed` say)."""
        try:
            try:
                arguments = req.params.get("arguments")  # (tool search may answer it; call_tool refuses a wrong one)
                result = call_tool(req) if searching or not (arguments is None or type(arguments) is dict) \
                    else call_plain(req, arguments)
                return {"jsonrpc": "2.0", "id": req.id, "result": result}
            except CoreError as exc:
                raise to_rpc(exc) from None
        except Exception as exc:  # an RpcError as it is, any other as failed() says
            error = exc if isinstance(exc, rpc.RpcError) else failed("tools/call", exc)
            return rpc.error_body(req.id, error.code, error.message, error.data)

    def read(method: str, params: dict[str, Any]) -> rpc.Result:
        """A method of a batch's message (read here, as :func:`.jsonrpc.dispatch` hands it)."""
        req = McpRequest.of(method, params)
        if searching:  # call_tool (tool search): read as the call it makes, before anything else reads it
            req = tool_search.rewrite(pipe, req)
        if method == "tools/call":
            found(req)
        return run(req)

    def failed(method: str, exc: Exception) -> rpc.RpcError:
        log.error("mcp: %s failed (trace_id=%s)", method, pipe.trace_id, exc_info=(type(exc), exc, exc.__traceback__))
        return rpc.RpcError(rpc.INTERNAL_ERROR, "Internal error.")

    @pipe.route("", "call", subscriptions.http_methods(settings), endpoint="endpoint", strict_slashes=False)
    def endpoint() -> Response:
        http = request._get_current_object()  # type: ignore[attr-defined]
        environ = http.environ
        narrowed = narrowing[0] in environ or narrowing[1] in environ
        if http.method == "GET":
            if narrowed and (wrong := choice.refusal(chosen_by, environ, None)) is not None:
                return json_response(wrong, 400)
            return subscriptions.get_stream(pipe, server_capabilities(pipe))
        payload = json_body(settings.max_content_length)  # (pipe.body())
        if payload is None:
            raise MalformedBody("Expecting value (line 1, column 1).")
        if (environ.get("HTTP_MCP_PROTOCOL_VERSION") not in UNREFUSED_VERSIONS or "HTTP_MCP_METHOD" in environ
                or "HTTP_MCP_NAME" in environ) and (refused := header_refusal(payload)) is not None:
            return json_response(*refused)
        if narrowed and (wrong := choice.refusal(chosen_by, environ, payload)) is not None:
            return json_response(wrong, 400)  # an unknown toolset: said before anything is read or run
        if isinstance(payload, list):  # a batch: revisions that have them only, and bounded
            version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
            if not payload:
                return json_response(rpc.error_body(None, rpc.INVALID_REQUEST, "Invalid Request: empty batch."), 400)
            refusal = (f"batches are not part of protocol version {version}"
                       if version is not None and not revisions.has_batches(version)
                       else f"a batch holds at most {options.max_batch} messages"
                       if len(payload) > options.max_batch else None)
            if refusal:
                return json_response(rpc.error_body(None, rpc.INVALID_REQUEST, f"Invalid Request: {refusal}."), 400)
            answers = [a for a in (rpc.dispatch(m, read, failed) for m in payload) if a is not None]
            return respond(answers) if answers else Response(status=202)
        req = McpRequest.of_message(payload, environ)  # the request, read once here
        if req is None:  # a notification, a client's response, a message that is no request
            mcp_stream.receive(pipe, payload)
            reply: Any = rpc.dispatch(payload, read, failed)
        else:
            if searching:  # call_tool (tool search): read as the call it makes, before anything else reads it
                req = tool_search.rewrite(pipe, req)
            if req.method == "tools/call" and found(req):  # a plain call: run at once, nothing to stream
                if "error" not in (reply := answer_plain(req)):
                    return respond(reply)
            else:
                plan = mcp_stream.plan(pipe, req)
                reply = rpc.answer(req.id, req.method, partial(run, req), failed) if plan is None else \
                    mcp_stream.streamed(pipe, req, plan, partial(rpc.answer, req.id, req.method, partial(run, req),
                                                                 failed))
                if req.method == subscriptions.LISTEN:
                    reply = subscriptions.listening(pipe, reply)  # its stream
        if not isinstance(reply, dict):  # a notification (202), or the SSE stream of a call or of a listen
            return reply or Response(status=202)
        error = reply.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        status = 200 if code is None else STATELESS_STATUS.get(code, 200) if is_stateless(payload) \
            else 400 if code == rpc.INVALID_REQUEST else 200
        return respond(reply, status)

    return bp


DIALECT = Dialect(
    name=NAME, make_blueprint=make_blueprint, default_prefix="/mcp", error_response=error_response,
    protocol=Protocol("Model Context Protocol, streamable HTTP", ALL_VERSIONS, transport=TRANSPORT),
    driver=McpDriver(), target=MCP,
    more_targets=(claude_directory.target(remote_auth), chatgpt.target(remote_auth)), authenticator=authenticator,
    cors_headers=("MCP-Protocol-Version", "Mcp-Session-Id", "Last-Event-ID", "Mcp-Method", "Mcp-Name", "Mcp-Param-*",
                  choice.TOOLSETS_HEADER, choice.READONLY_HEADER),
    exposed_headers=("Mcp-Session-Id",), security_warning=security_warning, openapi_paths=openapi_paths,
    root_blueprint=root_blueprint, manifest_section=manifest_section, settings=McpSettings,
    learnable=Learnable(post=list_shape), lists_app_tools=True,
    export_document=lambda pipe, root: export_document(pipe),
    read_only_suffix=choice.READONLY_SUFFIX,
    card_headers=lambda pipe, toolset: choice.card_headers(pipe, toolsets=not toolset),
)
