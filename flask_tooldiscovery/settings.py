"""Every ``TOOLDISCOVERY_*`` configuration key in one place: its default, how it is parsed and
checked, and the frozen :class:`Settings` built from an app's config in ``init_app``.

A wrong value is refused at ``init_app`` with the key's name, so a bad deployment fails at start,
not on a call. Booleans accept the strings environment variables carry (``"true"``, ``"0"``...).
The README's settings table mirrors :data:`SPECS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from .errors import ToolDiscoveryError
from .observe.logs import log

PREFIX = "TOOLDISCOVERY_"

#: Every dialect this package ships, in the order they are mounted by default.
ALL_DIALECTS = ("explorer", "opal", "oxp", "tdp", "mcp", "utcp", "openapi", "server_card", "manifest")

#: Host names a server answers for when neither TOOLDISCOVERY_ALLOWED_HOSTS nor Flask's
#: TRUSTED_HOSTS is set: loopback only, so a DNS-rebinding page cannot reach it.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


class SettingsError(ToolDiscoveryError, ValueError):
    """A ``TOOLDISCOVERY_*`` value cannot be used; the message names the key."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_bool(key: str, value: Any) -> bool:
    """``True``/``False``, or one of the usual strings; anything else is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise SettingsError(f"{key} must be a boolean (true/false, 1/0, yes/no, on/off), not {value!r}")


def parse_int(key: str, value: Any, minimum: int = 0) -> int:
    """A whole number (or its string) not below ``minimum``."""
    if isinstance(value, bool):
        raise SettingsError(f"{key} must be a whole number, not {value!r}")
    try:
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{key} must be a whole number, not {value!r}") from None
    if isinstance(value, float) and value != number:
        raise SettingsError(f"{key} must be a whole number, not {value!r}")
    if number < minimum:
        raise SettingsError(f"{key} must be at least {minimum}, not {number}")
    return number


def parse_float(key: str, value: Any, minimum: float = 0.0) -> float:
    """A number (or its string) not below ``minimum``."""
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{key} must be a number, not {value!r}") from None
    if isinstance(value, bool) or number != number or number < minimum:
        raise SettingsError(f"{key} must be a number of at least {minimum:g}, not {value!r}")
    return number


def parse_str(key: str, value: Any) -> str | None:
    """A string, or ``None`` for unset (an empty string counts as unset)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{key} must be a string, not {type(value).__name__}")
    return value or None


def parse_list(key: str, value: Any) -> tuple[str, ...]:
    """A list of strings, or one comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise SettingsError(f"{key} must be a list of strings or a comma-separated string")
    items = []
    for item in value:
        if not isinstance(item, str):
            raise SettingsError(f"{key} must hold strings, not {item!r}")
        if item.strip():
            items.append(item.strip())
    return tuple(dict.fromkeys(items))


def parse_prefix(key: str, value: Any) -> str:
    """A URL prefix: ``""`` or a path starting with ``/`` (a trailing ``/`` is dropped)."""
    text = parse_str(key, value) or ""
    if text and not text.startswith("/"):
        raise SettingsError(f"{key} must start with '/', not {text!r}")
    return text.rstrip("/")


def parse_mapping(key: str, value: Any) -> Mapping[str, Any]:
    """A dict (read-only once parsed)."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise SettingsError(f"{key} must be a dict, not {type(value).__name__}")
    return MappingProxyType(dict(value))


