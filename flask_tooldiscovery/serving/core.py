"""What the serving layer is handed by ``init_app``: one :class:`Core` per app, and each mounted
dialect as a :class:`Translator` (what the pipeline reads of it).

The core holds the app's tools (the registry, resources and prompts), its settings, its call services
(call slots, rate limits, tracing and metrics) and the request guard, and runs tool calls. Each
mounted dialect's pipeline (:mod:`.pipeline`) gets it; nothing in the serving layer or below
knows the extension that built it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from flask import has_app_context

from ..calls.approvals import approved_tools
from ..calls.slots import Slots
from ..catalog.prompts import PromptRegistry
from ..catalog.resources import ResourceRegistry
from ..catalog.skills import SkillCatalog
from ..errors import CoreError, Unavailable
from ..identity.authorization_server.settings import OAuthServerSettings
from ..observe.logs import log
from ..runtime.invoke import Outcome, invoke
from ..search import semantic
from ..search.indexes import SearchIndexes
from ..settings import Settings, SettingsError
from ..state import changes, once, resource_subscriptions
from ..state.changes import Change, Kind
from ..state.once import Once
from ..tools.model import Tool, ToolContext
from ..tools.registry import ToolRegistry, ToolSet
from . import request_state, worker_threads
from .fastpath import Learnable
from .guard import Guard
from .operations import Operations
from .worker_threads import Worker, call_slots


class Translator(Protocol):
    """What the pipeline reads of a dialect (the ``Dialect`` contract has more)."""

    @property
    def name(self) -> str: ...
    @property
    def default_prefix(self) -> str: ...
    @property
    def public_discovery(self) -> bool: ...
    @property
    def cors_headers(self) -> tuple[str, ...]: ...
    @property
    def learnable(self) -> Learnable: ...
    @property
    def exposed_headers(self) -> tuple[str, ...]: ...
    @property
    def error_response(self) -> Callable[[CoreError], tuple[Any, int]]: ...
    @property
    def lists_app_tools(self) -> bool: ...


def merge_categories(declared: Mapping[str, Mapping[str, Any]],
                     configured: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Categories declared in code, then those of ``TOOLDISCOVERY_CATEGORIES`` with another id."""
    merged = {key: dict(value) for key, value in declared.items()}
    for item in configured:
        merged.setdefault(str(item["id"]), dict(item))
    return list(merged.values())


