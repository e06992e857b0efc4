"""What a user registers with the extension: tools, views as tools, resources, prompts, providers and
categories. :class:`~flask_tooldiscovery.ToolDiscovery` takes these methods from :class:`Registering`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from .calls.changes import Kind
from .catalog.prompts import Prompt, PromptRegistry, prompt_from_function
from .catalog.resources import ResourceRegistry, resource_from_function
from .catalog.skills import SkillCatalog, skill_from_function, skills_from_directory
from .serving.core import merge_categories
from .settings import Settings, SettingsError
from .tools.function_tools import RegistrationError, tool_from_function
from .tools.model import Tool
from .tools.providers import ToolsProvider
from .tools.registry import ToolRegistry
from .views.register import ViewTools

if TYPE_CHECKING:
    from flask import Flask

    from .serving.core import Core

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S", bound=Callable[[], str])
#: The lists whose changes clients may hear of.
LISTS = ("tools", "prompts", "resources")


class Registering:
    """The registering half of the extension (the registries it fills are the app's tool set)."""

    registry: ToolRegistry
    resources: ResourceRegistry
    prompts: PromptRegistry
    skills: SkillCatalog
    _views: ViewTools
    if TYPE_CHECKING:
        @property
        def settings(self) -> Settings: ...
        @staticmethod
        def state(app: Flask | None = None) -> Core: ...

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
        (``["app"]``: only an interface calls it, and model-facing lists leave it out).
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

    def _skill_catalog(self, settings: Settings) -> SkillCatalog:
        """The skills an app with ``settings`` serves: those registered in code, then those of
        TOOLDISCOVERY_SKILLS_DIR (read now; a broken one is a :class:`~.settings.SettingsError`)."""
        if not settings.skills_dir:
            return SkillCatalog(list(self.skills))
        try:
            import yaml  # noqa: F401
        except ImportError:
            raise SettingsError("TOOLDISCOVERY_SKILLS_DIR needs PyYAML to read SKILL.md frontmatter: "
                                "pip install 'flask-tooldiscovery[skills]'") from None
        try:
            return SkillCatalog([*self.skills, *skills_from_directory(settings.skills_dir)])
        except (RegistrationError, OSError) as exc:
            raise SettingsError(f"TOOLDISCOVERY_SKILLS_DIR: {exc}") from None

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