def parse_categories(key: str, value: Any) -> tuple[Mapping[str, Any], ...]:
    """A list of ``{"id", "name", ...}`` dicts."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise SettingsError(f"{key} must be a list of dicts with 'id' and 'name'")
    out = []
    for item in value:
        if not isinstance(item, Mapping) or not item.get("id") or not item.get("name"):
            raise SettingsError(f"{key}: every category needs 'id' and 'name', not {item!r}")
        out.append(MappingProxyType(dict(item)))
    return tuple(out)


def _choice(*choices: str) -> Callable[[str, Any], str]:
    def parse(key: str, value: Any) -> str:
        text = str(value or "").strip().lower()
        if text not in choices:
            raise SettingsError(f"{key} must be one of {', '.join(choices)}, not {value!r}")
        return text

    return parse


def _matching(pattern: str, what: str, *, lower: bool = False) -> Callable[[str, Any], str]:
    compiled = re.compile(pattern)

    def parse(key: str, value: Any) -> str:
        text = (parse_str(key, value) or "").strip()
        text = text.lower() if lower else text
        if not compiled.fullmatch(text):
            raise SettingsError(f"{key} must be {what}, not {value!r}")
        return text

    return parse


def _optional(parse: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    def parse_or_none(key: str, value: Any) -> Any:
        return None if value is None or value == "" else parse(key, value)

    return parse_or_none


def parse_url(key: str, value: Any, *, query: bool = False) -> str | None:
    """An absolute http(s) URL without a fragment (nor a query unless ``query``), or ``None``."""
    text = (parse_str(key, value) or "").strip()
    if not text:
        return None
    try:
        parts = urlsplit(text)
        wrong = parts.scheme not in ("http", "https") or not parts.hostname or "#" in text \
            or bool(parts.query and not query)
    except ValueError:
        wrong = True
    if wrong:
        what = "" if query else "query or "
        raise SettingsError(f"{key} must be an absolute http(s) URL without {what}fragment, not {value!r}")
    return text


def parse_urls(key: str, value: Any) -> tuple[str, ...]:
    """A list of URLs (see :func:`parse_url`), or one comma-separated string."""
    return tuple(parse_url(key, item) or "" for item in parse_list(key, value))


def _state_storage(key: str, value: Any) -> str:
    from .calls.rendezvous import check_uri

    try:
        return check_uri(key, parse_str(key, value) or "")
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


@dataclass(frozen=True)
class Spec:
    """One setting: its key (without the prefix), default and parser."""

    name: str
    default: Any
    parse: Callable[[str, Any], Any]
    doc: str = ""


#: Every setting: ``TOOLDISCOVERY_<name>``, its default, its parser, what it does.
SPECS: tuple[Spec, ...] = (
    # --- the extension ---
    Spec("DIALECTS", list(ALL_DIALECTS), parse_list, "Which dialects to mount."),
    Spec("SERVER_NAME", None, parse_str, "Server name in every dialect (default: the app's name)."),
    Spec("SERVER_VERSION", "1.0.0", parse_str, "Server version."),
    Spec("SERVER_DESCRIPTION", "", parse_str, "Server description / MCP instructions."),
    Spec("MAX_CONTENT_LENGTH", 1024 * 1024, lambda k, v: parse_int(k, v, 1),
         "Largest request body in bytes; larger ones get 413 (chunked bodies too)."),
    Spec("COERCE_ARGUMENTS", False, parse_bool, "Turn string arguments into declared types, every dialect."),
    Spec("CATEGORIES", [], parse_categories, "TDP categories."),
    Spec("ALLOWED_HOSTS", None, _optional(parse_list),
         "Host names served (default: Flask's TRUSTED_HOSTS, else loopback only; '*' for any)."),
    Spec("ALLOWED_ORIGINS", [], parse_list,
         "Browser origins (besides the page's own) allowed to call tools; '*' for any."),
    Spec("MAX_CONCURRENT_CALLS", 8, parse_int,
         "Tool calls running at once per worker process; 0 for no limit. Over it: busy, retry."),
    Spec("BUSY_RETRY_AFTER", 1, lambda k, v: parse_float(k, v, 0.0), "Retry-After (s) sent when busy."),
    Spec("MAX_VALIDATION_ERRORS", 50, lambda k, v: parse_int(k, v, 1),
         "Argument errors reported per call; the rest are counted."),
    Spec("CALL_LOG", None, _optional(_choice("text", "json")),
         "Show the INFO line of every call on stderr: 'text' or 'json' (JSON lines)."),
    Spec("WARN_UNAUTHENTICATED", True, parse_bool,
         "Log one warning at start naming the dialects that run tools for anyone."),
    # --- identity, for every dialect ---
    Spec("JWT_JWKS_URL", None, parse_str,
         "Accept bearer JWTs signed by a key from this JWKS (RS256/ES256; needs the jwt extra)."),
    Spec("JWT_ISSUER", None, parse_str, "Required iss of those JWTs."),
    Spec("JWT_AUDIENCE", None, _optional(parse_list), "Accepted aud of those JWTs (one is required)."),
    Spec("JWT_ALGORITHMS", ["RS256", "ES256"], parse_list, "Algorithms accepted for JWKS-verified JWTs."),
    Spec("JWT_JWKS_COOLDOWN", 30, lambda k, v: parse_float(k, v, 0.0),
         "Seconds between fetches the JWKS for an unknown key id (rotation; bounds forged key ids)."),
    Spec("AUTH_DISCOVERY", False, parse_bool, "Discovery needs credentials too, wherever tool calls do."),
    Spec("OPEN_DIALECTS", [], parse_list,
         "Dialects you mean to leave open (no identity needed) while others are protected."),
    Spec("BEARER_TOKEN", None, parse_str, "A static bearer token every dialect accepts."),
    Spec("API_KEY", None, parse_str, "A static API key every dialect accepts, in the API_KEY_HEADER header."),
    Spec("API_KEY_HEADER", "X-API-Key", parse_str, "The header that carries API_KEY."),
    Spec("JWT_SECRET", None, parse_str, "HS256 secret of bearer JWTs every dialect accepts (needs the jwt extra)."),
    # --- explorer ---
    Spec("TITLE", "Tool Explorer", parse_str, "The explorer page's title."),
    Spec("ALLOW_EXECUTE", False, parse_bool, "Let the explorer run tools."),
    # --- opal ---
    Spec("OPAL_BEARER_TOKEN", None, parse_str, "Bearer token Opal must send on calls."),
    # --- oxp ---
    Spec("OXP_JWT_SECRET", None, parse_str, "HS256 secret for OXP bearer JWTs (needs the jwt extra)."),
    Spec("OXP_JWT_AUDIENCE", None, _optional(parse_list), "Accepted JWT audience(s)."),
    Spec("OXP_JWT_REQUIRE_EXP", True, parse_bool, "Require an exp claim."),
    Spec("OXP_JWT_CLAIMS", {}, parse_mapping, "Claims that must be present with these values."),
    Spec("OXP_API_KEY", None, parse_str, "API key accepted in the OXP-API-Key header."),
    Spec("OXP_TOOLKIT", None, parse_str, "Toolkit for tools that name none."),
    Spec("OXP_LEGACY_TOOLS_KEY", False, parse_bool, "Also send the list under 'tools'."),
    # --- tdp ---
    Spec("TDP_WIRE", "spec", _choice("spec", "protojson"), "TDP wire form: spec or protojson."),
    Spec("TDP_BASE_URL", None, parse_str, "scenario.base_url of the manifest."),
    # --- mcp ---
    Spec("MCP_BEARER_TOKEN", None, parse_str, "Bearer token MCP clients must send."),
    Spec("MCP_ALLOWED_ORIGINS", [], parse_list, "Older name of ALLOWED_ORIGINS; its origins are added to that list."),
    Spec("MCP_PAGE_SIZE", 100, lambda k, v: parse_int(k, v, 1), "tools/list page size."),
    Spec("MCP_MAX_BATCH", 10, lambda k, v: parse_int(k, v, 1),
         "Largest JSON-RPC batch (protocol versions before 2025-06-18; later ones refuse batches)."),
    # --- openapi, server_card ---
    Spec("OPENAPI_DIALECT", "utcp", _matching(r"[a-z_][a-z0-9_]*", "a dialect name", lower=True),
         "The mounted dialect whose call routes the OpenAPI document describes (utcp: one operation per tool)."),
    Spec("SERVER_CARD_NAME", None, _optional(_matching(r"(?=.{3,200}$)[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+",
                                                       "'namespace/name' in reverse DNS (com.example/tools)")),
         "MCP Server Card name (default: the request's host name reversed, '/', the server name)."),
    # --- operating: rate limits, tracing, metrics ---
    Spec("RATELIMIT_DEFAULT", None, parse_str,
         "Calls per tool and caller for tools that declare no rate_limit_per_minute, in limits' notation "
         "('100/minute', '10/second;500/hour'); unset: no limit."),
    Spec("RATELIMIT_DIALECTS", {}, parse_mapping, "Per-dialect defaults over RATELIMIT_DEFAULT: {'mcp': '30/minute'}."),
    Spec("RATELIMIT_TOOLS", {}, parse_mapping,
         "Limits of tools that declare no rate_limit_per_minute, by tool name: {'search': '5/second'}."),
    Spec("RATELIMIT_STORAGE_URI", "memory://", parse_str,
         "Where rate limit counters live: memory:// (per worker process), or redis://, memcached://, mongodb:// "
         "(shared by every worker and host; needs limits[redis], limits[memcached], limits[mongodb])."),
    Spec("RATELIMIT_STRATEGY", "fixed-window", _choice("fixed-window", "moving-window", "sliding-window-counter"),
         "How limits count: fixed-window, moving-window or sliding-window-counter (limits' strategies)."),
    Spec("OTEL", False, parse_bool, "One OpenTelemetry span per tool call (needs the otel extra)."),
    Spec("METRICS", False, parse_bool, "Prometheus metrics of tool calls (needs the metrics extra)."),
    Spec("METRICS_PATH", None, _optional(parse_prefix),
         "Serve the metrics at this path, e.g. '/metrics' (with METRICS on); unset: not served."),
    # --- mcp as an OAuth 2.1 resource server ---
    Spec("MCP_AUTHORIZATION_SERVERS", [], parse_urls,
         "Issuer URLs of the OAuth authorization servers whose JWT access tokens MCP accepts (needs the jwt "
         "extra): MCP then serves protected resource metadata and its 401s point to it."),
    Spec("MCP_RESOURCE", None, parse_url,
         "The MCP endpoint's public URL: the resource tokens must name in aud (default: built from each request)."),
    Spec("MCP_SCOPES", [], parse_list,
         "Scopes every access token must carry (403 insufficient_scope otherwise); advertised as scopes_supported."),
    Spec("MCP_JWKS_URL", None, lambda k, v: parse_url(k, v, query=True),
         "JWKS of the authorization server(s) (default: jwks_uri from their metadata, fetched on the first token)."),
    Spec("APPROVE_DESTRUCTIVE", False, parse_bool,
         "Tools annotated destructiveHint=true need a person's approval on each call, as requires_approval tools do."),
    Spec("APPROVAL_TTL", 600, lambda k, v: parse_int(k, v, 1),
         "Seconds a sealed approval request stays valid (signed with SECRET_KEY, checked by any worker)."),
    Spec("STREAM_KEEPALIVE", 15, lambda k, v: parse_float(k, v, 0.05),
         "Seconds of silence after which a streamed call (MCP SSE, the explorer) sends a keep-alive."),
    # --- opal: asynchronous execution of long_running tools ---
    Spec("OPAL_CALLBACK_HOSTS", [], parse_list,
         "Hosts Opal's async_callback URLs may name (http or https; '.example.com' adds its subdomains); "
         "unset: https only, to hosts with no loopback, private or reserved address."),
    Spec("OPAL_CALLBACK_RETRIES", 2, parse_int,
         "Further attempts to POST an async result after a failed one (connection error, 5xx, 429), "
         "waiting 0.5 s, 1 s, 2 s... between them."),
    Spec("OPAL_CALLBACK_TIMEOUT", 10, lambda k, v: parse_float(k, v, 0.1),
         "Seconds each attempt to POST an async result may take."),
    # --- rich results ---
    Spec("MCP_RESOURCES", False, parse_bool,
         "MCP serves the resources registered with @discovery.resource (resources/list, /templates/list, /read)."),
    # --- approvals by elicitation, across workers ---
    Spec("STATE_STORAGE_URI", None, _optional(_state_storage),
         "Where a request waiting for another one's message meets it (an MCP elicitation's answer): unset, "
         "in this worker process only; redis://host:6379/0 for every worker and host (needs the redis extra)."),
    Spec("MCP_ELICITATION_TIMEOUT", 300, lambda k, v: parse_float(k, v, 0.0),
         "Seconds a handshake-era MCP call waits for the answer to its approval elicitation (at most APPROVAL_TTL); "
         "0: never ask by elicitation."),
)


def key(name: str) -> str:
    """``"TITLE"`` -> ``"TOOLDISCOVERY_TITLE"``."""
    return name if name.startswith(PREFIX) else PREFIX + name


def url_prefix_key(dialect: str) -> str:
    """``"opal"`` -> ``"TOOLDISCOVERY_OPAL_URL_PREFIX"``."""
    return f"{PREFIX}{dialect.upper()}_URL_PREFIX"


@dataclass(frozen=True)
class Settings:
    """One app's ``TOOLDISCOVERY_*`` settings, parsed and checked. Read-only.

    Attribute names are the keys without the prefix, lower-cased (``settings.allow_execute``).
    """

    dialects: tuple[str, ...]
    server_name: str
    server_version: str
    server_description: str
    max_content_length: int
    coerce_arguments: bool
    categories: tuple[Mapping[str, Any], ...]
    allowed_hosts: tuple[str, ...] | None
    allowed_origins: tuple[str, ...]
    max_concurrent_calls: int
    busy_retry_after: float
    max_validation_errors: int
    call_log: str | None
    warn_unauthenticated: bool
    jwt_jwks_url: str | None
    jwt_issuer: str | None
    jwt_audience: tuple[str, ...] | None
    jwt_algorithms: tuple[str, ...]
    jwt_jwks_cooldown: float
    auth_discovery: bool
    open_dialects: tuple[str, ...]
    bearer_token: str | None
    api_key: str | None
    api_key_header: str
    jwt_secret: str | None
    title: str
    allow_execute: bool
    opal_bearer_token: str | None
    oxp_jwt_secret: str | None
    oxp_jwt_audience: tuple[str, ...] | None
    oxp_jwt_require_exp: bool
    oxp_jwt_claims: Mapping[str, Any]
    oxp_api_key: str | None
    oxp_toolkit: str | None
    oxp_legacy_tools_key: bool
    tdp_wire: str
    tdp_base_url: str | None
    mcp_bearer_token: str | None
    mcp_allowed_origins: tuple[str, ...]
    mcp_page_size: int
    mcp_max_batch: int
    openapi_dialect: str
    server_card_name: str | None
    ratelimit_default: str | None
    ratelimit_dialects: Mapping[str, Any]
    ratelimit_tools: Mapping[str, Any]
    ratelimit_storage_uri: str | None
    ratelimit_strategy: str
    otel: bool
    metrics: bool
    metrics_path: str | None
    mcp_authorization_servers: tuple[str, ...]
    mcp_resource: str | None
    mcp_scopes: tuple[str, ...]
    mcp_jwks_url: str | None
    approve_destructive: bool
    approval_ttl: int
    stream_keepalive: float
    opal_callback_hosts: tuple[str, ...]
    opal_callback_retries: int
    opal_callback_timeout: float
    mcp_resources: bool
    state_storage_uri: str | None
    mcp_elicitation_timeout: float
    #: Mount point of each mounted dialect (``""`` for the root).
    prefixes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: Every ``TOOLDISCOVERY_*`` key as the config had it, for dialects defined outside this
    #: package (read with :meth:`raw`).
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def raw(self, name: str, default: Any = None) -> Any:
        """The config's value of ``TOOLDISCOVERY_<name>`` as given (for external dialects)."""
        return self.extra.get(key(name), default)

    @property
    def page(self) -> dict[str, Any]:
        """The explorer page's title and allow_execute flag."""
        return {"title": self.title, "allow_execute": self.allow_execute}


