"""The headers every answer of a dialect's blueprint carries: ``X-Content-Type-Options``, the
trace id, those a view asked for, and CORS (for allowed origins, or for anyone on public
documents), with the preflight answers browsers ask for."""

from __future__ import annotations

from collections.abc import Collection

from flask import Request, Response

from ..calls.approvals import APPROVAL_HEADER
from .guard import Guard, RouteKind
from .request_state import RequestState

#: Request headers every dialect's browser clients may send (a dialect adds its own).
CORS_REQUEST_HEADERS = ("Authorization", "Content-Type", "Accept", "X-Trace-Id", "traceparent", "tracestate",
                        APPROVAL_HEADER)
#: Response headers of the core's own that browser clients may read (a dialect adds its own).
CORS_EXPOSED_HEADERS = ("WWW-Authenticate", "X-Trace-Id", "Retry-After", "ETag")
METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
#: The lengths of the two header names :meth:`Cors.finish` looks for among those a view set.
_OWN_LENGTHS = frozenset(map(len, ("X-Trace-Id", "X-Content-Type-Options")))


class Cors:
    """One dialect's answer headers: ``public_discovery`` (any website may read its discovery),
    ``cors_headers`` (request headers its browser clients send; ``Name-*`` grants a family),
    ``exposed_headers`` (response headers of its own they may read)."""

    def __init__(self, guard: Guard, *, public_discovery: bool, cors_headers: Collection[str],
                 exposed_headers: Collection[str] = ()) -> None:
        self.guard = guard
        self.exposed = ", ".join((*CORS_EXPOSED_HEADERS, *exposed_headers))
        self.public_discovery = public_discovery
        self.names = [*CORS_REQUEST_HEADERS, *(h for h in cors_headers if not h.endswith("*"))]
        self.families = tuple(h[:-1].lower() for h in cors_headers if h.endswith("*"))

    def finish(self, response: Response, req: Request, state: RequestState | None, kind: RouteKind | None,
               public: bool, methods: set[str]) -> Response:
        """Add the headers to ``response``, the answer to ``req`` at a route of ``kind`` serving
        ``methods`` (``public``: a document any website may read)."""
        headers = response.headers
        # One look at what the view set (asking ``in headers`` raises and catches a KeyError on a
        # miss); only a name of either's length is lowered and compared.
        sniff = traced = False
        for name, _ in headers:
            if len(name) in _OWN_LENGTHS:
                lowered = name.lower()
                sniff = sniff or lowered == "x-content-type-options"
                traced = traced or lowered == "x-trace-id"
        if not sniff:
            headers.add("X-Content-Type-Options", "nosniff")
        if state is not None:
            asked = state.headers
            if asked:
                for name, value in asked.items():
                    headers[name] = value
            if state.trace_id:  # set (one header) where it may be already, else added as the last one
                (headers.set if traced or asked else headers.add)("X-Trace-Id", state.trace_id)
        if req.method == "OPTIONS" or response.status_code in (202, 204, 304):
            self._bodiless(response, req, methods)
        if public or (kind == "discovery" and self.public_discovery):
            headers["Access-Control-Allow-Origin"] = "*"
            self._preflight(response, req, methods)
            return response
        if kind != "call" and kind != "discovery":
            return response
        origin = req.environ.get("HTTP_ORIGIN")
        if origin and self.guard.origin_allowed(origin, req):
            headers["Access-Control-Allow-Origin"] = origin
            response.vary.add("Origin")
            headers["Access-Control-Expose-Headers"] = self.exposed
            self._preflight(response, req, methods)
        return response

    @staticmethod
    def _bodiless(response: Response, req: Request, methods: set[str]) -> None:
        """No HTML type on an empty answer; an automatic ``OPTIONS`` names only the route's methods."""
        readable = not (response.is_streamed or response.direct_passthrough)  # a static file's 304 streams
        if response.mimetype == "text/html" and (response.status_code == 304 or (readable and not response.get_data())):
            del response.headers["Content-Type"]
        if req.method == "OPTIONS" and methods and "Allow" in response.headers:
            methods = methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
            response.headers["Allow"] = ", ".join(m for m in METHOD_ORDER if m in methods)

    def _preflight(self, response: Response, req: Request, methods: set[str]) -> None:
        if req.method != "OPTIONS":
            return
        allowed = methods | {"OPTIONS"}
        response.headers["Access-Control-Allow-Methods"] = ", ".join(
            m for m in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS") if m in allowed)
        names = list(self.names)
        if self.families:  # header families (Mcp-Param-*): grant the ones the browser asks for
            asked = req.headers.get("Access-Control-Request-Headers", "")
            names += [h.strip() for h in asked.split(",") if h.strip().lower().startswith(self.families)]
        response.headers["Access-Control-Allow-Headers"] = ", ".join(names)
        response.headers["Access-Control-Max-Age"] = "600"


__all__ = ["CORS_EXPOSED_HEADERS", "CORS_REQUEST_HEADERS", "METHOD_ORDER", "Cors"]
