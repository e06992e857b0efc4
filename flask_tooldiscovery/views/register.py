"""Existing Flask views as tools: ``discovery.add_view(...)`` and ``discovery.add_views(...)``.

A view becomes a tool whose input schema comes from what the view declares (:mod:`.schemas`);
a call runs the view as a sub-request through the app itself (:mod:`.calls`).

Views are resolved against the app's URL map in ``init_app``: register them (or their
blueprints) before it.
"""

from __future__ import annotations

import fnmatch
import inspect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app, has_app_context
from werkzeug.routing import Rule

from ..schema.docstrings import parse_docstring
from ..tools.function_tools import RegistrationError, tool_from_function
from ..tools.model import Tool, ToolContext
from ..tools.registry import ToolRegistry
from .calls import Plan, result_of, run_view
from .schemas import input_schema_of, output_schema_of

log = logging.getLogger("flask_tooldiscovery")

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_NEVER = ("static", "tooldiscovery_", "api-docs.")


def _handler(view: Callable[..., Any], method: str) -> Callable[..., Any]:
    """The function that serves ``method``: a MethodView's method, else the view itself."""
    cls = getattr(view, "view_class", None)
    return getattr(cls, method.lower(), view) if cls is not None else view


@dataclass
class _Pending:
    views: list[tuple[Any, str | None, dict[str, Any]]] = field(default_factory=list)
    selections: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)


def _annotations(method: str) -> dict[str, Any]:
    if method == "GET":
        return {"readOnlyHint": True, "idempotentHint": True}
    return {"readOnlyHint": False, "destructiveHint": method == "DELETE", "idempotentHint": method in ("PUT", "DELETE")}


class ViewTools:
    """The views an extension offers as tools: kept until ``init_app`` resolves them on an app."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._pending = _Pending()
        self._made: dict[tuple[str, str], Tool] = {}

    def add_view(self, view: Any, method: str | None = None, **options: Any) -> None:
        """Offer one view (an endpoint name or a view function) as a tool; see :meth:`resolve`."""
        for option in ("input_schema",):
            if option in options:
                raise RegistrationError(f"add_view: {option} comes from the view; it cannot be given")
        self._pending.views.append((view, method.upper() if method else None, options))
        if has_app_context() and "tooldiscovery" in current_app.extensions:
            self.resolve(current_app._get_current_object())  # type: ignore[attr-defined]

    def add_views(self, *, blueprint: Any = None, rule: str | None = None, include: Iterable[str] | None = None,
                  exclude: Iterable[str] = (), methods: Iterable[str] = METHODS, **options: Any) -> None:
        """Offer many views: those of ``blueprint`` (a name or a Blueprint), whose URL rule matches
        ``rule`` (a glob: ``/api/pets*``), or whose endpoint matches one of ``include`` (globs);
        less those matching ``exclude``. At least one of ``blueprint``, ``rule``, ``include``."""
        if blueprint is None and rule is None and include is None:
            raise RegistrationError("add_views needs blueprint=, rule= or include=: it never offers every view")
        if "name" in options:
            raise RegistrationError("add_views names each tool after its endpoint; use add_view to name one")
        selection = {"blueprint": getattr(blueprint, "name", blueprint), "rule": rule,
                     "include": list(include) if include is not None else None, "exclude": list(exclude),
                     "methods": [m.upper() for m in methods]}
        self._pending.selections.append((selection, options))

    def resolve(self, app: Flask) -> None:
        """Turn the pending views into tools against ``app``'s URL map (once per view and method)."""
        rules = [r for r in app.url_map.iter_rules() if not str(r.endpoint or "").startswith(_NEVER)]
        for view, method, options in self._pending.views:
            if isinstance(view, str):
                matches = [r for r in rules if r.endpoint == view]
            else:
                matches = [r for r in rules if app.view_functions.get(r.endpoint) is view
                           or getattr(app.view_functions.get(r.endpoint), "view_class", None) is view]
            if not matches:
                raise RegistrationError(f"add_view: {view!r} is not a view of app {app.name!r}; register it (or "
                                        "its blueprint) before init_app")
            served = sorted(set().union(*(r.methods or () for r in matches)) & set(METHODS))
            if method is None and len(served) > 1:
                raise RegistrationError(f"add_view: {view!r} serves {', '.join(served)}; say which with method=")
            wanted = method or served[0]
            rule = next((r for r in matches if wanted in (r.methods or ())), None)
            if rule is None:
                raise RegistrationError(f"add_view: {view!r} does not serve {wanted}")
            self._make(app, rule, wanted, options, single=True)
        for selection, options in self._pending.selections:
            for rule in rules:
                endpoint = str(rule.endpoint or "")
                bp = selection["blueprint"]
                if (bp is not None and not endpoint.startswith(f"{bp}.")) or (
                        selection["rule"] is not None and not fnmatch.fnmatchcase(rule.rule, selection["rule"])) or (
                        selection["include"] is not None and not any(
                            fnmatch.fnmatchcase(endpoint, p) for p in selection["include"])) or any(
                        fnmatch.fnmatchcase(endpoint, p) for p in selection["exclude"]):
                    continue
                served = [m for m in METHODS if m in (rule.methods or ()) and m in selection["methods"]]
                for method in served:
                    self._make(app, rule, method, options, single=len(served) == 1)

    def _make(self, app: Flask, rule: Rule, method: str, options: dict[str, Any], *, single: bool) -> None:
        key = (str(rule.endpoint), method)
        if key in self._made:
            return
        handler = _handler(app.view_functions[rule.endpoint], method)
        description, docs, _ = parse_docstring((inspect.getdoc(handler) or "").split("---")[0])
        schema, places = input_schema_of(rule, handler, method, docs)
        plan = Plan(str(rule.endpoint), method, places)
        name = options.get("name") or re.sub(r"[^A-Za-z0-9_]+", "_", str(rule.endpoint)).strip("_") + (
            "" if single else f"_{method.lower()}")

        def call_view(_tooldiscovery_context: ToolContext, **arguments: Any) -> Any:
            app = current_app._get_current_object()  # type: ignore[attr-defined]
            return result_of(run_view(app, plan, arguments, _tooldiscovery_context, name))

        call_view.__name__ = call_view.__qualname__ = name
        merged = {"description": description or f"{method} {rule.rule}", "annotations": _annotations(method),
                  "output_schema": output_schema_of(handler), **options, "name": name, "input_schema": schema}
        self._made[key] = self.registry.add_tool(tool_from_function(call_view, merged))
        log.debug("flask-tooldiscovery: view %s %s offered as tool %r", method, rule.rule, name)


__all__ = ["METHODS", "ViewTools"]
