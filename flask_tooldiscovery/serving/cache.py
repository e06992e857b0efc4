"""Discovery at the speed of static bytes: serialized documents cached per tool-set fingerprint,
with a strong ``ETag``; each tool's wire translation computed once; tool look-ups by any
dialect's id from one index per tool set; and :class:`FastDiscovery`, which answers repeated
anonymous discovery GETs with the bytes and headers the full request path last answered them with.

Nothing here knows a dialect: dialects hand in a serializer (or a key function) and a name for it.
A cache belongs to one dialect of one app (its settings are fixed), so a key needs only the tool
set's fingerprint and the caller's own parts (which document, which page...).
"""

from __future__ import annotations

import hashlib
import io
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from werkzeug.http import parse_etags
from werkzeug.sansio.utils import get_content_length

from ..tools.model import Tool
from ..tools.registry import ToolSet


@dataclass(frozen=True)
class Document:
    """A serialized discovery document: its bytes and strong ``ETag`` (a quoted digest)."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, body: bytes) -> Document:
        """Wrap ``body`` with its ``ETag``."""
        return cls(body, '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"')


class WireCache:
    """Bounded caches of one dialect of one app (thread-safe; workers never share them)."""

    def __init__(self, max_documents: int = 256) -> None:
        self._documents: OrderedDict[Hashable, Document] = OrderedDict()
        self._max = max_documents
        self._lock = threading.Lock()
        self._dumps: dict[str, weakref.WeakKeyDictionary[Tool, Any]] = {}
        self._indexes: OrderedDict[Hashable, dict[Hashable, list[Tool]]] = OrderedDict()

    def document(self, key: Hashable, toolset: ToolSet, build: Callable[[], bytes]) -> Document:
        """The document ``build()`` makes for ``toolset``, built once per fingerprint and ``key``."""
        full = (toolset.fingerprint, key)
        with self._lock:
            found = self._documents.get(full)
            if found is not None:
                self._documents.move_to_end(full)
                return found
        document = Document.of(build())
        with self._lock:
            self._documents[full] = document
            while len(self._documents) > self._max:
                self._documents.popitem(last=False)
        return document

    def dump(self, what: str, tool: Tool, build: Callable[[Tool], Any]) -> Any:
        """``build(tool)``, computed once per tool object and ``what`` (shared: never mutate it)."""
        dumps = self._dumps.get(what)
        if dumps is None:  # one table per kind of dump: a weak reference per tool, no dict per tool
            with self._lock:
                dumps = self._dumps.setdefault(what, weakref.WeakKeyDictionary())
        try:
            return dumps[tool]
        except KeyError:
            value = dumps[tool] = build(tool)
            return value

    def index(self, what: str, toolset: ToolSet, key: Callable[[Tool], Hashable]) -> dict[Hashable, list[Tool]]:
        """``{key(tool): [tools, lowest version first]}`` for ``toolset``, built once per fingerprint."""
        full = (toolset.fingerprint, what)
        with self._lock:
            found = self._indexes.get(full)
        if found is not None:
            return found
        index: dict[Hashable, list[Tool]] = {}
        for tool in toolset:
            index.setdefault(key(tool), []).append(tool)
        for versions in index.values():
            versions.sort(key=lambda t: t.version_tuple)
        with self._lock:
            self._indexes[full] = index
            while len(self._indexes) > 16:
                self._indexes.popitem(last=False)
        return index


#: A WSGI environ, a WSGI ``start_response``.
Environ = dict[str, Any]
StartResponse = Callable[..., Any]
Headers = list[tuple[str, str]]
#: A request body -> (its shape: what the answer depends on, the fill: the rest, e.g. a JSON-RPC
#: id), or ``None`` when the body is not one the answer can be remade for.
Shape = Callable[[bytes], "tuple[Hashable, Any] | None"]

#: Request headers never part of what a learned answer depends on: the trace id is remade for
#: each answer, and the body's length is the body's business.
_UNREAD_HEADERS = frozenset({"HTTP_TRACEPARENT", "HTTP_TRACESTATE", "HTTP_X_TRACE_ID", "HTTP_CONTENT_LENGTH"})
#: The largest body a POST answer is learned and looked up for (larger ones go through Flask).
MAX_LEARNED_BODY = 8192
#: The most request header text (names and values) a learned POST answer is kept under.
MAX_LEARNED_HEADERS = 4096


@dataclass
class Served:
    """What the full request path answered to an anonymous discovery GET: the document, the
    status line and headers of its ``200`` (and, once seen, of its ``304``), and ``valid``, which
    tells whether a new request may have the same answer (same tool set, no credentials...).
    ``trace_id(environ)`` makes the request's ``X-Trace-Id``, put where the learned one was."""

    document: Document
    valid: Callable[[Environ], bool]
    trace_id: Callable[[Environ], str]
    answers: dict[bool, tuple[str, Headers, int | None]]