def apply_defaults(config: Any) -> None:
    """``config.setdefault`` every key (lists copied, so apps never share one)."""
    for spec in SPECS:
        default = spec.default
        config.setdefault(key(spec.name), list(default) if isinstance(default, list) else
                          dict(default) if isinstance(default, dict) else default)


def build_settings(
    config: Mapping[str, Any],
    *,
    app_name: str,
    default_prefixes: Mapping[str, str],
    known_keys: Iterable[str] = (),
) -> Settings:
    """Parse and check every ``TOOLDISCOVERY_*`` key of ``config``; raise :class:`SettingsError`.

    ``default_prefixes`` maps each known dialect to its default mount point; ``known_keys`` are
    extra keys dialects declare. Unknown ``TOOLDISCOVERY_*`` keys are warned about once.
    """
    values: dict[str, Any] = {}
    for spec in SPECS:
        name = key(spec.name)
        raw = config.get(name, spec.default)
        values[spec.name.lower()] = spec.parse(name, raw)
    values["server_name"] = values["server_name"] or app_name
    values["server_description"] = values["server_description"] or ""
    values["server_version"] = values["server_version"] or "1.0.0"
    values["title"] = values["title"] or "Tool Explorer"
    # The older MCP_ALLOWED_ORIGINS only adds to ALLOWED_ORIGINS: the core reads the one list.
    values["allowed_origins"] = tuple(dict.fromkeys((*values["allowed_origins"], *values["mcp_allowed_origins"])))
    dialects = tuple(name.lower() for name in values["dialects"])
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
    known = {key(s.name) for s in SPECS} | {url_prefix_key(d) for d in default_prefixes} | set(known_keys)
    extra = {k: v for k, v in config.items() if isinstance(k, str) and k.startswith(PREFIX)}
    unknown = sorted(k for k in extra if k not in known)
    if unknown:
        log.warning("flask-tooldiscovery: unknown setting(s) ignored: %s", ", ".join(unknown))
    values["extra"] = MappingProxyType(extra)
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
    "ALL_DIALECTS", "LOOPBACK_HOSTS", "PREFIX", "SPECS", "Settings", "SettingsError", "Spec",
    "apply_defaults", "build_settings", "host_allow_list", "key", "parse_bool", "url_prefix_key",
]
