"""The Flask extension: :class:`ToolDiscovery`, what a user registers with it (tools, views, resources,
prompts, skills, providers, categories) and ``init_app``, which builds each app's core and mounts the
dialects."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast, overload

from flask import Flask, current_app, has_app_context, has_request_context, request

from . import settings as cfg
from .catalog.prompts import Prompt, PromptRegistry, prompt_from_function
from .catalog.resources import ResourceRegistry, resource_from_function
from .catalog.skills import SkillCatalog, serve_skills, skill_from_function
from .catalog.ui import watch_templates
from .dialects import BUILTIN, Dialect, load, mounts
from .identity import authorization_server
from .identity.authorization_server.settings import OAuthServerSettings
from .identity.sources import AuthHook, IdentityHook
from .observe.logs import log, show_call_log
from .runtime.invoke import Outcome, invoke
from .serving import fastpath
from .serving.authenticators import for_dialects
from .serving.core import Core, merge_categories
from .serving.pipeline import Pipeline
from .settings import Settings
from .settings_parsers import Toolset, toolset
from .state.changes import Kind
from .tasks import runner
from .tools.function_tools import tool_from_function
from .tools.model import Tool, ToolContext
from .tools.providers import ToolsProvider
from .tools.registry import ToolRegistry, ToolSet
from .views.register import ViewTools

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S", bound=Callable[[], str])
#: The lists whose changes clients may hear of.
LISTS = ("tools", "prompts", "resources")
STATE_KEY = "tooldiscovery.state"
PIPELINES_KEY = "tooldiscovery.pipelines"
TOOLSETS_KEY = "tooldiscovery.toolsets"


class ToolDiscovery:
    """Offer plain Python functions as tools to AI agents, in every mounted wire dialect.

    ``tools`` is a tools provider (a list, a sync callable or an async callable returning tool
    objects); ``call_handler(name, arguments)`` runs the tools it provides. Decorate functions with
    :meth:`tool`. ``init_app`` mounts one blueprint per dialect named in
    ``TOOLDISCOVERY_DIALECTS``; ``dialects`` adds dialects of your own to the ones this package
    ships. The extension keeps no app: one instance serves several apps.
    """

    def __init__(
        self,
        app: Flask | None = None,
        *,
        tools: ToolsProvider | None = None,
        call_handler: Callable[..., Any] | None = None,
        auth_hook: AuthHook | None = None,
        identity: IdentityHook | None = None,
        dialects: Iterable[Dialect] = (),
    ) -> None:
        self.registry = ToolRegistry()
        self.resources = ResourceRegistry()
        self.prompts = PromptRegistry()
        self.skills = SkillCatalog()
        self.call_handler = call_handler
        self._auth_hook = auth_hook
        self._identity_hook = identity
        self._oauth_user: Callable[[], str | None] | None = None
        self._dialects: dict[str, Dialect | str] = dict(BUILTIN)
        self._views = ViewTools(self.registry)
        self._toolsets: dict[str, Toolset] = {}
        for dialect in dialects:
            self.add_dialect(dialect)
        if tools is not None:
            self.registry.add_provider(tools)
        if app is not None:
            self.init_app(app)

    # -- registering tools ---------------------------------------------------------------------

    @overload
    def tool(self, func: F) -> F: ...

    @overload
    def tool(self, func: None = None, **options: Any) -> Callable[[F], F]: ...

    def tool(self, func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Register a function (sync or async) as a tool, bare or with options.

        Options: ``name``, ``description``, ``title``, ``input_schema``, ``output_schema``,
        ``annotations``, ``category``, ``tags``, ``version``, ``toolkit``, ``examples``,
        ``requirements``, ``timeout``, ``icons`` (``{src, mimeType, sizes, theme}`` dicts or URLs a
        client may show beside it), and the metadata ``enabled_by_default``,
        ``requires_approval``, ``rate_limit_per_minute``, ``cost_estimate``, ``long_running``,
        ``idempotent``, ``modifies_state``, ``sensitive_output``, ``auth_requirements``, ``task_support``
        (may a protocol run its calls as tasks: MCP), ``questions`` (asked before it runs), and
        ``result_mime_type`` (the MIME type of the ``bytes`` it returns: an image, audio or file);
        Opal's per-function fields ``sensitive``, ``wait``, ``skippable_interaction``, ``in_context``,
        ``principal_scope``, and ``rollback`` (a function, or another tool's name, that undoes it);
        ``ui`` (its interface: a template name, or a :class:`~.catalog.ui.UI`) and ``visibility``
        (``["app"]``: only an interface calls it, and model-facing lists leave it out); ``proteus``
        (its interface for Opal: a Proteus document, or a template name rendering one as JSON).
        The function is returned unchanged.
        """

        def register(fn: F) -> F:
            self.registry.add_tool(tool_from_function(fn, options))
            return fn

        if func is not None:
            if options:
                raise TypeError("use @discovery.tool or @discovery.tool(**options)")
            return register(func)
        return register

    def add_tool(self, func: Callable[..., Any], **options: Any) -> Tool:
        """Register ``func`` as a tool without decorating it; returns the :class:`Tool`."""
        return self.registry.add_tool(tool_from_function(func, options))

    def add_view(self, view: Any, *, method: str | None = None, **options: Any) -> None:
        """Offer an existing Flask view (an endpoint name such as ``"pets.list"``, or the view
        function or MethodView class) as a tool. Its input schema comes from the schemas it declares
        (flask-smorest, webargs, an apispec docstring), else its URL rule and docstring; calls run the
        view through the app with the caller's headers, so its own auth, validation and error
        handlers apply. ``method`` picks one of several it serves; ``options`` are :meth:`tool`'s
        (``name``, ``description``, ``annotations``...). Resolved by ``init_app``: register the view
        (or its blueprint) first."""
        self._views.add_view(view, method, **options)

    def add_views(self, *, blueprint: Any = None, rule: str | None = None, include: Iterable[str] | None = None,
                  exclude: Iterable[str] = (), methods: Iterable[str] = ("GET", "POST", "PUT", "PATCH", "DELETE"),
                  **options: Any) -> None:
        """Offer many views as tools (see :meth:`add_view`): those of ``blueprint`` (a name or a
        Blueprint), those whose URL rule matches the glob ``rule`` (``"/api/pets*"``), those whose
        endpoint matches a glob in ``include``; less the endpoints matching a glob in ``exclude``.
        Each tool is named after its endpoint (and its method when the rule serves several)."""
        self._views.add_views(blueprint=blueprint, rule=rule, include=include, exclude=exclude, methods=methods,
                              **options)

    def resource(self, uri: str, **options: Any) -> Callable[[F], F]:
        """Decorator: register a function (sync or async) as a readable resource at ``uri``, a
        fixed URI or a template (``"reports://{report_id}"``: each variable is a string argument).
        It returns bytes, text, a JSON value or an ``Image``/``Audio``/``File``; ``None`` means
        not found. A ``ToolContext`` parameter receives the caller. Options: ``name``, ``title``,
        ``description``, ``mime_type``, ``scopes``, ``icons``, and ``complete`` (``{variable:
        fn(value, arguments) -> list of suggestions}``; a ``Literal`` or ``Enum`` variable is
        completed from its values). MCP serves them with TOOLDISCOVERY_MCP_RESOURCES."""

        def register(fn: F) -> F:
            self.resources.add(resource_from_function(fn, uri, options))
            return fn

        return register

    def interaction(self, func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Register a function (sync or async) as an interaction: a handler a platform's UI calls
        (Opal's ``POST <prefix>/interactions/execute``), never listed to the model. Bare or with
        :meth:`tool`'s options (``name``, ``description``...); its calls go through the same
        identity, limits and signals as a tool's. The function is returned unchanged."""

        def register(fn: F) -> F:
            self.registry.add_interaction(tool_from_function(fn, options))
            return fn

        return register(func) if func is not None else register

    @overload
    def prompt(self, func: F) -> F: ...

    @overload
    def prompt(self, func: None = None, **options: Any) -> Callable[[F], F]: ...

    def prompt(self, func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Register a function (sync or async) as a prompt, bare or with options: its parameters
        are the prompt's arguments (strings turned into their declared types; required without a
        default; a ``ToolContext`` parameter receives the caller), and it returns text, a
        ``Message``, an ``Image``/``Audio``/``File``/``ResourceLink``, an ``EmbeddedResource``, or a
        list of them (one message each). Options: ``name``, ``title``, ``description``, ``scopes``,
        ``icons``, and ``complete`` (``{argument: fn(value, arguments) -> list of suggestions}``; a
        ``Literal`` or ``Enum`` argument is completed from its values). The function is returned
        unchanged; MCP serves prompts as soon as one is registered."""

        def register(fn: F) -> F:
            self.prompts.add(prompt_from_function(fn, options))
            return fn

        if func is not None:
            if options:
                raise TypeError("use @discovery.prompt or @discovery.prompt(**options)")
            return register(func)
        return register

    def add_prompt(self, func: Callable[..., Any], **options: Any) -> Prompt:
        """Register ``func`` as a prompt without decorating it; returns the :class:`Prompt`."""
        return self.prompts.add(prompt_from_function(func, options))

    @overload
    def skill(self, func: S) -> S: ...

    @overload
    def skill(self, func: None = None, **options: Any) -> Callable[[S], S]: ...

    def skill(self, func: Callable[[], str] | None = None, **options: Any) -> Any:
        """Register a function as an Agent Skill whose ``SKILL.md`` it writes on each read: it
        returns the markdown body; the frontmatter comes from ``name`` (default: the function's
        name, ``_`` as ``-``), ``description`` (default: the docstring's first paragraph) and
        ``frontmatter`` (more fields); ``path`` places it (``"reports/daily"``: the last segment is
        the name). MCP serves it (``skill://<path>/SKILL.md``) with ``resources: "dynamic"``; skills
        with files and digests come from a folder: TOOLDISCOVERY_SKILLS_DIR."""

        def register(fn: S) -> S:
            self.skills.add(skill_from_function(fn, options))
            return fn

        return register(func) if func is not None else register

    def resource_changed(self, uri: str, app: Flask | None = None) -> bool:
        """Tell the MCP clients subscribed to the resource at ``uri`` (with
        TOOLDISCOVERY_MCP_SUBSCRIPTIONS) that it changed, on whichever worker they listen (``app``:
        default the current one). False when the state store could not be reached."""
        return self.state(app).announce("resource", uri)

    def list_changed(self, *kinds: str, app: Flask | None = None) -> bool:
        """Tell subscribed clients that these lists changed (``"tools"``, ``"prompts"``,
        ``"resources"``; default all three), e.g. when a provider's tools differ now. Registering
        after ``init_app`` announces itself. False when the state store could not be reached."""
        unknown = [k for k in kinds if k not in LISTS]
        if unknown:
            raise ValueError(f"list_changed takes 'tools', 'prompts' or 'resources', not {unknown[0]!r}")
        core, reached = self.state(app), True
        for kind in kinds or LISTS:
            reached = core.announce(cast(Kind, kind)) and reached
        return reached

    def add_provider(self, provider: ToolsProvider) -> None:
        """Add a tools provider; its tools follow those registered before it."""
        self.registry.add_provider(provider)

    def category(
        self, id: str, name: str, description: str | None = None, icon: str | None = None,
        display_order: int | None = None,
    ) -> None:
        """Declare a tool category (TDP groups tools by it); tools name it with ``category=``."""
        self.registry.add_category(id, {
            k: v for k, v in (("id", id), ("name", name), ("description", description),
                              ("icon", icon), ("display_order", display_order)) if v is not None
        })

    def categories(self, settings: Settings | None = None) -> list[dict[str, Any]]:
        """Categories declared with :meth:`category` and ``TOOLDISCOVERY_CATEGORIES``."""
        return merge_categories(self.registry.categories, (settings or self.settings).categories)

    # -- dialects -------------------------------------------------------------------------------

    def add_dialect(self, dialect: Dialect) -> Dialect:
        """Add (or replace) a dialect in this extension's table, before ``init_app``."""
        if not dialect.name.isidentifier():
            raise ValueError(f"dialect name {dialect.name!r} must be an identifier")
        self._dialects[dialect.name] = dialect
        return dialect

    def dialect(self, name: str) -> Dialect:
        """The dialect ``name`` of this extension's table (``KeyError`` if unknown)."""
        entry = self._dialects[name]
        if isinstance(entry, str):
            entry = self._dialects[name] = load(entry)
        return entry

    @property
    def dialect_names(self) -> list[str]:
        """Every dialect this extension can mount."""
        return list(self._dialects)

    def mount_toolset(self, name: str, *, tags: Iterable[str], dialects: Iterable[str] = ("mcp",),
                      title: str | None = None, description: str | None = None) -> None:
        """Serve the tools with one of ``tags`` again at ``<prefix>/x/<name>`` of each of ``dialects``
        (before ``init_app``), as ``TOOLDISCOVERY_TOOLSETS`` does; a bad name or no tags raise here."""
        self._toolsets[name] = toolset("mount_toolset", name, {"tags": list(tags), "dialects": list(dialects),
                                                               "title": title, "description": description})

    # -- app wiring ---------------------------------------------------------------------------

    def init_app(self, app: Flask) -> None:
        """Check the settings, mount the dialect blueprints and register the template filter.

        A wrong ``TOOLDISCOVERY_*`` value raises :class:`~flask_tooldiscovery.SettingsError` here, naming the key.
        """
        if "tooldiscovery" in app.extensions:
            raise RuntimeError(
                "ToolDiscovery is already registered on this app. Call init_app once per app, "
                "or use the ToolDiscovery instance in app.extensions['tooldiscovery']."
            )
        table = {name: self.dialect(name) for name in self._dialects}
        blocks = [*(d.settings for d in table.values() if d.settings is not None), OAuthServerSettings]
        cfg.apply_defaults(app.config, blocks)
        defaults = {name: d.default_prefix for name, d in table.items()}
        settings = cfg.build_settings(app.config, app_name=app.name, default_prefixes=defaults, blocks=blocks,
                                      default_dialects=BUILTIN)
        show_call_log(settings.call_log)  # before the core, which says at INFO how many calls run at once
        # rate limits, tracing, metrics: checked (in the core) before anything is mounted
        core = Core(self.registry, self.resources, settings, call_handler=self.call_handler,
                    dialects=table, prompts=self.prompts, trusted_hosts=app.config.get("TRUSTED_HOSTS"),
                    skills=serve_skills(self.skills, settings.skills_dir))
        authenticators = for_dialects(settings, {name: self.dialect(name) for name in settings.dialects},
                                      identity_hook=self._identity_hook, auth_hook=self._auth_hook)
        self._views.resolve(app)  # views offered with add_view(s): the app's URL map holds them by now
        watch_templates(app, self.registry.registered, self.registry.checks)  # each UI's template, now and later
        pipelines: dict[str, Pipeline] = {}
        for name in settings.dialects:
            dialect = self.dialect(name)
            pipelines[name] = Pipeline(core, dialect, authenticators[name], mounted=pipelines)
            if dialect.tool_key is not None:
                self.registry.add_unique_key(f"{name} id", dialect.tool_key(settings))
        app.extensions["tooldiscovery"] = self
        app.extensions[STATE_KEY] = core
        app.extensions[PIPELINES_KEY] = pipelines
        finishers = {name: finish for name in pipelines if (finish := self.dialect(name).finish_task) is not None}
        carried = {name: headers for name in pipelines if (headers := self.dialect(name).task_headers)}
        app.extensions[runner.EXTENSION_KEY] = runner.Tasks(app, settings, pipelines, finishers, carried)
        app.extensions[TOOLSETS_KEY] = in_toolsets = mounts.build(
            core, table, mounts.toolsets(settings, self._toolsets, table), authenticators, pipelines)
        more = mounts.register(app, table, pipelines, in_toolsets, authenticators)  # + the read-only mounts
        authorization_server.install(app, settings, core.guard.check, self._oauth_user)
        app.extensions["tooldiscovery.fast"] = fastpath.install(app, mounts.post_paths(pipelines, in_toolsets, more))
        if settings.metrics and settings.metrics_path:
            from .observe import metrics

            app.register_blueprint(metrics.blueprint(settings, app.config.get("TRUSTED_HOSTS")))
        from .cli.commands import read_only_cli, tools_cli

        if settings.warn_unauthenticated and not (app.debug or app.testing or read_only_cli()):
            warnings = [w for name, pipe in pipelines.items() if (check := self.dialect(name).security_warning)
                        and (w := check(settings, pipe.authenticator))]
            if warnings:
                log.warning("flask-tooldiscovery: %s", "; ".join(warnings))
        if "tools" not in app.cli.commands:
            app.cli.add_command(tools_cli)

    def identity(self, hook: IdentityHook) -> IdentityHook:
        """Decorator: set the identity hook (before ``init_app``), ``hook(request) -> Identity | None``
        (sync or async). Every dialect's tool calls then need an identity; ``None`` or raising refuses."""
        self._identity_hook = hook
        return hook

    def oauth_user(self, hook: Callable[[], str | None]) -> Callable[[], str | None]:
        """Decorator: who is signed in, for the OAuth authorization server of an app without
        Flask-Login (before ``init_app``): ``hook()`` returns the user id string, or ``None``."""
        self._oauth_user = hook
        return hook

    @staticmethod
    def state(app: Flask | None = None) -> Core:
        """What ``init_app`` built for ``app`` (default: the current app): its core, which holds
        its tools, settings and call services."""
        app = app or current_app
        return app.extensions[STATE_KEY]  # type: ignore[no-any-return]

    @property
    def settings(self) -> Settings:
        """The current app's :class:`~.settings.Settings`."""
        return self.state().settings

    @staticmethod
    def pipelines(app: Flask | None = None) -> dict[str, Pipeline]:
        """The pipelines of the dialects mounted on ``app`` (default: the current app), by name."""
        mounted: dict[str, Pipeline] = (app or current_app).extensions[PIPELINES_KEY]
        return mounted

    @staticmethod
    def toolset_pipelines(app: Flask | None = None) -> dict[str, dict[str, Pipeline]]:
        """The pipelines of the toolsets mounted on ``app`` (default: the current app), by toolset then dialect."""
        mounted: dict[str, dict[str, Pipeline]] = (app or current_app).extensions[TOOLSETS_KEY]
        return mounted

    def pipeline(self, name: str, app: Flask | None = None) -> Pipeline:
        """The current app's pipeline of dialect ``name`` (a detached one when it is not mounted)."""
        app = app or current_app
        mounted: dict[str, Pipeline] = app.extensions[PIPELINES_KEY]
        if name in mounted:
            return mounted[name]
        core, dialect = self.state(app), self.dialect(name)
        return Pipeline(core, dialect, dialect.authenticator(core.settings) if dialect.authenticator else None,
                        mounted=dict(mounted))

    @staticmethod
    def mounted_dialects(app: Flask | None = None) -> list[str]:
        """The dialects mounted on ``app`` (default: the current app)."""
        return list(ToolDiscovery.state(app).settings.dialects)

    def auth_hook(self, hook: AuthHook) -> AuthHook:
        """Decorator: set the explorer's auth hook (F4, before ``init_app``): ``hook(request)``
        returns a context manager (sync or async) the call runs inside; raising refuses it (401)."""
        self._auth_hook = hook
        return hook

    # -- per request ----------------------------------------------------------------------------

    def tools(self) -> ToolSet:
        """The tools in force for this request (providers called at most once per request)."""
        if has_app_context() and STATE_KEY in current_app.extensions:
            return self.state().tools()
        return self.registry.resolve()

    def make_context(self, dialect: str | None, **fields: Any) -> ToolContext:
        """A :class:`ToolContext` for a call made outside a dialect (the CLI, your own code)."""
        fields.setdefault("call_id", None)
        if not fields["call_id"]:
            fields["call_id"] = str(uuid.uuid4())
        current = request._get_current_object() if has_request_context() else None  # type: ignore[attr-defined]
        return ToolContext(dialect=dialect, request=current, **fields)

    def call(self, tool: Tool, arguments: Any, context: ToolContext, *, coerce: bool | None = None,
             max_errors: int | None = None) -> Outcome:
        """Run ``tool`` through the one invocation path (validation, coercion, timing, logging), with the
        app's settings, or outside an app their defaults (the same default deadline, 25 s)."""
        if has_app_context() and STATE_KEY in current_app.extensions:
            return self.state().call(tool, arguments, context, coerce=coerce, max_errors=max_errors)
        return invoke(tool, arguments, context, coerce=bool(coerce), call_handler=self.call_handler, logger=log,
                      max_errors=max_errors, default_timeout=cfg.DEFAULTS["DEFAULT_TIMEOUT"])


__all__ = ["ToolDiscovery"]