@dataclass(frozen=True)
class PostLesson:
    """What the full path tells :class:`FastDiscovery` about a POST it answered with a document
    (an MCP ``tools/list`` page): the answer to any request with the same headers and a body of the
    same ``shape`` is ``render(fill)`` of that body's fill, while ``valid`` holds."""

    valid: Callable[[Environ], bool]
    trace_id: Callable[[Environ], str]
    shape: Shape
    key: Hashable
    fill: Any
    render: Callable[[Any], bytes]


@dataclass(frozen=True)
class ServedPost:
    """A learned POST answer: how to remake its body, and its status line and headers (the
    positions of ``X-Trace-Id`` and ``Content-Length``, which change with each answer)."""

    lesson: PostLesson
    status: str
    headers: Headers
    trace_at: int | None
    length_at: int | None


class FastDiscovery:
    """WSGI middleware in front of one Flask app (installed by the first dialect mounted on it).

    The full request path (guard, identity, tool set, cached bytes, response headers) answers a
    discovery GET and, when nothing in the request could change the answer but the trace id and
    ``If-None-Match``, teaches it here (:meth:`teach`) under (host, scheme, script name, path).
    The same request again is then answered from those bytes and headers without Flask, after
    ``Served.valid`` has checked the tool set is unchanged and the request carries nothing the
    full path would read differently. A discovery read made by POST (MCP's ``tools/list``) is
    learned the same way from a :class:`PostLesson`, under its headers and its body's shape.
    Anything else goes through Flask as ever.
    """

    ENVIRON_KEY = "tooldiscovery.fast"

    def __init__(self, wsgi_app: Callable[[Environ, StartResponse], Iterable[bytes]],
                 max_entries: int = 1024) -> None:
        self.wsgi_app = wsgi_app
        self.max_entries = max_entries
        self._served: dict[tuple[Any, ...], Served] = {}
        self._shapes: dict[tuple[Any, ...], Shape] = {}
        self._posts: dict[tuple[Any, ...], ServedPost] = {}
        #: POST paths whose answers were offered to learn (the others are never captured).
        self._wanted: set[tuple[Any, ...]] = set()

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD")
        if method == "POST":
            return self._post(environ, start_response)
        if method != "GET" or environ.get("QUERY_STRING"):
            return self.wsgi_app(environ, start_response)
        key = (environ.get("HTTP_HOST"), environ.get("wsgi.url_scheme"), environ.get("SCRIPT_NAME", ""),
               environ.get("PATH_INFO"))
        served = self._served.get(key)
        if served is not None and served.valid(environ):
            tags = environ.get("HTTP_IF_NONE_MATCH")
            matched = tags is not None and parse_etags(tags).contains(served.document.etag[1:-1])
            answer = served.answers.get(matched)
            if answer is not None:
                status, headers, trace_at = answer
                if trace_at is not None:
                    headers = headers.copy()
                    headers[trace_at] = ("X-Trace-Id", served.trace_id(environ))
                start_response(status, headers)
                return [] if matched else [served.document.body]
        if key[0] is None:
            return self.wsgi_app(environ, start_response)
        return self._learn(key, environ, start_response)

    def _post(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        key = (environ.get("HTTP_HOST"), environ.get("wsgi.url_scheme"), environ.get("SCRIPT_NAME", ""),
               environ.get("PATH_INFO"))
        if key[0] is None:
            return self.wsgi_app(environ, start_response)
        shape = self._shapes.get(key)
        if shape is None or environ.get("QUERY_STRING"):
            if key not in self._wanted:  # no answer was ever offered here (tool calls...): no capture
                return self._offered(key, environ, start_response)
            return self._learn(key, environ, start_response)
        length = content_length(environ)
        if not length or length > MAX_LEARNED_BODY or "HTTP_TRANSFER_ENCODING" in environ:
            return self._learn(key, environ, start_response)
        raw = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(raw)  # the full path reads the same bytes
        shaped = shape(raw) if len(raw) == length else None
        if shaped is not None:
            served = self._posts.get((key, request_headers(environ), shaped[0]))
            if served is not None and served.lesson.valid(environ):
                body = served.lesson.render(shaped[1])
                headers = served.headers.copy()
                if served.trace_at is not None:
                    headers[served.trace_at] = ("X-Trace-Id", served.lesson.trace_id(environ))
                if served.length_at is not None:
                    headers[served.length_at] = ("Content-Length", str(len(body)))
                start_response(served.status, headers)
                return [body]
            return self._learn(key, environ, start_response)
        return self.wsgi_app(environ, start_response)  # not of the learned kind (a tool call): nothing to learn

    def _offered(self, key: tuple[Any, ...], environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """The full path's answer to a POST where nothing was offered to learn yet; when it offers
        a lesson now, the next POST there is captured and learned."""
        environ[self.ENVIRON_KEY] = None
        body = self.wsgi_app(environ, start_response)
        if isinstance(environ.get(self.ENVIRON_KEY), PostLesson):
            if len(self._wanted) >= self.max_entries:
                self._wanted.clear()
            self._wanted.add(key)
        return body

    def _learn(self, key: tuple[Any, ...], environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """The full path's answer, learned when the full path says it may be (a lesson in the environ)."""
        environ[self.ENVIRON_KEY] = None
        answered: list[Any] = []

        def capture(status: str, headers: Headers, exc_info: Any = None) -> Any:
            answered[:] = [status, headers]
            if exc_info is not None:
                return start_response(status, headers, exc_info)
            return start_response(status, headers)

        body = self.wsgi_app(environ, capture)
        lesson = environ.get(self.ENVIRON_KEY)
        if lesson is None or not answered or answered[0][:3] not in ("200", "304"):
            return body
        try:  # the answer to learn: read it whole, then hand the same bytes on
            data = b"".join(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        if isinstance(lesson, PostLesson):
            self.teach_post(key, environ, lesson, answered[0], answered[1], data)
        else:
            self.teach(key, lesson, answered[0], answered[1], data)
        return [data]

    def teach(self, key: tuple[Any, ...], lesson: tuple[Document, Callable[[Environ], bool], Callable[[Environ], str]],
              status: str, headers: Headers, data: bytes) -> None:
        """Remember the answer ``status``/``headers``/``data`` to the request under ``key``."""
        document, valid, trace_id = lesson
        matched = status.startswith("304")
        if data != (b"" if matched else document.body):
            return
        served = self._served.get(key)
        if served is None or served.document is not document:
            if len(self._served) >= self.max_entries:
                self._served.clear()
            served = self._served[key] = Served(document, valid, trace_id, {})
        names = [name.lower() for name, _ in headers]
        trace_at = names.index("x-trace-id") if "x-trace-id" in names else None
        served.answers[matched] = (status, list(headers), trace_at)

    def teach_post(self, key: tuple[Any, ...], environ: Environ, lesson: PostLesson, status: str, headers: Headers,
                   data: bytes) -> None:
        """Remember the ``200`` answer to a POST under ``key``, its headers and its body's shape,
        when remaking it gives these very bytes."""
        if not status.startswith("200") or data != lesson.render(lesson.fill):
            return
        sent = request_headers(environ)
        if sum(len(name) + len(str(value)) for name, value in sent) > MAX_LEARNED_HEADERS:
            return  # a learned answer keeps its request's headers: not when a client sends pages of them
        names = [name.lower() for name, _ in headers]
        if len(self._posts) >= self.max_entries:
            self._posts.clear()
            self._shapes.clear()
        self._shapes[key] = lesson.shape
        self._posts[(key, sent, lesson.key)] = ServedPost(
            lesson, status, list(headers), names.index("x-trace-id") if "x-trace-id" in names else None,
            names.index("content-length") if "content-length" in names else None)


def content_length(environ: Environ) -> int | None:
    """``request.content_length``, read from the environ (werkzeug's rule: none when chunked)."""
    return get_content_length(environ.get("CONTENT_LENGTH"), environ.get("HTTP_TRANSFER_ENCODING"))


def request_headers(environ: Environ) -> tuple[tuple[str, Any], ...]:
    """Every request header (and the content type) but the trace and length ones, in the order
    the server read them: a learned POST answer is only given to a request with all of these the
    same (a client sending them in another order is learned apart)."""
    return tuple((name, value) for name, value in environ.items()
                 if (name[:5] == "HTTP_" and name not in _UNREAD_HEADERS) or name == "CONTENT_TYPE")


__all__ = ["Document", "FastDiscovery", "PostLesson", "Served", "WireCache", "content_length", "request_headers"]
