"""Every route's way in, once for all dialects.

A :class:`Pipeline` belongs to one dialect mounted on one app. Its blueprint runs each request
through: guard (host, origin, content type, body size, trace id) -> identity -> JSON body ->
tool set (a failing provider becomes :class:`~.errors.Unavailable`) -> invoke (bounded by the
worker's call slots) -> :class:`~.invoke.Outcome`. Discovery routes go guard -> identity ->
cached bytes with an ``ETag``. Any :class:`~.errors.CoreError` raised on the way is answered by
the dialect's one ``error_response``; the dialect's views only translate wire shapes.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Request, Response, current_app, g, has_request_context, request
from flask import signals as flask_signals
from flask.blueprints import BlueprintSetupState
from flask.sessions import SecureCookieSessionInterface
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.sansio.utils import host_is_trusted

from ..calls.approvals import APPROVAL_HEADER, Approval, ApprovalRequired, Sealer, needs_approval, prompt_for
from ..errors import (
    BadRequest,
    Busy,
    CoreError,
    Forbidden,
    MethodNotAllowed,
    MisdirectedRequest,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from ..observe.logs import log
from ..observe.operations import observe_call
from ..settings import Settings, host_allow_list
from ..tools.invoke import Failure, Outcome
from ..tools.model import Identity, Tool, ToolContext
from ..tools.providers import ProviderError
from ..tools.registry import ToolSet
from .cache import MAX_LEARNED_BODY, Document, Environ, FastDiscovery, PostLesson, Shape, WireCache, content_length
from .identity import Authenticator, AuthError
from .wire import JSON_MIMETYPE, dumps, json_response, parse_json

if TYPE_CHECKING:  # pragma: no cover
    from ..dialects import Dialect
    from ..extension import ToolDiscovery

T = TypeVar("T")

#: What a route does: list tools (discovery), run one (call), report liveness (health), or
#: serve the explorer's page and files (page).
RouteKind = Literal["discovery", "call", "health", "page"]

#: Request headers every dialect's browser clients may send (a dialect adds its own).
CORS_REQUEST_HEADERS = ("Authorization", "Content-Type", "Accept", "X-Trace-Id", "traceparent", "tracestate",
                        APPROVAL_HEADER)
#: Response headers of the core's own that browser clients may read (a dialect adds its own).
CORS_EXPOSED_HEADERS = ("WWW-Authenticate", "X-Trace-Id", "Retry-After", "ETag")

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_TRACE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
#: Flask signals sent around every request: a receiver makes every request go through Flask.
_REQUEST_SIGNALS = (flask_signals.request_started, flask_signals.request_finished,
                    flask_signals.request_tearing_down, flask_signals.appcontext_pushed,
                    flask_signals.appcontext_popped, flask_signals.appcontext_tearing_down)


def new_trace_id() -> str:
    """A new trace id: 32 random lower-case hex digits, the W3C ``traceparent`` trace-id form."""
    return os.urandom(16).hex()


def new_call_id() -> str:
    """A new call id: a random (version 4) UUID in its usual text form."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def trace_id_of(traceparent: str, given: str) -> str:
    """The trace id of a request with these ``traceparent`` and ``X-Trace-Id`` headers (the
    ``traceparent``'s, else the given one when well formed, else a new one)."""
    match = _TRACEPARENT.match(traceparent.strip().lower())
    if match:
        return match.group(1)
    given = given.strip()
    return given if _TRACE_ID.match(given) else new_trace_id()


def _environ_trace_id(environ: Environ) -> str:
    traceparent, given = environ.get("HTTP_TRACEPARENT"), environ.get("HTTP_X_TRACE_ID")
    if traceparent is None and given is None:
        return new_trace_id()
    return trace_id_of(traceparent or "", given or "")


class MalformedBody(BadRequest):
    """The body is not JSON (or nests too deep, or holds a non-finite number).

    ``detail`` is the parser's own sentence; dialects word the message their own way.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(f"Malformed JSON: {detail}")
        self.detail = detail


class UnknownTool(NotFound):
    """No tool of that name (or id) is visible to the caller."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Tool not found: {name}")
        self.name = name


