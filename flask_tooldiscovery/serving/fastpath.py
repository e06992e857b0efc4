"""Learned answers: repeated anonymous discovery requests answered without running Flask.

The full request path answers a discovery request first. When nothing in it could change the
answer but the trace id (and ``If-None-Match``), the pipeline offers the answer
(:meth:`Learner.offer_get`, :meth:`Learner.offer_post`) to :class:`FastPath`, the WSGI middleware
``init_app`` puts in front of the app, which answers the same request again from those bytes and
headers while the lesson's ``valid(environ)`` holds: the tool set's content fingerprint (tools,
categories, visible set) is unchanged and the request carries nothing the full path would read
differently (a cookie, a credential, an origin, a body over the limit). A dialect's
:class:`Learnable` says which of its answers may be learned: discovery GETs, and discovery reads
made by POST whose answer depends only on the body's shape (MCP's ``tools/list``: the JSON-RPC
id is put back in each answer). A POST to such a path goes straight to the app (a tool call costs
no more for the fast path in front) until an answer is offered there; the next POST there is then
captured and learned. An app that runs code of its own around requests (hooks, URL
value preprocessors, its own session interface) has no learned answers; the log says so once.
"""

from __future__ import annotations

import contextvars
import io
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from flask import signals as flask_signals
from flask.sessions import SecureCookieSessionInterface
from werkzeug.http import parse_etags

from ..identity.csrf import csrf_exemption
from ..identity.sources import Authenticator
from ..observe.logs import log
from ..tools.registry import ToolRegistry, ToolSet
from .body import READ_BODY
from .cache import Document
from .guard import environ_trace_id
from .wire import Environ, content_length

StartResponse = Callable[..., Any]
Headers = list[tuple[str, str]]
#: A request body -> (its shape: what the answer depends on, the fill: the rest, e.g. a JSON-RPC
#: id), or ``None`` when the body is not one the answer can be remade for.
Shape = Callable[[bytes], "tuple[Hashable, Any] | None"]
Key = tuple[Any, ...]
BLUEPRINT_PREFIX = "tooldiscovery_"  # this package's blueprints' names

#: Request headers that name the client (and the hops) a proxy puts on each request: what a
#: learned answer is given for never depends on them (rate limits and identity are the call's
#: business; a credential read from one is refused by the lesson's check), so one lesson serves
#: every client behind the proxy and the lessons kept do not grow with the addresses.
CLIENT_ADDRESS_HEADERS = frozenset({"HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_FORWARDED",
                                    "HTTP_TRUE_CLIENT_IP", "HTTP_CF_CONNECTING_IP", "HTTP_X_CLIENT_IP"})
#: Request headers never part of what a learned answer depends on: the trace id is remade for
#: each answer, the body's length is the body's business, and the client's address is none of it.
_UNREAD_HEADERS = frozenset({"HTTP_TRACEPARENT", "HTTP_TRACESTATE", "HTTP_X_TRACE_ID", "HTTP_CONTENT_LENGTH",
                             *CLIENT_ADDRESS_HEADERS})
#: The largest body a POST answer is learned and looked up for (larger ones go through Flask).
MAX_LEARNED_BODY = 8192
#: The most request header text (names and values) a learned POST answer is kept under.
MAX_LEARNED_HEADERS = 4096
#: Flask signals sent around every request: a receiver makes every request go through Flask.
REQUEST_SIGNALS = (flask_signals.request_started, flask_signals.request_finished,
                   flask_signals.request_tearing_down, flask_signals.appcontext_pushed,
                   flask_signals.appcontext_popped, flask_signals.appcontext_tearing_down)


@dataclass(frozen=True)
class Learnable:
    """Which answers of a dialect may be learned: its discovery GETs (``get``), and discovery
    reads made by POST whose answer is remade from the body's shape (``post``)."""

    get: bool = True
    post: Shape | None = None


@dataclass(frozen=True)
class GetLesson:
    """A discovery GET's answer may be learned: ``document`` is its body while ``valid`` holds."""

    document: Document
    valid: Callable[[Environ], bool]


