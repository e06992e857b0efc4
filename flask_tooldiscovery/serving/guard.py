"""The checks every request passes before anything reads it: host, origin, content type, body
size, and the trace id it is answered under."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any, Literal
from urllib.parse import urlsplit

from flask import Request
from werkzeug.sansio.utils import host_is_trusted

from ..errors import Forbidden, MisdirectedRequest, PayloadTooLarge, UnsupportedMediaType
from ..settings import Settings, host_allow_list
from .wire import JSON_MIMETYPE, Environ, content_length

#: What a route does: list tools (discovery), run one (call), report liveness (health), or
#: serve the explorer's page and files (page).
RouteKind = Literal["discovery", "call", "health", "page"]

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_TRACE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_CALL_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


#: Random hex texts of 16 bytes each (trace ids), and call ids (:func:`new_call_id`), each pool
#: filled from the OS's generator (``os.urandom``) :data:`_POOL_SIZE` at a time (:func:`_hex_texts`):
#: one system call per :data:`_POOL_SIZE` ids instead of one each, and a call id formatted with the
#: others, not per call. ``list.pop`` and ``list.extend`` are atomic, so threads never share one; a
#: forked child starts empty (its parent's ids are its parent's).
_POOL: list[str] = []
_CALL_IDS: list[str] = []
_POOL_SIZE = 128


def _hex_texts() -> list[str]:
    """:data:`_POOL_SIZE` texts of 32 random lower-case hex digits, from one ``os.urandom`` call."""
    digits = os.urandom(16 * _POOL_SIZE).hex()
    return [digits[i:i + 32] for i in range(0, len(digits), 32)]


def random_hex() -> str:
    """32 random lower-case hex digits (16 bytes of ``os.urandom``), one of a pool filled at once."""
    try:
        return _POOL.pop()
    except IndexError:
        _POOL.extend(_hex_texts())
        return _POOL.pop()


def _clear_pools() -> None:
    _POOL.clear()
    _CALL_IDS.clear()


os.register_at_fork(after_in_child=_clear_pools)


def new_trace_id() -> str:
    """A new trace id: 32 random lower-case hex digits, the W3C ``traceparent`` trace-id form."""
    return random_hex()


#: A random UUID's variant digit (binary ``10xx``) for each random hex digit (``xx``: its low two bits).
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def new_call_id() -> str:
    """A new call id: a random (version 4) UUID in its usual text form (122 random bits: the
    version digit is ``4``, the variant digit one of ``89ab``)."""
    try:
        return _CALL_IDS.pop()
    except IndexError:
        _CALL_IDS.extend([f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"
                          for h in _hex_texts()])
        return _CALL_IDS.pop()


def issued_call_id(value: object) -> bool:
    """True when ``value`` has the exact form of the ids :func:`new_call_id` issues (a task's id is
    its call's: nothing else may be looked up as one)."""
    return isinstance(value, str) and len(value) == 36 and _CALL_ID.fullmatch(value) is not None


def trace_id_of(traceparent: str, given: str) -> str:
    """The trace id of a request with these ``traceparent`` and ``X-Trace-Id`` headers (the
    ``traceparent``'s, else the given one when well formed, else a new one)."""
    match = _TRACEPARENT.match(traceparent.strip().lower())
    if match:
        return match.group(1)
    given = given.strip()
    return given if _TRACE_ID.match(given) else new_trace_id()


def well_formed_trace_id(value: object) -> bool:
    """Whether ``value`` may be a trace id: 1-128 letters, digits, ``._:-`` (a ``traceparent`` is
    one); anything else (a newline, a space...) would break the ``X-Trace-Id`` header or the log."""
    return isinstance(value, str) and _TRACE_ID.match(value) is not None


def environ_trace_id(environ: Environ) -> str:
    """:func:`trace_id_of` a WSGI environ's headers."""
    traceparent, given = environ.get("HTTP_TRACEPARENT"), environ.get("HTTP_X_TRACE_ID")
    if traceparent is None and given is None:
        return new_trace_id()
    return trace_id_of(traceparent or "", given or "")


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


class Guard:
    """One app's request checks, from its settings: the hosts it answers for, the origins whose
    pages may call its tools, and the largest body it reads."""

    def __init__(self, settings: Settings, trusted_hosts: Iterable[str] | None = None) -> None:
        self.max_content_length = settings.max_content_length
        self.hosts: Any = host_allow_list(settings, trusted_hosts)
        self._host_verdicts: dict[str, bool] = {}
        self._raw_verdicts: dict[tuple[str, Any], bool] = {}
        allowed = settings.allowed_origins
        self.any_origin = "*" in allowed
        self.origins = frozenset(o for o in (origin_of(a) for a in allowed if a != "*") if o)

    def check(self, req: Request) -> str:
        """Every request: the size limit set on it, its host allowed, its declared body not over the
        limit; returns its trace id."""
        limit = self.max_content_length
        req.max_content_length = limit
        environ = req.environ
        given = "HTTP_TRACEPARENT" in environ or "HTTP_X_TRACE_ID" in environ
        if given:
            trace_id = environ_trace_id(environ)
        else:  # none given: new_trace_id(), without a call while the pool holds some
            try:
                trace_id = _POOL.pop()
            except IndexError:
                trace_id = random_hex()
        if self.hosts is not None:
            raw = environ.get("HTTP_HOST")
            # The verdict on the Host header as sent (and the scheme, whose default port werkzeug
            # drops), else on the host werkzeug works out: req.host costs a dozen calls a request.
            verdict = self._raw_verdicts.get((raw, environ.get("wsgi.url_scheme"))) if raw is not None else None
            if verdict is None:
                verdict = self.host_allowed(req.host)
                if raw is not None:
                    if len(self._raw_verdicts) >= 256:
                        self._raw_verdicts.clear()
                    self._raw_verdicts[(raw, environ.get("wsgi.url_scheme"))] = verdict
            if not verdict:
                host = req.host
                # The answer names the setting, never the host; the log names both (repr: one line).
                raise MisdirectedRequest(
                    "Misdirected request: this host name is not in TOOLDISCOVERY_ALLOWED_HOSTS.",
                    reason=f"host {host[:200]!r} is not in TOOLDISCOVERY_ALLOWED_HOSTS; add it there to serve it "
                           "(the public name of a tunnel or a proxy)")
        if (content_length(environ) or 0) > limit:
            raise PayloadTooLarge()
        return trace_id

    def check_call(self, req: Request) -> None:
        """A request to run a tool: from an allowed origin (if a browser says one), with a JSON body."""
        environ = req.environ
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self.origin_allowed(origin, req):
            raise Forbidden("Forbidden: origin not allowed.", reason=f"origin {origin!r} is not allowed")
        # The usual header as sent is read as it is; any other is parsed (parameters, case).
        if req.method == "POST" and environ.get("CONTENT_TYPE") != JSON_MIMETYPE and req.mimetype != JSON_MIMETYPE:
            empty = not content_length(environ) and "HTTP_TRANSFER_ENCODING" not in environ
            if not (empty and not req.mimetype):  # an empty POST with no type at all carries nothing to refuse
                raise UnsupportedMediaType()

    def host_allowed(self, host: str) -> bool:
        """``host`` is on the allow-list (verdicts remembered per host text; a flood of new
        names only empties the memory)."""
        verdicts = self._host_verdicts
        verdict = verdicts.get(host)
        if verdict is None:
            if len(verdicts) >= 256:
                verdicts.clear()
            verdict = verdicts[host] = host_is_trusted(host, self.hosts)
        return verdict

    def origin_allowed(self, origin: str, req: Request) -> bool:
        """True for the page's own origin (the host is already allowed) and the listed ones."""
        if self.any_origin:
            return True
        parsed = origin_of(origin)
        if parsed is None:
            return False
        return parsed in self.origins or parsed == origin_of(f"{req.scheme}://{req.host}")


__all__ = ["Guard", "RouteKind", "environ_trace_id", "issued_call_id", "new_call_id", "new_trace_id", "origin_of",
           "trace_id_of"]
