"""The Flask extension: :class:`ToolDiscovery`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

import click
from flask import Flask, current_app, has_app_context, has_request_context, request
from flask.cli import FlaskGroup, run_command

from . import settings as cfg
from .calls import single_use
from .catalog.prompts import PromptRegistry
from .catalog.resources import ResourceRegistry
from .catalog.skills import SkillCatalog
from .catalog.ui import check_templates
from .dialects import BUILTIN, Dialect, load
from .identity.sources import Authenticator, AuthHook, AuthHookVerifier, HookVerifier, IdentityHook, Verifier
from .identity.tokens import check_required_claims
from .identity.verifiers import ApiKeyVerifier, BearerVerifier, JwksVerifier, JwtVerifier, OAuthResourceVerifier
from .observe.logs import log, show_call_log
from .registering import Registering
from .runtime.invoke import Outcome, invoke
from .serving import fastpath, tasks
from .serving.core import Core
from .serving.epi_hmac import EpiHmacVerifier, decode_secret
from .serving.pipeline import Pipeline
from .settings import Settings, SettingsError
from .tools.model import Tool, ToolContext
from .tools.providers import ToolsProvider
from .tools.registry import ToolRegistry, ToolSet
from .views.register import ViewTools

STATE_KEY = "tooldiscovery.state"
PIPELINES_KEY = "tooldiscovery.pipelines"


class ToolDiscovery(Registering):
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
        self._dialects: dict[str, Dialect | str] = dict(BUILTIN)
        self._views = ViewTools(self.registry)
        for dialect in dialects:
            self.add_dialect(dialect)
        if tools is not None:
            self.registry.add_provider(tools)
        if app is not None:
            self.init_app(app)

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
        blocks = [d.settings for d in table.values() if d.settings is not None]
        cfg.apply_defaults(app.config, blocks)
        defaults = {name: d.default_prefix for name, d in table.items()}
        settings = cfg.build_settings(app.config, app_name=app.name, default_prefixes=defaults, blocks=blocks,
                                      default_dialects=BUILTIN)
        show_call_log(settings.call_log)  # before the core, which says at INFO how many calls run at once
        # rate limits, tracing, metrics: checked (in the core) before anything is mounted
        core = Core(self.registry, self.resources, settings, call_handler=self.call_handler,
                    dialects=table, prompts=self.prompts,
                    trusted_hosts=app.config.get("TRUSTED_HOSTS"), skills=self._skill_catalog(settings))
        authenticators = self._authenticators(settings)
        self._views.resolve(app)  # views offered with add_view(s): the app's URL map holds them by now
        check_templates(app, self.registry.registered)  # every tool UI's template exists and compiles
        pipelines: dict[str, Pipeline] = {}
        for name in settings.dialects:
            dialect = self.dialect(name)
            pipelines[name] = Pipeline(core, dialect, authenticators[name], mounted=pipelines)
            if dialect.tool_key is not None:
                self.registry.add_unique_key(f"{name} id", dialect.tool_key(settings))
        app.extensions["tooldiscovery"] = self
        app.extensions[STATE_KEY] = core
        app.extensions[PIPELINES_KEY] = pipelines
        app.extensions[tasks.EXTENSION_KEY] = tasks.Tasks(app, settings, pipelines)
        for name, pipeline in pipelines.items():
            dialect = self.dialect(name)
            app.register_blueprint(dialect.make_blueprint(pipeline), url_prefix=pipeline.prefix or None)
            root = dialect.root_blueprint(pipeline) if dialect.root_blueprint else None
            if root is not None:
                app.register_blueprint(root)
        app.extensions["tooldiscovery.fast"] = fastpath.install(app)
        if settings.metrics and settings.metrics_path:
            from .observe import metrics

            app.register_blueprint(metrics.blueprint(settings, app.config.get("TRUSTED_HOSTS")))
        if settings.warn_unauthenticated and not (app.debug or app.testing or _read_only_cli()):
            warnings = [w for name, pipe in pipelines.items() if (check := self.dialect(name).security_warning)
                        and (w := check(settings, pipe.authenticator))]
            if warnings:
                log.warning("flask-tooldiscovery: %s", "; ".join(warnings))
        from .cli.commands import tools_cli

        if "tools" not in app.cli.commands:
            app.cli.add_command(tools_cli)

    def _authenticators(self, settings: Settings) -> dict[str, Authenticator | None]:
        """Each mounted dialect's credentials: its own settings' verifiers, plus the identity layer's
        (the identity hook, JWKS-verified JWTs) unless it is named in ``OPEN_DIALECTS``, plus the
        auth hook for a dialect that takes it. Refuses a mix of protected dialects and dialects
        that would run the same tools for anyone."""
        shared: list[Verifier] = []
        if self._identity_hook is not None:
            shared.append(HookVerifier(self._identity_hook, "tools"))
        if settings.bearer_token:
            shared.append(BearerVerifier(settings.bearer_token, "tools"))
        if settings.api_key:
            shared.append(ApiKeyVerifier(settings.api_key, settings.api_key_header, "tools"))
        if settings.jwt_secret:
            shared.append(JwtVerifier(settings.jwt_secret, "tools", audience=settings.jwt_audience,
                                      issuer=settings.jwt_issuer, required_claims=settings.jwt_required_claims))
        if settings.jwt_jwks_url:
            shared.append(JwksVerifier(settings.jwt_jwks_url, "tools", issuer=settings.jwt_issuer,
                                       audience=settings.jwt_audience, algorithms=settings.jwt_algorithms,
                                       cooldown=settings.jwt_jwks_cooldown,
                                       required_claims=settings.jwt_required_claims))
        if settings.epi_hmac_app_key and settings.epi_hmac_secret:
            shared.append(EpiHmacVerifier(settings.epi_hmac_app_key, decode_secret(settings.epi_hmac_secret), "tools",
                                          ledger=single_use.for_uri(settings.state_storage_uri),
                                          max_body=settings.max_content_length))
            log.info("flask-tooldiscovery: epi-hmac signed requests accepted; each nonce once, remembered %s",
                     "in the state store" if settings.state_storage_uri else "in this process only")
        out: dict[str, Authenticator | None] = {}
        for name in settings.dialects:
            dialect = self.dialect(name)
            own = dialect.authenticator(settings) if dialect.authenticator is not None else None
            if shared and name not in settings.open_dialects:
                own = (own or Authenticator(())).including(shared, protect_discovery=settings.auth_discovery)
            elif own is not None and settings.auth_discovery:
                own = own.including((), protect_discovery=True)
            if self._auth_hook is not None and dialect.takes_auth_hook:  # calls only: discovery stays as it was
                own = (own or Authenticator(())).including([AuthHookVerifier(self._auth_hook, name)])
            out[name] = own
        _check_jwks_keys(settings, out)
        check_required_claims(settings, out.values())
        running = [n for n in out if self.dialect(n).runs_tools(settings)]
        protected = [n for n in running if out[n] is not None]
        open_ones = [n for n in running if n not in protected and n not in settings.open_dialects]
        if protected and open_ones:
            raise SettingsError(
                f"{', '.join(protected)} need credentials but {', '.join(open_ones)} would run the same tools "
                f"for anyone: protect them too, or name them in TOOLDISCOVERY_OPEN_DIALECTS if that is meant")
        return out

    def identity(self, hook: IdentityHook) -> IdentityHook:
        """Decorator: set the identity hook (before ``init_app``), ``hook(request) -> Identity | None``
        (sync or async). Every dialect's tool calls then need an identity; ``None`` or raising refuses."""
        self._identity_hook = hook
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
        """Run ``tool`` through the one invocation path (validation, coercion, timing, logging)."""
        if has_app_context() and STATE_KEY in current_app.extensions:
            return self.state().call(tool, arguments, context, coerce=coerce, max_errors=max_errors)
        return invoke(tool, arguments, context, coerce=bool(coerce), call_handler=self.call_handler, logger=log,
                      max_errors=max_errors)