class Slots:
    """How many tool calls may run at once in this worker process (0: no limit).

    Over the limit a call is refused at once with :class:`~.errors.Busy`, so discovery and
    health always find a free thread while slow tools run.
    """

    def __init__(self, limit: int, retry_after: float) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self._lock = threading.Lock()  # a count under a lock: never waits, unlike a semaphore's condition
        self._held = 0

    def hold(self) -> _Held:
        """Hold one slot for the ``with`` block. Its value is a hand-off: a call that leaves a
        timed-out tool running calls it and gets the function that frees the slot later."""
        return _Held(self)

    def take(self) -> None:
        """Take a slot, or :class:`~.errors.Busy` when none is free."""
        if self.limit:
            with self._lock:
                if self._held >= self.limit:
                    raise Busy(retry_after=self.retry_after)
                self._held += 1

    def free(self) -> None:
        """Give a slot back."""
        if self.limit:
            with self._lock:
                self._held -= 1


class _Held:
    """One held call slot (:meth:`Slots.hold`): taken on entry, freed on exit unless handed off
    (then by the function the hand-off returned, once)."""

    __slots__ = ("_handed_off", "_slots")

    def __init__(self, slots: Slots) -> None:
        self._slots = slots
        self._handed_off = False

    def __enter__(self) -> Callable[[], Callable[[], None]]:
        self._slots.take()
        return self._hand_off

    def _hand_off(self) -> Callable[[], None]:
        self._handed_off = True
        freed = threading.Lock()
        slots = self._slots

        def free() -> None:
            if freed.acquire(blocking=False):
                slots.free()

        return free

    def __exit__(self, *exc: object) -> None:
        if not self._handed_off:
            self._slots.free()


@dataclass(frozen=True)
class AppState:
    """What ``init_app`` built for one app: its settings, call slots and mounted pipelines."""

    settings: Settings
    slots: Slots
    pipelines: dict[str, Pipeline]


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an origin, lower-cased, default ports dropped; ``None`` when it
    is not a plain origin (user info, a path, an unknown scheme, ``null``)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username is not None \
            or parts.password is not None or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or (parts.scheme, port) in (("http", 80), ("https", 443)):
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