class Core:
    """One app's tools, settings and call services, shared by its dialects' pipelines."""

    def __init__(self, registry: ToolRegistry, resources: ResourceRegistry, settings: Settings, *,
                 call_handler: Callable[..., Any] | None = None,
                 dialects: Mapping[str, Translator] | None = None, trusted_hosts: Iterable[str] | None = None,
                 prompts: PromptRegistry | None = None, skills: SkillCatalog | None = None) -> None:
        self.registry = registry
        self.resources = resources
        #: The prompts registered with ``@discovery.prompt``, in registration order.
        self.prompts = prompts if prompts is not None else PromptRegistry()
        #: The Agent Skills the app serves (``@discovery.skill``, ``TOOLDISCOVERY_SKILLS_DIR``).
        self.skills = skills if skills is not None else SkillCatalog()
        self.settings = settings
        self.call_handler = call_handler
        #: What the server runs, as the settings or gunicorn's ``post_fork`` hook said (``None``: not said).
        self.server = (worker_threads.from_settings(settings.server_threads, settings.server_workers)
                       or worker_threads.told())
        #: Tool calls running at once in this worker (``TOOLDISCOVERY_MAX_CONCURRENT_CALLS``, else
        #: worked out from the server's threads per worker, so one stays free for discovery).
        self.slots = Slots(call_slots(settings.max_concurrent_calls, self.server), settings.busy_retry_after)
        #: The last provider-made tool set found to need nothing once (or accepted): not checked again.
        self._once_checked: ToolSet | None = None
        self._check_workers(self.server)
        registry.checks.add(self._check_registered)  # a view resolved at init_app, a tool added later
        if self.server is None:  # loaded before gunicorn's worker forked (--preload): it may say so later
            worker_threads.listen(self._server_said)
        #: Rate limits, tracing and metrics (checked here, so a bad setting fails at ``init_app``).
        self.operations = Operations(settings)
        self.guard = Guard(settings, trusted_hosts)
        #: Tool-search indexes, one per tool set searched (a caller's visible set is one).
        self.search_indexes = SearchIndexes(meaning=semantic.meaning() if settings.tool_search_semantic else None)
        #: Every dialect of the extension's table, by name, mounted or not (the manifest lists them).
        self.dialects: Mapping[str, Translator] = dict(dialects or {})
        #: Where changes are announced to every worker, and where clients' resource subscriptions are
        #: kept (this process, or the state store of ``TOOLDISCOVERY_STATE_STORAGE_URI``).
        self.changes = changes.for_uri(settings.state_storage_uri)
        self.resource_subscriptions = resource_subscriptions.for_uri(settings.state_storage_uri)
        registry.watchers.watch(self._tools_changed)
        resources.watchers.watch(self._resources_changed)
        self.prompts.watchers.watch(self._prompts_changed)

    def _server_said(self, worker: Worker) -> None:
        """gunicorn's hook told this worker process what it runs, after the app was built."""
        self.server = worker
        self.slots.limit = call_slots(self.settings.max_concurrent_calls, worker)
        self._check_workers(worker)  # refusing here stops the worker before it boots: gunicorn halts

    def _check_workers(self, worker: Worker | None) -> None:
        """Several workers without a shared state store: refused when something must happen once,
        else warned about."""
        settings = self.settings
        self._once_checked = None  # a provider's tools are checked again against what the server said
        worker_threads.refuse_unshared_once(worker, settings.state_storage_uri, self.once_only(),
                                            per_process=settings.state_per_process)
        worker_threads.warn_unshared_state(worker, settings.state_storage_uri, oauth=self._oauth_server)

    def _check_registered(self, tool: object) -> None:
        """The start check, for a tool registered after the core was built (a view ``init_app``
        resolves, a tool added later): refused (:class:`~flask_tooldiscovery.settings.SettingsError`,
        at its registration) when it needs something done once the workers cannot share."""
        if isinstance(tool, Tool):
            settings = self.settings
            worker_threads.refuse_unshared_once(self.server, settings.state_storage_uri, self.once_of([tool]),
                                                per_process=settings.state_per_process)

    def _check_provided(self, toolset: ToolSet) -> ToolSet:
        """The start check, for the tools a provider gave (at their first use): a set with a tool
        that needs something done once the workers cannot share is not served (503, logged)."""
        if toolset is self._once_checked:
            return toolset
        settings = self.settings
        try:
            worker_threads.refuse_unshared_once(self.server, settings.state_storage_uri,
                                                self.once_of(toolset.tools), per_process=settings.state_per_process)
        except SettingsError as exc:
            log.error("flask-tooldiscovery: a tools provider's tools are not served: %s", exc)
            raise Unavailable("A tools provider's tools need state every worker shares; see the server's log.",
                              reason=str(exc)) from None
        self._once_checked = toolset
        return toolset

    def once_of(self, tools: Iterable[Tool]) -> list[str]:
        """What calls of ``tools`` must do once whichever worker they reach: spend a sealed
        approval, run a rollback."""
        tools = list(tools)
        approved = approved_tools(tools, destructive=self.settings.approve_destructive)
        found = []
        for what, names in (("sealed approvals", approved),
                            ("rollbacks", [t.name for t in tools if t.metadata.get("rollback")])):
            if names:
                found.append(f"{what} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})")
        return found

    def once_only(self) -> list[str]:
        """What this app must do once whichever worker a request reaches: take an epi-hmac nonce,
        spend a sealed approval or run a rollback (of the tools registered so far; those registered
        later are checked at registration, a provider's at their first use), use an OAuth code or
        refresh token."""
        settings = self.settings
        found = ["epi-hmac nonces"] if settings.epi_hmac_app_key and settings.epi_hmac_secret else []
        found += self.once_of(self.registry.registered)
        if self._oauth_server:
            found.append("OAuth codes and refresh tokens")
        return found

    @property
    def _oauth_server(self) -> bool:
        """The app is its own OAuth authorization server (its records are state the workers must share)."""
        block = self.settings.blocks.get(OAuthServerSettings)
        return isinstance(block, OAuthServerSettings) and block.enabled

    def announce(self, kind: Kind, uri: str | None = None) -> bool:
        """Tell every worker's subscribed clients that the ``kind`` list changed (``tools``,
        ``prompts``, ``resources``), or that the resource at ``uri`` did (``resource``); False when
        the state store could not be reached."""
        return self.changes.publish(Change(kind, uri if kind == "resource" else None))

    def _tools_changed(self) -> None:
        self.announce("tools")

    def _resources_changed(self) -> None:
        self.announce("resources")

    def _prompts_changed(self) -> None:
        self.announce("prompts")

    def tools(self) -> ToolSet:
        """The tools in force for this request (providers called at most once per request)."""
        static = self.registry.static
        if static is not None:  # no provider: one set for every request, nothing to keep per request
            return static
        if not has_app_context():
            return self._check_provided(self.registry.resolve())
        state = request_state.current()
        if state.toolsets is None:
            state.toolsets = {}
        found = state.toolsets.get(id(self))
        if found is None:
            found = state.toolsets[id(self)] = self._check_provided(self.registry.resolve())
        return found

    def once_records(self) -> Once:
        """The app's records of work done once, whichever worker or host a request reaches (in the
        state store of ``TOOLDISCOVERY_STATE_STORAGE_URI``, else this app's own in this process)."""
        return once.for_uri(self.settings.state_storage_uri, self)

    def categories(self) -> list[dict[str, Any]]:
        """The tool categories declared in code (the registry's) and in ``TOOLDISCOVERY_CATEGORIES``
        (those of the same id declared in code win)."""
        return merge_categories(self.registry.categories, self.settings.categories)

    def call(self, tool: Tool, arguments: Any, context: ToolContext, *, coerce: bool | None = None,
             max_errors: int | None = None) -> Outcome:
        """Run ``tool`` through the one invocation path (validation, coercion, timing, logging,
        ``TOOLDISCOVERY_DEFAULT_TIMEOUT`` for a tool without its own ``timeout``), with no guard,
        limit or slot: :meth:`.pipeline.Pipeline.invoke` adds those."""
        if coerce is None:
            coerce = self.settings.coerce_arguments
        return invoke(tool, arguments, context, coerce=coerce, call_handler=self.call_handler, logger=log,
                      max_errors=max_errors, default_timeout=self.settings.default_timeout)


__all__ = ["Core", "Translator", "merge_categories"]
