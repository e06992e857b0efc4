"""Every route's way in, once for all dialects: the orchestration of the serving layer.

A :class:`Pipeline` belongs to one mount of a dialect on one app: the dialect's full mount, or a
toolset's (only the tools with one of its tags, at ``<prefix>/x/<name>``). Its blueprint runs each request
through: guard (host, origin, content type, body size, trace id: :mod:`.guard`) -> identity
(:mod:`~flask_tooldiscovery.identity.sources`) -> JSON body (:mod:`.body`) -> tool set (a failing provider becomes
:class:`~flask_tooldiscovery.errors.Unavailable`) -> invoke (within the rate limit, in a call
slot, between the signals, approved when it must be) -> :class:`~flask_tooldiscovery.runtime.invoke.Outcome`.
Discovery routes go guard -> identity -> cached bytes with an ``ETag`` (:mod:`.cache`), which the
fast path may learn (:mod:`.fastpath`). Any :class:`~flask_tooldiscovery.errors.CoreError` raised
on the way is answered by the dialect's one ``error_response``; its views only translate wire shapes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from flask import Blueprint, Response, current_app, has_request_context, request
from werkzeug.exceptions import HTTPException

from ..calls.approvals import Approval, Approvals, carried_approval
from ..calls.approvals import ApprovalGate as ApprovalGate
from ..errors import CoreError, Forbidden, MisdirectedRequest, Unauthorized, Unavailable, from_http
from ..errors import UnknownTool as UnknownTool
from ..identity.csrf import exempt_from_csrf
from ..identity.sources import Authenticator, Identity
from ..observe.logs import log
from ..runtime.call_log import log_call
from ..runtime.invoke import Failure, Outcome, check_arguments, prepare
from ..runtime.invoke import invoke as run
from ..search.indexes import DEFAULT_LIMIT
from ..settings_parsers import Toolset
from ..tools.model import CLAIMED_USER_ID, Tool, ToolContext
from ..tools.providers import ProviderError
from ..tools.registry import ToolSet
from . import request_state
from .admission import Admission
from .body import has_body, json_body
from .cache import Document, WireCache
from .core import Core, Translator
from .cors import Cors
from .fastpath import Learner, credential_keys, listening
from .guard import RouteKind, new_call_id, well_formed_trace_id
from .operations import observe_call, unobserved
from .request_state import ACTIVE
from .routes import Routes
from .wire import JSON_MIMETYPE, dumps, json_response

#: No identity given (:meth:`Pipeline._visible` reads the request's).
UNKNOWN = object()


class Pipeline:
    """One mount of a dialect on one app (its full mount, or a toolset's): its credentials, caches
    and the request path its views use."""

    def __init__(self, core: Core, dialect: Translator, authenticator: Authenticator | None = None,
                 mounted: dict[str, Pipeline] | None = None, *, toolset: Toolset | None = None,
                 prefix: str | None = None, toolsets: Mapping[str, Mapping[str, Pipeline]] | None = None,
                 read_only: bool = False) -> None:
        self.core = core
        self.dialect = dialect
        self.name = dialect.name
        self.settings = core.settings
        self.cache = WireCache()
        #: The toolset this mount serves (only its tools, at a URL of its own), or ``None``: every tool.
        self.toolset = toolset
        #: This mount serves only the tools annotated ``readOnlyHint`` (a ``<mount>/readonly``).
        self.read_only = read_only
        #: Request headers that narrow a request's tools further, by their WSGI keys, and how
        #: (``(tool set, environ) -> narrower set``): set by a dialect that reads such headers
        #: (MCP's ``X-MCP-Toolsets``); a request without any of them is not narrowed.
        self.chosen_by: tuple[str, ...] = ()
        self.choose: Callable[[ToolSet, Any], ToolSet] | None = None
        self.prefix = prefix if prefix is not None else core.settings.prefixes.get(dialect.name, dialect.default_prefix)
        #: Its blueprint's name: ``tooldiscovery_<dialect>``, and ``__x_<toolset>`` after it for a toolset's.
        self.blueprint_name = (f"tooldiscovery_{self.name}" + (f"__x_{toolset.name}" if toolset is not None else "")
                               + ("__readonly" if read_only else ""))
        #: The pipelines of every toolset's mounts, by toolset then dialect (shared by the app's pipelines).
        self.toolsets: Mapping[str, Mapping[str, Pipeline]] = toolsets if toolsets is not None else {}
        #: The credentials this dialect's routes need: its own, and the identity layer's.
        self.authenticator = authenticator
        self.admission = Admission(core.guard, authenticator)
        #: Guard and identify a request to a route of a kind; run a call once its caller is admitted.
        self.admit, self.admitted = self.admission.admit, self.admission.admitted
        self.cors = Cors(core.guard, public_discovery=dialect.public_discovery, cors_headers=dialect.cors_headers,
                         exposed_headers=dialect.exposed_headers)
        self.learner = Learner(core.registry, dialect.learnable, credential_keys=credential_keys(authenticator),
                               public_discovery=dialect.public_discovery,
                               max_content_length=core.settings.max_content_length, narrow=self._served)
        self.routes = Routes(self.prefix)
        #: Whether a call needs a person's approval, decided once per call (:meth:`Approvals.gate`).
        self.approvals = Approvals(core.settings)
        #: What an anonymous caller's lists show, with the static tool set it was worked out from.
        self._shown: tuple[ToolSet, ToolSet] | None = None
        #: Every dialect mounted on the app, by name (this one included): one table they share (a
        #: toolset's mounts share one of their own).
        self.mounted: dict[str, Pipeline] = mounted if mounted is not None else {}
        self.mounted.setdefault(self.name, self)

    # -- blueprint and routes ---------------------------------------------------------------

    def blueprint(self, import_name: str, *, suffix: str = "", **options: Any) -> Blueprint:
        """The dialect's blueprint (``suffix``: a second one, e.g. mounted at the root), with the
        core's guard, error mapping and response headers; routes are then added with :meth:`route`.

        Every view of it runs inside :meth:`guarded` (its static files too), which guards, admits,
        maps a :class:`~flask_tooldiscovery.errors.CoreError` to the dialect's error and adds the
        response headers itself: no blueprint hook runs on a request. An error raised outside a
        view (an app's own ``before_request`` aborting, an unhandled exception's 500) is answered
        by the same mapping, with the same headers."""
        bp = exempt_from_csrf(Blueprint(f"{self.blueprint_name}{suffix}", import_name, **options))
        bp.register_error_handler(CoreError, lambda exc: self._finish_error(self.error_response(exc)))
        bp.register_error_handler(HTTPException, lambda exc: self._finish_error(self.error_response(from_http(exc))))
        if bp.has_static_folder:  # its files go through the guard and get the headers as any view
            bp.send_static_file = self.guarded(bp.send_static_file, "page", admit=False,  # type: ignore[method-assign]
                                               methods={"GET"})
        self._blueprint = bp
        return bp

    def route(self, rule: str, kind: RouteKind, methods: list[str], *, endpoint: str | None = None,
              guard_methods: bool = True, public: bool = False,
              **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a view of ``kind`` on the blueprint. Other methods on ``rule`` answer a JSON 405
        from the dialect (unless ``guard_methods`` is false). ``public``: any website may read it
        (``Access-Control-Allow-Origin: *``), as metadata documents are."""

        def register(view: Callable[..., Any]) -> Callable[..., Any]:
            self.routes.add(self._blueprint, rule, kind, methods, endpoint or view.__name__, view,
                            lambda answer, kind_of, admit, served, options_too: self.guarded(
                                answer, kind_of, admit=admit, public=public, methods=served, options=options_too),
                            guard_methods=guard_methods, public=public, **options)
            return view

        return register

    def guarded(self, view: Callable[..., Any], kind: RouteKind, *, admit: bool = True, public: bool = False,
                methods: set[str] | None = None, options: bool = False) -> Callable[..., Response]:
        """``view`` as every route of the dialect runs it: the request's state begun, the guard's
        checks (host, size, trace id), the caller admitted to a route of ``kind`` (unless
        ``admit`` is false), a :class:`~flask_tooldiscovery.errors.CoreError` or HTTP error answered
        in the dialect's shape, and the response's headers (:class:`.cors.Cors`: ``public`` and the
        rule's ``methods`` decide its CORS answer). An ``OPTIONS`` the view does not take (not
        ``options``) is answered as Flask would (``Allow``), with the same headers."""
        guard, finish, admission = self.core.guard, self.cors.finish, self.admission
        served: set[str] = set() if methods is None else methods
        kind_of: RouteKind | None = kind

        @functools.wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Response:
            req = request._get_current_object()  # type: ignore[attr-defined]
            state, token = request_state.begin(req)
            try:
                try:
                    state.trace_id = guard.check(req)
                    if req.method == "OPTIONS":
                        rv = view(*args, **kwargs) if options else current_app.make_default_options_response()
                    else:
                        if admit:
                            admission.admit(kind, req, state)
                        rv = view(*args, **kwargs)
                except CoreError as exc:
                    rv = self.error_response(exc)
                except HTTPException as exc:
                    rv = self.error_response(from_http(exc))
                response = rv if isinstance(rv, Response) else current_app.make_response(rv)
                return finish(response, req, state, kind_of, public, served)
            finally:
                request_state.end(token)

        guarded.provide_automatic_options = False  # type: ignore[attr-defined]  # answered above
        return guarded

    def _finish_error(self, response: Response) -> Response:
        """The headers of an error answered outside a view (see :meth:`blueprint`)."""
        req = request._get_current_object()  # type: ignore[attr-defined]
        kind, public, methods = self.routes.of(req)
        return self.cors.finish(response, req, request_state.peek(), kind, public, methods)

    def route_kind(self, endpoint: str) -> RouteKind | None:
        """What the view at ``endpoint`` (``blueprint.view``, as the URL map names it) does, when it
        is a route of this dialect's own blueprint (``None`` for anything else)."""
        blueprint, _, name = endpoint.rpartition(".")
        if blueprint != self.blueprint_name or name.endswith("__405"):
            return None
        return self.routes.kinds.get(name)

    # -- guard and identity -------------------------------------------------------------------

    @property
    def trace_id(self) -> str:
        """This request's trace id (from ``traceparent`` or ``X-Trace-Id``, else generated)."""
        state = ACTIVE.get() or request_state.peek()
        return state.trace_id if state is not None else ""

    @property
    def identity(self) -> Identity | None:
        """The identity :meth:`admit` established for this request."""
        state = ACTIVE.get() or request_state.peek()
        return state.identity if state is not None else None

    # -- body, tools, calls -----------------------------------------------------------------

    def body(self, *, required: bool = False) -> Any:
        """The request body parsed as JSON (``None`` when empty and not ``required``), read once."""
        return json_body(self.settings.max_content_length, required=required)

    def has_body(self) -> bool:
        """True when the request carries a non-empty body."""
        return has_body(self.settings.max_content_length)

    def tools(self) -> ToolSet:
        """The tools in force for this request, as the caller may see them in this dialect's lists;
        a failing provider is logged and answered as :class:`~flask_tooldiscovery.errors.Unavailable`.
        Worked out once per request and caller."""
        state = ACTIVE.get() or request_state.peek()
        if state is None:
            return self._listed(self._visible())
        listed, identity = state.listed, state.identity
        if listed is not None and listed[0] is self and listed[1] is identity:
            return listed[2]
        static, shown = self.core.registry.static, self._shown
        if identity is None and static is not None and shown is not None and shown[0] is static:
            toolset = shown[1]  # no provider, no caller: the set worked out for the last such request
        else:
            toolset = self._listed(self._visible(identity=identity))
            if identity is None and static is not None:
                self._shown = (static, toolset)
        if self.chosen_by:  # the request may narrow it further by headers (never widen it)
            req = state.request
            environ = req.environ if req is not None else request.environ if has_request_context() else {}
            for key in self.chosen_by:
                if key in environ and self.choose is not None:
                    toolset = self.choose(toolset, environ)
                    break
        state.listed = (self, identity, toolset)
        return toolset

    def tools_now(self) -> ToolSet:
        """:meth:`tools` worked out again, for a request that outlives the moment it began (a
        stream: the registry or a provider may have changed since)."""
        state = request_state.peek()
        if state is not None:
            state.listed = state.toolsets = None
        return self.tools()

    def anonymous_tools(self) -> ToolSet | None:
        """The tools this dialect's lists show a caller without credentials, whoever this request's
        caller is (``None`` when its discovery needs credentials: such a caller sees nothing)."""
        return self._listed(self._visible(anonymous=True)) if self.admission.open_discovery else None

    def _listed(self, toolset: ToolSet) -> ToolSet:
        # Tools only an interface calls are left out unless a host between the list and the model
        # hides them (MCP Apps) or a developer reads it (the explorer).
        return toolset if self.dialect.lists_app_tools else toolset.for_model()

    def _visible(self, *, anonymous: bool = False, identity: object = UNKNOWN) -> ToolSet:
        try:
            toolset = self.core.tools()
        except ProviderError:
            log.exception("flask-tooldiscovery: a tools provider failed (trace_id=%s)", self.trace_id)
            raise Unavailable() from None
        state = None if anonymous else ACTIVE.get() or request_state.peek()
        if state is None and not anonymous and not has_request_context():
            # Asked by no request and no caller's call (flask tools list or search without --as): the
            # operator sees every tool. A request state without an identity is a caller without
            # credentials, in a request or not (a task's call, flask tools export).
            return self._narrow(toolset)
        caller = None if state is None else state.identity if identity is UNKNOWN else identity
        return self._narrow(toolset.visible_to(caller))  # type: ignore[arg-type]

    def _narrow(self, toolset: ToolSet) -> ToolSet:
        """``toolset`` as this mount serves it: the tools of its toolset, or all of them (only
        those that read, for a read-only mount)."""
        if self.toolset is not None:
            toolset = toolset.tagged(self.toolset.tags)
        return toolset.read_only() if self.read_only else toolset

    def _served(self, toolset: ToolSet, environ: Mapping[str, Any]) -> ToolSet | None:
        """``toolset`` as this mount lists it to a request of ``environ`` (as :meth:`tools` works it
        out: less what only an interface calls, narrowed by the request's headers too): what a
        learned answer must still be built from; ``None`` when the headers are refused (an unknown
        toolset)."""
        toolset = self._listed(self._narrow(toolset))
        if self.choose is not None and any(key in environ for key in self.chosen_by):
            try:
                return self.choose(toolset, environ)
            except CoreError:
                return None
        return toolset

    def find(self, name: str) -> Tool:
        """The latest version of tool ``name`` (one only an interface calls too: unlisted, still
        callable), or :class:`~flask_tooldiscovery.errors.UnknownTool`."""
        tool = self.tools().get(name)
        if tool is None and not self.dialect.lists_app_tools:
            tool = self._visible().get(name)
        if tool is None:
            raise UnknownTool(name)
        return tool

    def search(self, query: object, limit: object = None, *, for_model: bool = False) -> list[Tool]:
        """The tools of this request's set (what the caller may see; ``for_model``: less those only an
        interface calls) that best match ``query``, best first, at most ``limit`` (``None``: five);
        :class:`~flask_tooldiscovery.errors.BadRequest` saying why when the query or limit cannot be searched."""
        toolset = self.tools().for_model() if for_model else self.tools()
        return [tool for name in self.search_names(toolset, query, limit) if (tool := toolset.get(name)) is not None]

    def search_names(self, toolset: ToolSet, query: object, limit: object = None) -> list[str]:
        """The names of the tools :meth:`search` finds in ``toolset`` (this request's set or a view of it)."""
        return self.core.search_indexes.search(toolset, query, DEFAULT_LIMIT if limit is None else limit)

    def index(self, what: str, key: Callable[[Tool], Hashable]) -> dict[Hashable, list[Tool]]:
        """Tools by a dialect's own id (``key``), every version lowest first; built once per tool set."""
        return self.cache.index(what, self.tools(), key)

    def dump(self, what: str, tool: Tool, build: Callable[[Tool], Any]) -> Any:
        """A tool's wire translation, computed once per tool content (shared: never mutate it)."""
        return self.cache.dump(what, tool, build)

    def context(self, **fields: Any) -> ToolContext:
        """A :class:`ToolContext` for a call arriving now: call id generated unless given, trace
        id from the request unless given.

        ``user_id`` is what the request's body says (Opal's ``auth.credentials.user_id``, OXP's
        ``context.user_id``): it is kept as ``extra["claimed_user_id"]``, and it is the context's
        ``user_id`` only when no credential named the caller. Once the identity layer did (a
        verified token's ``sub``, the identity hook), its subject is ``user_id``: a body cannot
        rename an authenticated caller. A call carried from its request (a task) keeps the claim
        its ``extra`` holds."""
        state = ACTIVE.get() or request_state.current()
        identity = state.identity
        trace_id = fields.pop("trace_id", None)
        if trace_id is not None and well_formed_trace_id(trace_id):  # a body's, checked as the header's is
            state.trace_id = trace_id
        else:
            trace_id = state.trace_id or None
        claimed = fields.pop("user_id", None)
        if claimed is not None:
            fields["extra"] = {CLAIMED_USER_ID: claimed, **(fields.get("extra") or {})}
        named = identity.subject if identity is not None else None
        return ToolContext(fields.pop("call_id", None) or new_call_id(), self.name, trace_id,
                           claimed if named is None else named, request=state.request, identity=identity, **fields)

    def invoke(self, tool: Tool, arguments: Any, context: ToolContext, *, coerce: bool | None = None,
               approval: Approval | None = None, gate: ApprovalGate | None = None, charged: bool = False) -> Outcome:
        """Run ``tool`` within the caller's rate limit (unless ``charged``: counted already), in one
        of the worker's call slots, between the call signals, inside its span and counted in the
        metrics.

        A tool that needs a person's approval (``gate``: the call's approval as decided already,
        else :attr:`approvals` decides now) runs only with an ``approval`` of this very call
        (:mod:`~flask_tooldiscovery.calls.approvals`; without ``approval``, the one the call's
        request carries in ``X-Tool-Approval``, as the request state holds it): without one,
        :class:`~flask_tooldiscovery.errors.ApprovalRequired` carries the sealed request
        to send back; a declined one ends the call unrun. The approval is spent once declined, or
        once the call holds its slot: refused before (rate limit, busy), it stays good."""
        settings, core = self.settings, self.core
        if self.admission.around_call is not None:
            self.admission.refuse_unadmitted()
        state = ACTIVE.get() or request_state.peek()
        origin = state.request if state is not None else None  # the request the call came on (the caller's facts)
        gate = gate if gate is not None and gate.tool is tool else self.approvals.gate(tool)
        # Approved as the tool will receive them (coerced, loaded); invalid ones are answered unrun.
        checked = gate.check(arguments, context, approval if approval is not None else carried_approval(origin),
                             coerce=coerce) if gate.required else None
        if checked is not None and not checked.approved:
            checked.spend()  # declined: it cannot come back approved
            return Outcome(tool=tool, call_id=context.call_id, status="failure",
                           failure=Failure(message="The call was not approved, so the tool did not run."))

        slots, ops = core.slots, core.operations
        if unobserved(ops, tool, not charged):  # run here, without observe_call and a function made per call
            started = time.perf_counter()
            try:
                slots.take()
                try:
                    if checked is not None:
                        checked.spend()
                    return run(tool, arguments, context, coerce=settings.coerce_arguments if coerce is None else coerce,
                               call_handler=core.call_handler, logger=log, max_errors=settings.max_validation_errors,
                               default_timeout=settings.default_timeout)
                finally:
                    slots.free()
            except CoreError as exc:
                log_call(tool, context, "refused", (time.perf_counter() - started) * 1000.0, status=exc.status)
                raise

        def call() -> Outcome:
            slots.take()
            try:
                if checked is not None:
                    checked.spend()  # about to run: once, whoever sends it again
                return run(tool, arguments, context, coerce=settings.coerce_arguments if coerce is None else coerce,
                           call_handler=core.call_handler, logger=log, max_errors=settings.max_validation_errors,
                           default_timeout=settings.default_timeout)  # as Core.call runs it
            finally:
                slots.free()

        return observe_call(ops, self.name, state.identity if state is not None else None, tool, context,
                            call, check_limits=not charged, origin=origin)

    @staticmethod
    def argument_errors(tool: Tool, arguments: Any, *, coerce: bool = False, load: bool = True,
                        max_errors: int | None = None) -> Sequence[Any]:
        """How ``arguments`` fail the checks a call of ``tool`` makes before it runs, without running
        it (empty: it would run; each an ``ArgumentError``): strings coerced first when ``coerce``,
        the input schema checked, then (``load``) the arguments loaded into the Python values the
        function declared. Without ``load``, only the input schema is checked (``None`` is no object)."""
        if not load:
            return check_arguments(tool, arguments, current_app.logger, max_errors=max_errors)
        return prepare(tool, arguments, coerce=coerce, max_errors=max_errors)[1]

    @property
    def awaits_admission(self) -> bool:
        """True while this request's caller waits for the identity source asked around the call."""
        return self.admission.awaits()

    # -- discovery ----------------------------------------------------------------------------

    def document(self, key: Hashable, build: Callable[[ToolSet], Any], toolset: ToolSet | None = None, *,
                 media_type: Callable[[ToolSet], str] | None = None) -> Document:
        """The serialized document ``build(toolset)`` for this request's tool set, built once;
        ``media_type(toolset)``: the type :meth:`send` answers it as (default JSON)."""
        own = self.tools()
        toolset = own if toolset is None else toolset

        def serialize() -> Document:
            text: str = dumps(build(toolset))
            return Document.of(text.encode("utf-8"), media_type(toolset) if media_type else JSON_MIMETYPE)

        document = self.cache.document(key, toolset, serialize)
        if toolset is own:  # this request's own tool set: the fast path may learn the answer
            request_state.current().document = (document, toolset)
        return document

    def send(self, document: Document, headers: dict[str, str] | None = None) -> Response:
        """``document`` as a response of its media type with its ``ETag``; ``304`` when the client has it."""
        response = current_app.response_class(document.body, mimetype=document.mimetype)
        for name, value in (headers or {}).items():
            response.headers[name] = value
        response.headers["ETag"] = document.etag
        if request.if_none_match.contains(document.etag.strip('"')):
            response.status_code = 304
            response.set_data(b"")
            response.headers.pop("Content-Type", None)
        if listening():
            state, req = request_state.current(), request._get_current_object()  # type: ignore[attr-defined]
            built = state.document
            if (built is not None and built[0] is document and req.method == "GET" and not state.headers
                    and state.identity is None and self.routes.kind(req) == "discovery"):
                self.learner.offer_get(req.environ, document, built[1])
        return response

    def remember_post(self, toolset: ToolSet, render: Callable[[Any], bytes]) -> None:
        """Offer this POST's answer, ``render(fill)``, to the fast path: a discovery read by POST
        (MCP's ``tools/list``) whose answer depends only on the body's shape (the dialect's
        ``learnable.post``); learned only when nothing else in the request could change it."""
        if request.method != "POST":
            return
        state = request_state.current()
        if state.headers or state.identity is not None:
            return
        self.learner.offer_post(request.environ, state.raw, toolset, render)

    # -- responses -----------------------------------------------------------------------------

    def error_response(self, exc: CoreError) -> Response:
        """``exc`` in the dialect's error shape (its one mapping), with the error's headers."""
        if exc.reason:
            level = 30 if isinstance(exc, (Unauthorized, Forbidden, MisdirectedRequest)) else 20
            log.log(level, "flask-tooldiscovery: %s %s %s refused: %s (trace_id=%s)",
                    self.name, request.method, request.path, exc.reason, self.trace_id)
        body, status = self.dialect.error_response(exc)
        response = json_response(body, status)
        for name, value in exc.headers.items():
            response.headers[name] = value
        return response

    @staticmethod
    def add_headers(headers: Mapping[str, str]) -> None:
        """Headers for this request's response, whatever view builds it (``Retry-After``...)."""
        state = request_state.current()
        state.headers = {**(state.headers or {}), **headers}


__all__ = ["ApprovalGate", "Pipeline", "UnknownTool"]
