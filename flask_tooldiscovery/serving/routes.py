"""A dialect's routes as the serving layer keeps them: each endpoint's kind (discovery, call,
health, page), the methods each rule serves (a JSON 405 for the others), and which documents
any website may read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, Request, Response

from ..errors import MethodNotAllowed
from .guard import RouteKind

#: The methods a guarded rule answers with the dialect's JSON 405 (and ``Allow``) when it does not
#: serve them; any other method gets the app's own 405.
_OTHER_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "TRACE", "QUERY")
#: How a route's view is run: ``wrap(view, kind, admit, the rule's methods, whether view takes OPTIONS)``.
Wrap = Callable[[Callable[..., Any], RouteKind, bool, set[str], bool], Callable[..., Any]]


class Routes:
    """The routes of one dialect mounted under ``prefix``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        #: Each endpoint's kind, by endpoint name (without the blueprint's).
        self.kinds: dict[str, RouteKind] = {}
        self._methods: dict[str, set[str]] = {}
        self._public: set[str] = set()

    def add(self, blueprint: Blueprint, rule: str, kind: RouteKind, methods: list[str], endpoint: str,
            view: Callable[..., Any], wrap: Wrap, *, guard_methods: bool, public: bool, **options: Any) -> None:
        """Add ``view`` at ``rule`` to ``blueprint``, run as ``wrap(view, kind, admit, methods)``
        makes it (``methods``: the rule's, a set kept up to date as routes are added); other methods
        there answer a JSON 405 unless ``guard_methods`` is false. ``OPTIONS`` goes to the wrapped
        view too, which answers it as Flask would when ``view`` does not take it."""
        served = self._methods.setdefault(rule, set())
        served.update(m.upper() for m in methods)
        wrapped = wrap(view, kind, True, served, "OPTIONS" in (m.upper() for m in methods))
        blueprint.add_url_rule(rule, endpoint=endpoint, view_func=wrapped, methods=[*methods, "OPTIONS"],
                               provide_automatic_options=False, **options)
        self.kinds[endpoint] = kind
        if public:
            self._public.add(endpoint)
        if not guard_methods:
            return
        allow = sorted({m.upper() for m in methods} | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set()))
        others = [m for m in _OTHER_METHODS if m not in allow]
        if others:
            def not_allowed(**_: Any) -> Response:
                raise MethodNotAllowed(allow, "The method is not allowed for the requested URL.")

            blueprint.add_url_rule(rule, endpoint=f"{endpoint}__405", methods=others, provide_automatic_options=False,
                                   view_func=wrap(not_allowed, kind, False, served, False))
            self.kinds[f"{endpoint}__405"] = kind

    def of(self, req: Request) -> tuple[RouteKind | None, bool, set[str]]:
        """The kind of the route ``req`` reached, whether it is public, and the methods it serves."""
        endpoint = (req.endpoint or "").rpartition(".")[2]
        rule = req.url_rule.rule if req.url_rule is not None else ""
        methods = self._methods.get(rule[len(self.prefix):] if rule.startswith(self.prefix) else rule, set())
        return self.kinds.get(endpoint), endpoint in self._public, set(methods)

    def kind(self, req: Request) -> RouteKind | None:
        """The kind of the route ``req`` reached."""
        return self.kinds.get((req.endpoint or "").rpartition(".")[2])


__all__ = ["Routes"]