def _check_jwks_keys(settings: Settings, authenticators: dict[str, Authenticator | None]) -> None:
    """Refuse the keys of JWKS-verified tokens set where no dialect verifies one: they would change nothing."""
    verifiers = [v for auth in authenticators.values() if auth is not None for v in auth.verifiers]
    if any(isinstance(v, (JwksVerifier, OAuthResourceVerifier)) for v in verifiers):
        return
    defaults = {spec.name: spec.default for spec in cfg.SPECS}
    changed = [cfg.key(name) for name, value in (("JWT_ALGORITHMS", list(settings.jwt_algorithms)),
                                                 ("JWT_JWKS_COOLDOWN", settings.jwt_jwks_cooldown))
               if value != defaults[name]]
    if changed:
        raise SettingsError(f"{', '.join(changed)} only apply to tokens verified with a JWKS: set "
                            f"{cfg.key('JWT_JWKS_URL')} (or {cfg.key('MCP_AUTHORIZATION_SERVERS')} with mcp mounted)")


def _read_only_cli() -> bool:
    """True while a ``flask`` command other than ``run`` loads the app (``flask tools list``...):
    nothing is served, so there is nothing to warn about.

    Flask's CLI loads the app inside click's current context: ``flask run`` in its own callback
    (the context's command is Flask's ``run_command``); Flask's other commands in theirs; a
    command the app adds (``flask tools ...``) while the root ``FlaskGroup`` looks it up. Only the
    first serves requests."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or not isinstance(ctx.find_root().command, FlaskGroup):
        return False
    return ctx.command is not run_command


__all__ = ["ToolDiscovery"]