@dataclass(frozen=True)
class PostLesson:
    """A POST's answer may be learned: to any request with the same headers and a body of the same
    shape (``key``), the answer is ``render(fill)`` of that body's fill, while ``valid`` holds."""

    valid: Callable[[Environ], bool]
    shape: Shape
    key: Hashable
    fill: Any
    render: Callable[[Any], bytes]


@dataclass
class Offer:
    """What the full path offered while answering one request the fast path passed on."""

    lesson: GetLesson | PostLesson | None = None


#: The environ key of the :class:`FastPath` that passed a POST on to the app without listening for
#: its answer (nothing was offered to learn at its path yet).
PASSED_ON = "tooldiscovery.fastpath"
#: The request being answered through the full path, while the fast path waits for its answer.
_OFFER: contextvars.ContextVar[Offer | None] = contextvars.ContextVar("tooldiscovery_offer", default=None)


@dataclass
class _Answer:
    """A learned answer: status line and headers (with the positions of ``X-Trace-Id`` and
    ``Content-Length``, which change with each answer)."""

    status: str
    headers: Headers
    trace_at: int | None
    length_at: int | None = None

    @classmethod
    def of(cls, status: str, headers: Headers) -> _Answer:
        names = [name.lower() for name, _ in headers]
        return cls(status, list(headers), names.index("x-trace-id") if "x-trace-id" in names else None,
                   names.index("content-length") if "content-length" in names else None)

    def start(self, environ: Environ, start_response: StartResponse, length: int | None = None) -> None:
        headers = self.headers
        if self.trace_at is not None or (length is not None and self.length_at is not None):
            headers = headers.copy()
            if self.trace_at is not None:
                headers[self.trace_at] = ("X-Trace-Id", environ_trace_id(environ))
            if length is not None and self.length_at is not None:
                headers[self.length_at] = ("Content-Length", str(length))
        start_response(self.status, headers)


@dataclass
class _Served:
    """A learned GET: its lesson and the answers seen, by whether ``If-None-Match`` matched."""

    lesson: GetLesson
    answers: dict[bool, _Answer] = field(default_factory=dict)


def _key(environ: Environ) -> Key:
    return (environ.get("HTTP_HOST"), environ.get("wsgi.url_scheme"), environ.get("SCRIPT_NAME", ""),
            environ.get("PATH_INFO"))


def request_headers(environ: Environ) -> tuple[tuple[str, Any], ...]:
    """Every request header (and the content type) but the trace and length ones, in the order
    the server read them: a learned POST answer is only given to a request with all of these the
    same (a client sending them in another order is learned apart)."""
    return tuple((name, value) for name, value in environ.items()
                 if (name[:5] == "HTTP_" and name not in _UNREAD_HEADERS) or name == "CONTENT_TYPE")


def app_steps_aside(app: Flask) -> str | None:
    """Why learned answers are off for ``app`` (code of its own around the requests the fast path
    would answer: app-wide hooks, or hooks added to this package's blueprints), or ``None``."""
    for what, table in (("before_request", app.before_request_funcs),
                        ("after_request", app.after_request_funcs),
                        ("teardown_request", app.teardown_request_funcs),
                        ("url_value_preprocessor", app.url_value_preprocessors)):
        if table.get(None):
            return f"the app has {what} functions"
        for blueprint, functions in table.items():  # ours have none: their views guard themselves
            if blueprint is not None and blueprint.startswith(BLUEPRINT_PREFIX) and [
                    f for f in functions if f is not csrf_exemption]:  # (that one takes itself off)
                return f"blueprint {blueprint!r} has {what} functions of its own"
    if type(app.session_interface) is not SecureCookieSessionInterface:
        return "the app has a session interface of its own"
    return None