class Pipeline:
    """One dialect of one app: its settings, credentials, caches and the request path its views use."""

    def __init__(self, ext: ToolDiscovery, dialect: Dialect, settings: Settings, slots: Slots,
                 trusted_hosts: Any = None, authenticator: Authenticator | None = None) -> None:
        self.ext = ext
        self.dialect = dialect
        self.name = dialect.name
        self.settings = settings
        self.slots = slots
        self.cache = WireCache()
        self.prefix = settings.prefixes.get(dialect.name, dialect.default_prefix)
        #: The credentials this dialect's routes need: its own, and the identity layer's.
        self.authenticator: Authenticator | None = authenticator if authenticator is not None else (
            dialect.authenticator(settings) if dialect.authenticator is not None else None)
        self.hosts = host_allow_list(settings, trusted_hosts)
        self._host_verdicts: dict[str, bool] = {}
        allowed = settings.allowed_origins
        self.any_origin = "*" in allowed
        self.origins = frozenset(o for o in (origin_of(a) for a in allowed if a != "*") if o)
        self._kinds: dict[str, RouteKind] = {}
        self._methods: dict[str, set[str]] = {}
        self._public: set[str] = set()
        #: The WSGI environ keys of every credential this dialect reads on discovery, or ``None``
        #: when that cannot be told from headers (an identity hook reads what it likes).
        self._credential_keys: tuple[str, ...] | None = self._credentials_read(self.authenticator)
        #: The authenticator when one of its sources is asked around the call (see :meth:`admitted`).
        self._around_call = self.authenticator if self.authenticator and self.authenticator.asks_around_call else None

    @staticmethod
    def _credentials_read(auth: Authenticator | None) -> tuple[str, ...] | None:
        if auth is None:
            return ()
        return None if auth.protect_discovery else auth.reads

    # -- blueprint and routes ---------------------------------------------------------------

    def blueprint(self, import_name: str, *, suffix: str = "", **options: Any) -> Blueprint:
        """The dialect's blueprint (``suffix``: a second one, e.g. mounted at the root), with the
        core's guard, error mapping and response headers; routes are then added with :meth:`route`."""
        bp = Blueprint(f"tooldiscovery_{self.name}{suffix}", import_name, **options)
        bp.before_request(self._before)
        bp.after_request(self._after)
        bp.register_error_handler(CoreError, self.error_response)
        bp.register_error_handler(HTTPException, self._http_error)
        bp.record_once(self._install_fast_path)
        self._blueprint = bp
        return bp

    @staticmethod
    def _install_fast_path(state: BlueprintSetupState) -> None:
        """Put :class:`~.cache.FastDiscovery` in front of the app, once, while nothing else wraps
        its ``wsgi_app`` yet (middleware applied before, such as ProxyFix, changes what a request
        means: then every request goes through Flask)."""
        app = state.app
        if not isinstance(app, Flask) or "tooldiscovery.fast" in app.extensions:
            return
        inner = app.wsgi_app
        pristine = getattr(inner, "__func__", None) is type(app).wsgi_app and getattr(inner, "__self__", None) is app
        fast = FastDiscovery(inner) if pristine else None
        app.extensions["tooldiscovery.fast"] = fast
        if fast is not None:
            app.wsgi_app = fast  # type: ignore[method-assign]

    def route(self, rule: str, kind: RouteKind, methods: list[str], *, endpoint: str | None = None,
              guard_methods: bool = True, public: bool = False,
              **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a view of ``kind`` on the blueprint. Other methods on ``rule`` answer a JSON 405
        from the dialect (unless ``guard_methods`` is false). ``public``: any website may read it
        (``Access-Control-Allow-Origin: *``), as metadata documents are."""

        def register(view: Callable[..., Any]) -> Callable[..., Any]:
            name = endpoint or view.__name__

            @functools.wraps(view)
            def guarded(**kwargs: Any) -> Any:
                req = request._get_current_object()  # type: ignore[attr-defined]
                if req.method != "OPTIONS":
                    self.admit(kind, req)
                return view(**kwargs)

            self._blueprint.add_url_rule(rule, endpoint=name, view_func=guarded, methods=methods, **options)
            self._kinds[name] = kind
            if public:
                self._public.add(name)
            self._methods.setdefault(rule, set()).update(m.upper() for m in methods)
            if guard_methods:
                self._method_guard(rule, methods, name, kind)
            return view

        return register

    def route_kind(self, endpoint: str) -> RouteKind | None:
        """What the view at ``endpoint`` (``blueprint.view``, as the URL map names it) does, when it
        is a route of this dialect's own blueprint (``None`` for anything else: a root blueprint's
        routes, method guards)."""
        blueprint, _, name = endpoint.rpartition(".")
        if blueprint != f"tooldiscovery_{self.name}" or name.endswith("__405"):
            return None
        return self._kinds.get(name)

    def _method_guard(self, rule: str, methods: list[str], endpoint: str, kind: RouteKind) -> None:
        allowed = {m.upper() for m in methods} | {"OPTIONS"}
        if "GET" in allowed:
            allowed.add("HEAD")
        allow = sorted(allowed)
        others = [m for m in ("GET", "POST", "PUT", "PATCH", "DELETE") if m not in allow]
        if not others:
            return

        def not_allowed(**_: Any) -> Response:
            raise MethodNotAllowed(allow, "The method is not allowed for the requested URL.")

        self._blueprint.add_url_rule(rule, endpoint=f"{endpoint}__405", view_func=not_allowed, methods=others)
        self._kinds[f"{endpoint}__405"] = kind

    # -- the guard ---------------------------------------------------------------------------

    def _before(self) -> None:
        """Every request of the blueprint: body size limit, trace id, host allow-list."""
        req = request._get_current_object()  # type: ignore[attr-defined]
        limit = self.settings.max_content_length
        req.max_content_length = limit
        g._tooldiscovery_trace_id = _environ_trace_id(req.environ)
        if self.hosts is not None:
            host = req.host
            if not self._host_allowed(host):
                raise MisdirectedRequest(reason=f"host {host!r} is not allowed")
        if (content_length(req.environ) or 0) > limit:
            raise PayloadTooLarge()

    def _host_allowed(self, host: str) -> bool:
        """``host`` is on the allow-list (verdicts remembered per host text; a flood of new
        names only empties the memory)."""
        verdicts = self._host_verdicts
        verdict = verdicts.get(host)
        if verdict is None:
            if len(verdicts) >= 256:
                verdicts.clear()
            verdict = verdicts[host] = host_is_trusted(host, self.hosts)
        return verdict

    @property
    def trace_id(self) -> str:
        """This request's trace id (from ``traceparent`` or ``X-Trace-Id``, else generated)."""
        return str(g.get("_tooldiscovery_trace_id") or "")

    def origin_allowed(self, origin: str) -> bool:
        """True for the page's own origin (the host is already allowed) and the listed ones."""
        if self.any_origin:
            return True
        parsed = origin_of(origin)
        if parsed is None:
            return False
        return parsed in self.origins or parsed == origin_of(f"{request.scheme}://{request.host}")

    def admit(self, kind: RouteKind, req: Request | None = None) -> Identity | None:
        """Guard and identify a request (``req``, else the current one) to a route of ``kind``;
        the identity (or ``None``)."""
        if req is None:
            req = request._get_current_object()  # type: ignore[attr-defined]
        if kind == "call":
            environ = req.environ
            origin = environ.get("HTTP_ORIGIN")
            if origin is not None and not self.origin_allowed(origin):
                raise Forbidden("Forbidden: origin not allowed.", reason=f"origin {origin!r} is not allowed")
            if req.method == "POST" and req.mimetype != JSON_MIMETYPE:
                empty = not content_length(environ) and "HTTP_TRANSFER_ENCODING" not in environ
                if not (empty and not req.mimetype):  # an empty POST with no type at all carries nothing to refuse
                    raise UnsupportedMediaType()
        identity = None
        auth = self.authenticator
        if auth is not None and (kind == "call" or (kind == "discovery" and auth.protect_discovery)):
            try:
                identity = auth.authenticate(req)
            except AuthError as exc:
                if kind != "call" or not auth.asks_around_call:
                    raise Unauthorized(challenge=auth.challenge(req), reason=exc.reason) from None
                g._tooldiscovery_unadmitted = exc.reason  # a source asked around the call decides: admitted()
        elif auth is not None and kind == "discovery":  # open discovery: a caller who says who it is sees its tools
            with contextlib.suppress(AuthError):
                identity = auth.authenticate(req)
        g._tooldiscovery_identity = identity
        return identity

    def admitted(self, run: Callable[[], T]) -> T:
        """``run()`` (which reads the body and runs the call) for an admitted caller: at once when
        :meth:`admit` let the request in, else inside the dialect's identity source asked around
        the call (the explorer's auth hook): its refusal is :class:`~.errors.Unauthorized`, as
        any other source's. A call run without it is refused by :meth:`invoke`."""
        reason = g.get("_tooldiscovery_unadmitted")
        if reason is None or self.authenticator is None:
            return run()
        req = request._get_current_object()  # type: ignore[attr-defined]

        def inside() -> T:
            g._tooldiscovery_unadmitted = None
            return run()

        try:
            return self.authenticator.around(req, inside)
        except AuthError as exc:
            raise Unauthorized(challenge=self.authenticator.challenge(req),
                               reason="; ".join(r for r in (reason, exc.reason) if r)) from None

    @property
    def awaits_admission(self) -> bool:
        """True while this request's caller waits for the identity source asked around the call
        (:meth:`admitted` asks it)."""
        return g.get("_tooldiscovery_unadmitted") is not None

    @property
    def identity(self) -> Identity | None:
        """The identity :meth:`admit` established for this request."""
        identity: Identity | None = g.get("_tooldiscovery_identity")
        return identity

    # -- body, tools, calls -----------------------------------------------------------------

    def body(self, *, required: bool = False) -> Any:
        """The request body parsed as JSON (``None`` when empty and not ``required``), read once
        and never past the size limit, chunked bodies included."""
        state = g._get_current_object()
        cached = getattr(state, "_tooldiscovery_body", _UNREAD)
        if cached is not _UNREAD:
            return cached
        raw = state._tooldiscovery_raw = self._read_body(self.settings.max_content_length)
        if not raw.strip():
            if required:
                raise BadRequest("The request body is empty; a JSON object was expected.")
            value = None
        else:
            try:
                value = parse_json(raw)
            except ValueError as exc:
                raise MalformedBody(str(exc)) from None
        state._tooldiscovery_body = value
        return value

    @staticmethod
    def _read_body(limit: int) -> bytes:
        """At most ``limit`` bytes of body; :class:`PayloadTooLarge` when there are more.

        A chunked body (no Content-Length; the server terminates the stream) is read from the
        server's stream itself, one byte past the limit, so that a body over it is refused whole
        instead of being cut at the limit and run.
        """
        req = request._get_current_object()  # type: ignore[attr-defined]
        environ = req.environ
        length = content_length(environ)
        if length is not None and length <= limit and "stream" not in req.__dict__:
            # The usual case: exactly Content-Length bytes from the server's stream, which is then
            # replaced by the same bytes, so the app can still read the body after us.
            raw = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(raw)
            return raw  # a body cut short is parsed as it came, as werkzeug's stream gives it
        if length is None and environ.get("wsgi.input_terminated"):
            stream, parts, size = environ["wsgi.input"], [], 0
            while size <= limit:
                part = stream.read(limit + 1 - size)
                if not part:
                    break
                parts.append(part)
                size += len(part)
            raw = b"".join(parts)
        else:
            try:
                raw = req.stream.read(limit + 1)
            except RequestEntityTooLarge:
                raise PayloadTooLarge() from None
        if len(raw) > limit:
            raise PayloadTooLarge()
        return raw

    def has_body(self) -> bool:
        """True when the request carries a non-empty body (read and cached by :meth:`body`)."""
        if g.get("_tooldiscovery_body", _UNREAD) is not _UNREAD:
            return g._tooldiscovery_body is not None
        try:
            return self.body() is not None
        except MalformedBody:
            return True

    def tools(self) -> ToolSet:
        """The tools in force for this request; a failing provider is logged and answered as
        :class:`~.errors.Unavailable`."""
        try:
            toolset: ToolSet = self.ext.tools()
        except ProviderError:
            log.exception("flask-tooldiscovery: a tools provider failed (trace_id=%s)", self.trace_id)
            raise Unavailable() from None
        identity = self.identity
        if identity is None and not has_request_context():
            return toolset  # the CLI without --as: every tool
        return toolset.visible_to(identity)

    def find(self, name: str) -> Tool:
        """The latest version of tool ``name``, or :class:`UnknownTool`."""
        tool = self.tools().get(name)
        if tool is None:
            raise UnknownTool(name)
        return tool

    def index(self, what: str, key: Callable[[Tool], Hashable]) -> dict[Hashable, list[Tool]]:
        """Tools by a dialect's own id (``key``), every version lowest first; built once per tool set."""
        return self.cache.index(what, self.tools(), key)

    def dump(self, what: str, tool: Tool, build: Callable[[Tool], Any]) -> Any:
        """A tool's wire translation, computed once per tool (shared: never mutate it)."""
        return self.cache.dump(what, tool, build)

    def context(self, **fields: Any) -> ToolContext:
        """A :class:`ToolContext` for a call arriving now: call id generated unless given, trace
        id from the request unless given, the identity's subject as ``user_id`` unless given."""
        state = g._get_current_object()
        identity = getattr(state, "_tooldiscovery_identity", None)
        if not fields.get("call_id"):
            fields["call_id"] = new_call_id()
        if fields.get("trace_id"):
            state._tooldiscovery_trace_id = fields["trace_id"]
        else:
            fields["trace_id"] = getattr(state, "_tooldiscovery_trace_id", None) or None
        if not fields.get("user_id") and identity is not None:
            fields["user_id"] = identity.subject
        return ToolContext(dialect=self.name, request=request._get_current_object(),  # type: ignore[attr-defined]
                           identity=identity, **fields)

    def invoke(self, tool: Tool, arguments: Any, context: ToolContext, *, coerce: bool | None = None,
               approval: Approval | None = None) -> Outcome:
        """Run ``tool`` within the caller's rate limit (:class:`~.errors.RateLimited`) in one of the
        worker's call slots (:class:`~.errors.Busy` when none is free), between the call signals,
        inside its span and counted in the metrics (:func:`~.observe.observe_call`).

        A tool that needs a person's approval runs only with an ``approval`` of this very call
        (:mod:`~.approvals`): without one, :class:`~.approvals.ApprovalRequired` carries the sealed
        request to send back; a declined one ends the call unrun. Without ``approval``, the one the
        request carries in ``X-Tool-Approval`` (:meth:`approval`) is used."""
        if coerce is None:
            coerce = self.settings.coerce_arguments
        if self._around_call is not None and has_request_context() and self.awaits_admission:
            raise Unauthorized(challenge=self._around_call.challenge(request),
                               reason="the call was not run through the identity source asked around it")
        if needs_approval(tool, destructive=self.settings.approve_destructive):
            subject = context.user_id if context.identity is None else context.identity.subject
            sealer = self.sealer()
            if approval is None:
                approval = self.approval()
            if approval is None:
                raise ApprovalRequired(tool, sealer.seal(tool, arguments, subject, context.call_id),
                                       prompt_for(tool, arguments if isinstance(arguments, dict) else {}))
            sealer.open(approval.state, tool, arguments, subject)
            if not approval.approved:
                return Outcome(tool=tool, call_id=context.call_id, status="failure",
                               failure=Failure(message="The call was not approved, so the tool did not run."))

        def call() -> Outcome:
            with self.slots.hold() as hand_off:
                return self.ext.call(tool, arguments, context, coerce=coerce, hand_off=hand_off,
                                     max_errors=self.settings.max_validation_errors)

        return observe_call(self, tool, context, call)

    def call_as(self, identity: Identity | None, tool: Tool, arguments: Any, *, approval: Approval | None = None,
                call_id: str | None = None) -> Outcome:
        """Run ``tool`` for ``identity`` from outside any request (``flask tools call``): through
        :meth:`invoke` in a request context of its own, so rate limits, call slots, approvals,
        signals, tracing and metrics apply as to a call over HTTP, and refusals raise as there.
        The tool's context has no ``request``."""
        with current_app.test_request_context(self.prefix or "/", method="POST"):
            g._tooldiscovery_identity = identity
            g._tooldiscovery_trace_id = new_trace_id()
            context = self.context(call_id=call_id)
            context.request = None
            return self.invoke(tool, arguments, context, approval=approval)

    def approval(self) -> Approval | None:
        """The approval this request carries: the sealed state a client sends back in the
        ``X-Tool-Approval`` header once the person approved (``None`` without one)."""
        if not has_request_context():
            return None
        state = request.headers.get(APPROVAL_HEADER, "").strip()
        return Approval(state, True) if state else None

    def sealer(self) -> Sealer:
        """Seals approval requests with the app's ``SECRET_KEY`` (and ``SECRET_KEY_FALLBACKS``)."""
        app = current_app
        if not app.secret_key:
            raise Unavailable("This tool needs approval, and approvals are not set up on this server.",
                              reason="approvals need the app's SECRET_KEY")
        fallbacks = app.config.get("SECRET_KEY_FALLBACKS") or ()
        return Sealer(app.secret_key, list(fallbacks), max_age=self.settings.approval_ttl,
                      audience=self.settings.server_name)

    # -- discovery ----------------------------------------------------------------------------

    def document(self, key: Hashable, build: Callable[[ToolSet], Any], toolset: ToolSet | None = None) -> Document:
        """The serialized document ``build(toolset)`` for this request's tool set, built once."""
        own = self.tools()
        toolset = own if toolset is None else toolset

        def serialize() -> bytes:
            text: str = dumps(build(toolset))
            return text.encode("utf-8")

        document = self.cache.document(key, toolset, serialize)
        if toolset is own:  # this request's own tool set: the fast path may learn the answer
            g._tooldiscovery_document = (document, toolset)
        return document

    def send(self, document: Document, headers: dict[str, str] | None = None) -> Response:
        """``document`` as a JSON response with its ``ETag``; ``304`` when the client has it."""
        response = current_app.response_class(document.body, mimetype=JSON_MIMETYPE)
        for name, value in (headers or {}).items():
            response.headers[name] = value
        response.headers["ETag"] = document.etag
        if request.if_none_match.contains(document.etag.strip('"')):
            response.status_code = 304
            response.set_data(b"")
            response.headers.pop("Content-Type", None)
        if FastDiscovery.ENVIRON_KEY in request.environ:
            self._teach(document)
        return response

    # -- the fast path ----------------------------------------------------------------------------

    def _teach(self, document: Document) -> None:
        """Let :class:`~.cache.FastDiscovery` answer this request again without Flask, when nothing
        but the trace id and ``If-None-Match`` could change the answer."""
        built = g.get("_tooldiscovery_document")
        if built is None or built[0] is not document or request.method != "GET" or g.get("_tooldiscovery_headers"):
            return
        if self._kinds.get((request.endpoint or "").rpartition(".")[2]) != "discovery":
            return
        valid = self._learnable(built[1], body=False)
        if valid is not None:
            request.environ[FastDiscovery.ENVIRON_KEY] = (document, valid, _environ_trace_id)

    def remember_post(self, toolset: ToolSet, shape: Shape, render: Callable[[Any], bytes]) -> None:
        """Let :class:`~.cache.FastDiscovery` answer this POST again without Flask: a discovery
        read by POST (MCP's ``tools/list``) whose answer is ``render(fill)``, where ``shape(body)``
        gives the (shape, fill) of a body; learned only when nothing else in the request could
        change the answer (anonymous, no cookie, origin nor extra header, static tool set...)."""
        environ = request.environ
        if FastDiscovery.ENVIRON_KEY not in environ or request.method != "POST" or g.get("_tooldiscovery_headers"):
            return
        raw = g.get("_tooldiscovery_raw")
        shaped = shape(raw) if isinstance(raw, bytes) and len(raw) <= MAX_LEARNED_BODY else None
        valid = self._learnable(toolset, body=True) if shaped is not None else None
        if shaped is not None and valid is not None:
            environ[FastDiscovery.ENVIRON_KEY] = PostLesson(valid, _environ_trace_id, shape, shaped[0], shaped[1],
                                                            render)

    def _learnable(self, toolset: ToolSet, *, body: bool) -> Callable[[Environ], bool] | None:
        """The check that a later request may get this request's answer (same static tool set,
        still a plain request, no request signal receivers), or ``None`` when this one's may not
        be learned at all (a provider or predicate decides the tools, a caller who said who it is,
        an app that runs its own code around requests)."""
        registry = self.ext.registry
        if registry.static is None or toolset.predicated or self.identity is not None:
            return None
        if not self._plain(request.environ, body=body) or not self._plain_app(current_app):
            return None
        fingerprint = toolset.fingerprint
        limit = self.settings.max_content_length

        def valid(environ: Environ) -> bool:
            if not self._plain(environ, body=body) or any(signal.receivers for signal in _REQUEST_SIGNALS):
                return False
            if body and (content_length(environ) or 0) > limit:
                return False  # the full path refuses it (413): so must the learned answer
            static = registry.static
            if static is None:
                return False
            return (static.visible_to(None) if static.restricted else static).fingerprint == fingerprint

        return valid

    def _plain(self, environ: Environ, *, body: bool = False) -> bool:
        """True when a request carries nothing the full path would read: no body (unless ``body``:
        a POST read whose body the lesson's shape accounts for), cookie, credential, nor an
        ``Origin`` (unless discovery answers every origin alike)."""
        keys = self._credential_keys
        return (keys is not None
                and (body or (environ.get("CONTENT_LENGTH") in (None, "", "0")
                              and "HTTP_TRANSFER_ENCODING" not in environ))
                and "HTTP_COOKIE" not in environ
                and ("HTTP_ORIGIN" not in environ or (self.dialect.public_discovery and not body))
                and not any(key in environ for key in keys))

    def _plain_app(self, app: Flask) -> bool:
        """True when the app runs nothing of its own around this blueprint's requests (request
        hooks, URL value preprocessors, signal receivers, a session interface other than Flask's)."""
        name = self._blueprint.name
        for table, ours in ((app.before_request_funcs, [self._before]), (app.after_request_funcs, [self._after]),
                            (app.teardown_request_funcs, []), (app.url_value_preprocessors, [])):
            if table.get(None) or list(table.get(name, ())) != ours:
                return False
        return type(app.session_interface) is SecureCookieSessionInterface and not any(
            signal.receivers for signal in _REQUEST_SIGNALS)

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

    def _http_error(self, exc: HTTPException) -> Response:
        status = exc.code or 500
        message = exc.description or exc.name
        core: CoreError
        if status == 413:
            core = PayloadTooLarge(message)
        elif status == 405:
            core = MethodNotAllowed(list(getattr(exc, "valid_methods", None) or []), message)
        else:
            core = _BY_STATUS.get(status, CoreError)(message)
            core.status = status
        return self.error_response(core)

    def add_headers(self, headers: Mapping[str, str]) -> None:
        """Headers for this request's response, whatever view builds it (``Retry-After``...)."""
        g.setdefault("_tooldiscovery_headers", {}).update(headers)

    def _after(self, response: Response) -> Response:
        req = request._get_current_object()  # type: ignore[attr-defined]
        state = g._get_current_object()
        headers = response.headers
        if "X-Content-Type-Options" not in headers:
            headers.add("X-Content-Type-Options", "nosniff")
        for name, value in getattr(state, "_tooldiscovery_headers", {}).items():
            headers[name] = value
        trace_id = getattr(state, "_tooldiscovery_trace_id", "")
        if trace_id:
            headers["X-Trace-Id"] = trace_id
        if req.method == "OPTIONS" or response.status_code in (202, 204, 304):
            self._bodiless(response)
        endpoint = (req.endpoint or "").rpartition(".")[2]
        kind = self._kinds.get(endpoint)
        if (kind == "discovery" and self.dialect.public_discovery) or endpoint in self._public:
            headers["Access-Control-Allow-Origin"] = "*"
            self._preflight(response)
            return response
        origin = req.environ.get("HTTP_ORIGIN")
        if kind in ("call", "discovery") and origin and self.origin_allowed(origin):
            headers["Access-Control-Allow-Origin"] = origin
            response.vary.add("Origin")
            headers["Access-Control-Expose-Headers"] = ", ".join((*CORS_EXPOSED_HEADERS, *self.dialect.exposed_headers))
            self._preflight(response)
        return response

    def _route_methods(self) -> set[str]:
        rule = request.url_rule.rule if request.url_rule is not None else ""
        return set(self._methods.get(rule[len(self.prefix):] if rule.startswith(self.prefix) else rule, ()))

    def _bodiless(self, response: Response) -> None:
        """No HTML type on an empty answer; an automatic ``OPTIONS`` names only the route's methods."""
        readable = not (response.is_streamed or response.direct_passthrough)  # a static file's 304 streams
        if response.mimetype == "text/html" and (response.status_code == 304 or (readable and not response.get_data())):
            del response.headers["Content-Type"]
        methods = self._route_methods()
        if request.method == "OPTIONS" and methods and "Allow" in response.headers:
            methods |= {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
            response.headers["Allow"] = ", ".join(m for m in _METHOD_ORDER if m in methods)

    def _preflight(self, response: Response) -> None:
        if request.method != "OPTIONS":
            return
        allowed = self._route_methods() | {"OPTIONS"}
        response.headers["Access-Control-Allow-Methods"] = ", ".join(
            m for m in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS") if m in allowed)
        names = [*CORS_REQUEST_HEADERS, *(h for h in self.dialect.cors_headers if not h.endswith("*"))]
        prefixes = tuple(h[:-1].lower() for h in self.dialect.cors_headers if h.endswith("*"))
        if prefixes:  # header families (Mcp-Param-*): grant the ones the browser asks for
            asked = request.headers.get("Access-Control-Request-Headers", "")
            names += [h.strip() for h in asked.split(",") if h.strip().lower().startswith(prefixes)]
        response.headers["Access-Control-Allow-Headers"] = ", ".join(names)
        response.headers["Access-Control-Max-Age"] = "600"


_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

_UNREAD = object()
_BY_STATUS: dict[int, type[CoreError]] = {400: BadRequest, 403: Forbidden, 404: NotFound, 503: Unavailable}

__all__ = ["AppState", "MalformedBody", "Pipeline", "RouteKind", "Slots", "UnknownTool", "origin_of", "trace_id_of"]
