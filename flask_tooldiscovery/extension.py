"""The Flask extension: :class:`ToolDiscovery`."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from flask import Flask, current_app, g, has_app_context, has_request_context, request

from . import config as cfg
from .auth import AuthHook
from .dialects import DIALECTS
from .invoke import Outcome, invoke
from .registry import ProviderError, ToolRegistry, ToolSet, ToolsProvider, tool_from_function
from .tool import Tool, ToolContext

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("flask_tooldiscovery")


class ToolDiscovery:
    """Offer plain Python functions as tools to AI agents, in every mounted wire dialect.

    ``tools`` is a tools provider (a list, a sync callable or an async callable returning tool
    objects); ``call_handler(name, arguments)`` runs the tools it provides. Decorate functions with
    :meth:`tool`. ``init_app`` mounts one blueprint per dialect named in
    ``TOOLDISCOVERY_DIALECTS``. The extension keeps no app: one instance serves several apps.
    """

    def __init__(
        self,
        app: Flask | None = None,
        *,
        tools: ToolsProvider | None = None,
        call_handler: Callable[..., Any] | None = None,
        auth_hook: AuthHook | None = None,
    ) -> None:
        self.registry = ToolRegistry()
        self.call_handler = call_handler
        self._auth_hook = auth_hook
        self._categories: dict[str, dict[str, Any]] = {}
        if tools is not None:
            self.registry.add_provider(tools)
        if app is not None:
            self.init_app(app)

    # -- app wiring ---------------------------------------------------------------------------

    def init_app(self, app: Flask) -> None:
        """Apply config defaults, mount the dialect blueprints and register the template filter."""
        if "tooldiscovery" in app.extensions:
            raise RuntimeError(
                "ToolDiscovery is already registered on this app. Call init_app once per app, "
                "or use the ToolDiscovery instance in app.extensions['tooldiscovery']."
            )
        for name, value in cfg.DEFAULTS.items():
            app.config.setdefault(name, list(value) if isinstance(value, list) else value)
        if not app.config["TOOLDISCOVERY_SERVER_NAME"]:
            app.config["TOOLDISCOVERY_SERVER_NAME"] = app.name
        names = self._dialect_names(app.config["TOOLDISCOVERY_DIALECTS"])
        unknown = [n for n in names if n not in DIALECTS]
        if unknown:
            raise ValueError(
                f"unknown dialect(s) in TOOLDISCOVERY_DIALECTS: {', '.join(unknown)}; "
                f"known dialects: {', '.join(sorted(DIALECTS))}"
            )
        app.extensions["tooldiscovery"] = self
        app.add_template_filter(page_settings, "tooldiscovery_page")
        for name in names:
            dialect = DIALECTS[name]
            prefix = app.config.setdefault(cfg.url_prefix_key(name), dialect.default_prefix)
            blueprint = dialect.make_blueprint(self)
            app.register_blueprint(blueprint, url_prefix=(prefix or "").rstrip("/") or None)
        if not (app.debug or app.testing):
            for name in names:
                warn = DIALECTS[name].hook("security_warning")
                message = warn(app.config, self) if warn else None
                if message:
                    app.logger.warning("flask-tooldiscovery: %s", message)
        from .cli import tools_cli

        if "tools" not in app.cli.commands:
            app.cli.add_command(tools_cli)

    @staticmethod
    def _dialect_names(value: Any) -> list[str]:
        if isinstance(value, str):
            value = value.split(",")
        names = [str(v).strip().lower() for v in (value or ()) if str(v).strip()]
        return list(dict.fromkeys(names))

    @staticmethod
    def mounted_dialects(app: Flask | None = None) -> list[str]:
        """The dialects mounted on ``app`` (default: the current app)."""
        app = app or current_app
        return ToolDiscovery._dialect_names(app.config.get("TOOLDISCOVERY_DIALECTS"))

    # -- registering tools ---------------------------------------------------------------------

    @overload
    def tool(self, func: F) -> F: ...

    @overload
    def tool(self, func: None = None, **options: Any) -> Callable[[F], F]: ...

    def tool(self, func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Register a function (sync or async) as a tool, bare or with options.

        Options: ``name``, ``description``, ``title``, ``input_schema``, ``output_schema``,
        ``annotations``, ``category``, ``tags``, ``version``, ``toolkit``, ``examples``,
        ``requirements``, ``timeout``, and the metadata ``enabled_by_default``,
        ``requires_approval``, ``rate_limit_per_minute``, ``cost_estimate``, ``long_running``,
        ``idempotent``, ``modifies_state``, ``sensitive_output``, ``auth_requirements``.
        The function is returned unchanged.
        """

        def register(fn: F) -> F:
            self.registry.add_tool(tool_from_function(fn, options))
            return fn

        if func is not None:
            if options:
                raise TypeError("use @discovery.tool or @discovery.tool(**options)")
            return register(func)  # type: ignore[arg-type]
        return register

    def add_tool(self, func: Callable[..., Any], **options: Any) -> Tool:
        """Register ``func`` as a tool without decorating it; returns the :class:`Tool`."""
        return self.registry.add_tool(tool_from_function(func, options))

    def add_provider(self, provider: ToolsProvider) -> None:
        """Add a tools provider; its tools follow those registered before it."""
        self.registry.add_provider(provider)

    def category(
        self, id: str, name: str, description: str | None = None, icon: str | None = None,
        display_order: int | None = None,
    ) -> None:
        """Declare a tool category (TDP groups tools by it); tools name it with ``category=``."""
        self._categories[id] = {
            k: v for k, v in (("id", id), ("name", name), ("description", description),
                              ("icon", icon), ("display_order", display_order)) if v is not None
        }

    def categories(self) -> list[dict[str, Any]]:
        """Categories declared with :meth:`category` and ``TOOLDISCOVERY_CATEGORIES``."""
        merged = dict(self._categories)
        for item in current_app.config.get("TOOLDISCOVERY_CATEGORIES") or ():
            if isinstance(item, Mapping) and item.get("id"):
                merged.setdefault(str(item["id"]), dict(item))
        return list(merged.values())

    def auth_hook(self, hook: AuthHook) -> AuthHook:
        """Decorator: set the explorer's auth hook (F4), called with the request before a call."""
        self._auth_hook = hook
        return hook

    @property
    def current_auth_hook(self) -> AuthHook | None:
        """The explorer's auth hook, or ``None``."""
        return self._auth_hook

    # -- per request ----------------------------------------------------------------------------

    def tools(self) -> ToolSet:
        """The tools in force for this request (providers called at most once per request)."""
        if has_app_context():
            cache = g.setdefault("_tooldiscovery_toolsets", {})
            if id(self) not in cache:
                cache[id(self)] = self.registry.resolve()
            return cache[id(self)]
        return self.registry.resolve()

    def tools_or(self, error: Callable[[], Exception]) -> ToolSet:
        """:meth:`tools`, or, when a provider fails, the failure logged (with its traceback) and
        ``error()`` raised: what each dialect answers instead (503, a JSON-RPC error...)."""
        try:
            return self.tools()
        except ProviderError:
            current_app.logger.exception("flask-tooldiscovery: a tools provider failed")
            raise error() from None

    def setting(self, name: str) -> Any:
        """The current app's value of ``TOOLDISCOVERY_<name>``."""
        return current_app.config.get(cfg.key(name))

    def make_context(self, dialect: str | None, **fields: Any) -> ToolContext:
        """A :class:`ToolContext` for a call arriving now (call id generated unless given)."""
        fields.setdefault("call_id", None)
        if not fields["call_id"]:
            fields["call_id"] = str(uuid.uuid4())
        current = request._get_current_object() if has_request_context() else None  # type: ignore[attr-defined]
        return ToolContext(dialect=dialect, request=current, **fields)

    def call(self, tool: Tool, arguments: Any, context: ToolContext, *, coerce: bool | None = None) -> Outcome:
        """Run ``tool`` through the one invocation path (validation, coercion, timing, logging)."""
        if coerce is None:
            coerce = bool(self.setting("COERCE_ARGUMENTS")) if has_app_context() else False
        logger = current_app.logger if has_app_context() else log
        return invoke(tool, arguments, context, coerce=coerce, call_handler=self.call_handler, logger=logger)


def page_settings(app_config: Mapping[str, Any]) -> dict[str, Any]:
    """Template filter ``tooldiscovery_page``: the explorer page's title and allow_execute flag.

    ``{% set page = config|tooldiscovery_page %}``; put ``page.title`` in HTML (autoescaped) and
    ``page|tojson`` in a script (``tojson`` escapes ``<``, so ``</script>`` in a title is inert).
    """
    return {
        "title": str(app_config.get("TOOLDISCOVERY_TITLE") or "Tool Explorer"),
        "allow_execute": bool(app_config.get("TOOLDISCOVERY_ALLOW_EXECUTE")),
    }


__all__ = ["ProviderError", "ToolDiscovery", "page_settings"]