class FastPath:
    """WSGI middleware in front of one Flask app (see the module's text)."""

    def __init__(self, app: Flask, max_entries: int = 1024) -> None:
        self.app = app
        self.wsgi_app = app.wsgi_app
        self.max_entries = max_entries
        self._on: bool | None = None  # decided at the first request, when the app's setup is over
        self._served: dict[Key, _Served] = {}
        self._shapes: dict[Key, Shape] = {}
        self._posts: dict[tuple[Key, Any, Hashable], tuple[PostLesson, _Answer]] = {}
        #: POST paths whose answers were offered to learn (the others are never captured).
        self._wanted: set[Key] = set()
        #: The only paths (``PATH_INFO``) where a POST answer may ever be offered (a dialect whose
        #: ``learnable.post`` is set: MCP's endpoint); a POST elsewhere (a tool call) goes straight
        #: to Flask.
        self.post_paths: set[str] = set()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if not self._on and (self._on is False or not self._decide()):
            return self.wsgi_app(environ, start_response)
        method = environ.get("REQUEST_METHOD")
        if method == "POST":
            if environ.get("PATH_INFO") not in self.post_paths:
                return self.wsgi_app(environ, start_response)  # a tool call
            environ[PASSED_ON] = self  # an answer may be offered here (Learner.offer_post)
            if not (self._shapes or self._wanted):
                return self.wsgi_app(environ, start_response)  # nothing was offered to learn yet
            return self._post(environ, start_response)
        if method != "GET" or environ.get("QUERY_STRING"):
            return self.wsgi_app(environ, start_response)
        key = _key(environ)
        served = self._served.get(key)
        if served is not None and served.lesson.valid(environ):
            tags = environ.get("HTTP_IF_NONE_MATCH")
            matched = tags is not None and parse_etags(tags).contains(served.lesson.document.etag[1:-1])
            answer = served.answers.get(matched)
            if answer is not None:
                answer.start(environ, start_response)
                return [] if matched else [served.lesson.document.body]
        if key[0] is None:
            return self.wsgi_app(environ, start_response)
        return self._learn(key, environ, start_response)

    def _decide(self) -> bool:
        reason = app_steps_aside(self.app)
        self._on = reason is None
        if reason is not None:
            log.info("flask-tooldiscovery: learned discovery answers are off for app %r: %s, so every "
                     "request goes through Flask", self.app.name, reason)
        return self._on

    def _post(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        key = (environ.get("HTTP_HOST"), environ.get("wsgi.url_scheme"), environ.get("SCRIPT_NAME", ""),
               environ.get("PATH_INFO"))  # (_key, as every POST to the endpoint makes it)
        if key[0] is None:
            return self.wsgi_app(environ, start_response)
        shape = self._shapes.get(key)
        if shape is None or environ.get("QUERY_STRING"):
            if key not in self._wanted:  # no answer was ever offered here (tool calls...): no capture
                return self.wsgi_app(environ, start_response)
            return self._learn(key, environ, start_response)
        given = environ.get("CONTENT_LENGTH")  # (content_length, for the usual header: plain digits)
        length = int(given) if given is not None and given.isdigit() and given.isascii() \
            else content_length(environ)
        if not length or length > MAX_LEARNED_BODY or "HTTP_TRANSFER_ENCODING" in environ:
            return self._learn(key, environ, start_response)
        raw = environ["wsgi.input"].read(length)
        stream = environ["wsgi.input"] = io.BytesIO(raw)  # the app can read the same bytes
        environ[READ_BODY] = (stream, raw)  # and the full path takes them as read (body.read_body)
        shaped = shape(raw) if len(raw) == length else None
        if shaped is None:
            return self.wsgi_app(environ, start_response)  # not of the learned kind (a tool call)
        found = self._posts.get((key, request_headers(environ), shaped[0]))
        if found is not None and found[0].valid(environ):
            body = found[0].render(shaped[1])
            found[1].start(environ, start_response, len(body))
            return [body]
        return self._learn(key, environ, start_response)

    def want(self, environ: Environ) -> None:
        """An answer to this POST was offered to learn while the fast path passed it on without
        listening (nothing was learned at its path yet): the next POST there is captured and learned."""
        key = _key(environ)
        if key[0] is None or environ.get("PATH_INFO") not in self.post_paths:
            return
        if len(self._wanted) >= self.max_entries:
            self._wanted.clear()
        self._wanted.add(key)

    def _learn(self, key: Key, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """The full path's answer, learned when the full path offered it."""
        offer = Offer()
        answered: list[Any] = []

        def capture(status: str, headers: Headers, exc_info: Any = None) -> Any:
            answered[:] = [status, headers]
            if exc_info is not None:
                return start_response(status, headers, exc_info)
            return start_response(status, headers)

        token = _OFFER.set(offer)
        try:
            body = self.wsgi_app(environ, capture)
        finally:
            _OFFER.reset(token)
        lesson = offer.lesson
        if lesson is None or not answered or answered[0][:3] not in ("200", "304"):
            return body
        try:  # the answer to learn: read it whole, then hand the same bytes on
            data = b"".join(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        if isinstance(lesson, PostLesson):
            self._keep_post(key, environ, lesson, answered[0], answered[1], data)
        else:
            self._keep_get(key, lesson, answered[0], answered[1], data)
        return [data]

    def _keep_get(self, key: Key, lesson: GetLesson, status: str, headers: Headers, data: bytes) -> None:
        matched = status.startswith("304")
        if data != (b"" if matched else lesson.document.body):
            return
        served = self._served.get(key)
        if served is None or served.lesson.document is not lesson.document:
            if len(self._served) >= self.max_entries:
                self._served.clear()
            served = self._served[key] = _Served(lesson)
        served.answers[matched] = _Answer.of(status, headers)

    def _keep_post(self, key: Key, environ: Environ, lesson: PostLesson, status: str, headers: Headers,
                   data: bytes) -> None:
        if not status.startswith("200") or data != lesson.render(lesson.fill):
            return
        sent = request_headers(environ)
        if sum(len(name) + len(str(value)) for name, value in sent) > MAX_LEARNED_HEADERS:
            return  # a learned answer keeps its request's headers: not when a client sends pages of them
        if len(self._posts) >= self.max_entries:
            self._posts.clear()
            self._shapes.clear()
        self._shapes[key] = lesson.shape
        self._posts[(key, sent, lesson.key)] = (lesson, _Answer.of(status, headers))


def listening() -> bool:
    """True while the fast path waits for this request's answer."""
    return _OFFER.get() is not None


class Learner:
    """One dialect's side of the fast path: whether an answer it gives may be learned, and the
    check a later request must pass to get it.

    ``credential_keys``: the WSGI environ keys of every credential the dialect reads on
    discovery (``None`` when that cannot be told from headers: then nothing is learned).
    """

    def __init__(self, registry: ToolRegistry, learnable: Learnable, *, credential_keys: tuple[str, ...] | None,
                 public_discovery: bool, max_content_length: int,
                 narrow: Callable[[ToolSet, Environ], ToolSet | None] | None = None) -> None:
        self.registry = registry
        #: What the dialect's mount serves of a tool set to a request (a toolset's tools, those its
        #: headers choose), when not all of it; ``None`` for a request no answer may be given to.
        self.narrow = narrow
        self.learnable = learnable
        self.credential_keys = credential_keys
        self.public_discovery = public_discovery
        self.limit = max_content_length

    def offer_get(self, environ: Environ, document: Document, toolset: ToolSet) -> None:
        """Offer the answer ``document`` (built from ``toolset``) to this GET."""
        offer = _OFFER.get()
        if offer is None or not self.learnable.get:
            return
        valid = self._valid(environ, toolset, body=False)
        if valid is not None:
            offer.lesson = GetLesson(document, valid)

    def offer_post(self, environ: Environ, raw: bytes | None, toolset: ToolSet,
                   render: Callable[[Any], bytes]) -> None:
        """Offer the answer ``render(fill)`` to this POST, whose body is ``raw``: to the fast path
        listening for it, else to the one that passed it on without listening (nothing was learned
        at its path yet), which then listens there."""
        offer, shape = _OFFER.get(), self.learnable.post
        fast = environ.get(PASSED_ON) if offer is None else None
        if (offer is None and fast is None) or shape is None or raw is None or len(raw) > MAX_LEARNED_BODY:
            return
        shaped = shape(raw)
        valid = self._valid(environ, toolset, body=True) if shaped is not None else None
        if shaped is None or valid is None:
            return
        if offer is not None:
            offer.lesson = PostLesson(valid, shape, shaped[0], shaped[1], render)
        elif isinstance(fast, FastPath):
            fast.want(environ)

    def _valid(self, environ: Environ, toolset: ToolSet, *, body: bool) -> Callable[[Environ], bool] | None:
        """The check that a later request may get this request's answer (same tool set content,
        still a plain request, no request signal receivers), or ``None`` when this one's may not
        be learned at all (a provider or predicate decides the tools, a caller who said who it is)."""
        registry = self.registry
        if registry.static is None or toolset.predicated or not self._plain(environ, body=body):
            return None
        fingerprint = toolset.fingerprint
        limit = self.limit

        def valid(environ: Environ) -> bool:
            if not self._plain(environ, body=body) or any(signal.receivers for signal in REQUEST_SIGNALS):
                return False
            if body and (content_length(environ) or 0) > limit:
                return False  # the full path refuses it (413): so must the learned answer
            static = registry.static
            if static is None:
                return False
            served: ToolSet | None = static.visible_to(None) if static.restricted else static
            if self.narrow is not None and served is not None:  # the mount's toolset, the request's headers
                served = self.narrow(served, environ)
            return served is not None and served.fingerprint == fingerprint

        return valid

    def _plain(self, environ: Environ, *, body: bool) -> bool:
        """True when a request carries nothing the full path would read: no body (unless ``body``:
        a POST whose body the lesson's shape accounts for), cookie, credential, nor an ``Origin``
        (unless discovery answers every origin alike)."""
        keys = self.credential_keys
        return (keys is not None
                and (body or (environ.get("CONTENT_LENGTH") in (None, "", "0")
                              and "HTTP_TRANSFER_ENCODING" not in environ))
                and "HTTP_COOKIE" not in environ
                and ("HTTP_ORIGIN" not in environ or (self.public_discovery and not body))
                and not any(key in environ for key in keys))


def credential_keys(auth: Authenticator | None) -> tuple[str, ...] | None:
    """The WSGI environ keys of the credentials a dialect reads on discovery (``None``: it cannot be
    told from headers, or discovery needs credentials: then nothing is learned)."""
    return () if auth is None else None if auth.protect_discovery else auth.reads


def install(app: Flask, post_paths: Iterable[str] = ()) -> FastPath | None:
    """Put a :class:`FastPath` in front of ``app`` unless something already wraps its
    ``wsgi_app`` (middleware applied before ``init_app``, such as ProxyFix, changes what a request
    means: then every request goes through Flask, and the log says so). ``post_paths``: where a
    POST answer may be offered to learn (:attr:`FastPath.post_paths`)."""
    inner = app.wsgi_app
    if isinstance(inner, FastPath):  # a second init_app on the app: its paths too
        inner.post_paths.update(post_paths)
    if getattr(inner, "__func__", None) is not type(app).wsgi_app or getattr(inner, "__self__", None) is not app:
        log.info("flask-tooldiscovery: learned discovery answers are off for app %r: its wsgi_app was "
                 "wrapped before init_app, so every request goes through Flask", app.name)
        return None
    fast = FastPath(app)
    fast.post_paths.update(post_paths)
    app.wsgi_app = fast
    return fast


__all__ = ["PASSED_ON", "FastPath", "GetLesson", "Learnable", "Learner", "PostLesson", "Shape", "app_steps_aside",
           "credential_keys", "install", "listening", "request_headers"]
