"""Rate limits per tool and caller, with the ``limits`` library (the one Flask-Limiter is built on).

Which limit a call meets, first found: the tool's own ``rate_limit_per_minute``, then
``TOOLDISCOVERY_RATELIMIT_TOOLS[tool]``, ``TOOLDISCOVERY_RATELIMIT_DIALECTS[dialect]`` and
``TOOLDISCOVERY_RATELIMIT_DEFAULT``; none of them: no limit. The caller is the identity's subject
when the dialect's credentials established one, else the client address (``request.remote_addr``:
put ``werkzeug.middleware.proxy_fix.ProxyFix`` in front behind a proxy). Counters live in
``TOOLDISCOVERY_RATELIMIT_STORAGE_URI``: ``memory://`` counts per worker process; a Redis,
Memcached or MongoDB URI shares them across workers and hosts. Counters are shared by every
dialect that applies the same limit to a tool. When the storage fails, the call goes ahead and the
failure is logged (a limit protects; it should not take the service down with it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from limits import RateLimitItem, RateLimitItemPerMinute, parse_many
from limits.errors import ConfigurationError
from limits.storage import storage_from_string
from limits.strategies import STRATEGIES, RateLimiter

from ..errors import RateLimited
from ..observe.logs import log
from ..settings import Settings, SettingsError, key
from ..tools.model import Identity, Tool

#: The ``limits`` extra that brings each storage scheme's driver.
_DRIVERS = {"redis": "redis", "rediss": "redis", "redis+unix": "redis", "redis+cluster": "redis",
            "redis+sentinel": "redis", "memcached": "memcached", "mongodb": "mongodb",
            "mongodb+srv": "mongodb", "valkey": "valkey", "valkeys": "valkey", "valkey+unix": "valkey",
            "valkey+cluster": "valkey", "valkey+sentinel": "valkey"}

Limits = tuple[RateLimitItem, ...]


def parse_limits(name: str, value: Any) -> Limits:
    """``"100/minute"``, ``"10/second;500/hour"`` (limits' notation) or a whole number (per minute)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return (RateLimitItemPerMinute(value),)
    if isinstance(value, str) and value.strip():
        try:
            return tuple(parse_many(value))
        except ValueError:
            pass
    raise SettingsError(f"{name} must be a rate limit such as '100/minute' or '10/second;500/hour', not {value!r}")


def _mapping(setting: str, value: Mapping[str, Any]) -> dict[str, Limits]:
    return {str(k): parse_limits(f"{key(setting)}[{k!r}]", v) for k, v in value.items()}


class RateLimits:
    """One app's limits and the storage its counters live in, built (and checked) by ``init_app``."""

    def __init__(self, settings: Settings) -> None:
        self.default: Limits = (parse_limits(key("RATELIMIT_DEFAULT"), settings.ratelimit_default)
                                if settings.ratelimit_default else ())
        self.dialects = _mapping("RATELIMIT_DIALECTS", settings.ratelimit_dialects)
        self.tools = _mapping("RATELIMIT_TOOLS", settings.ratelimit_tools)
        self.namespace = quote(settings.server_name, safe="")
        uri = settings.ratelimit_storage_uri or "memory://"
        setting = key("RATELIMIT_STORAGE_URI")
        try:
            storage = storage_from_string(uri)
        except ConfigurationError as exc:
            scheme = urlsplit(uri).scheme
            extra = _DRIVERS.get(scheme)
            if extra is None:
                raise SettingsError(f"{setting}: {exc}") from None
            raise SettingsError(f"{setting} uses {scheme}://, whose driver is not installed: "
                                f"pip install \"limits[{extra}]\"") from None
        try:
            self.limiter: RateLimiter = STRATEGIES[settings.ratelimit_strategy](storage)
        except NotImplementedError:
            raise SettingsError(f"{key('RATELIMIT_STRATEGY')} {settings.ratelimit_strategy} is not available "
                                f"with the storage of {setting}") from None

    def limits_for(self, tool: Tool, dialect: str) -> Limits:
        """The limits a call of ``tool`` through ``dialect`` meets (empty: none)."""
        own = tool.metadata.get("rate_limit_per_minute")
        if isinstance(own, int) and not isinstance(own, bool) and own > 0:
            return (RateLimitItemPerMinute(own),)
        return self.tools.get(tool.name) or self.dialects.get(dialect) or self.default

    @staticmethod
    def caller(identity: Identity | None, address: str | None) -> str:
        """Whom a counter counts: ``sub:<subject>``, else ``addr:<client address>``."""
        if identity is not None and identity.subject:
            return "sub:" + quote(identity.subject, safe="")
        return "addr:" + quote(address or "unknown", safe="")

    def check(self, tool: Tool, limits: Limits, caller: str) -> None:
        """Count one call against ``limits`` (:meth:`limits_for`); :class:`~.errors.RateLimited`
        (with the wait) when one is used up."""
        ids = ("tooldiscovery", self.namespace, tool.name, caller)
        for item in limits:
            try:
                if self.limiter.hit(item, *ids):
                    continue
                reset = self.limiter.get_window_stats(item, *ids).reset_time
            except Exception as exc:  # the storage is down: let the call through, say so
                log.error("flask-tooldiscovery: rate limit storage failed (%s: %s); call of %s allowed",
                          type(exc).__name__, exc, tool.name)
                return
            raise RateLimited(f"Rate limit of {item} reached for tool {tool.name}.",
                              retry_after=max(reset - time.time(), 1.0), limit=str(item))


__all__ = ["RateLimits", "parse_limits"]
