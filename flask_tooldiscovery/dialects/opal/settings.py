"""Opal's own ``TOOLDISCOVERY_OPAL_*`` keys: the bearer token its calls carry, and where and how
the results of asynchronous calls are delivered (:mod:`.async_mode`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import DialectSettings, number, optional, parse_int, parse_list, parse_str, setting


@dataclass(frozen=True)
class OpalSettings(DialectSettings):
    """``OpalSettings.of(pipe.settings)``."""

    bearer_token: str | None = setting("OPAL_BEARER_TOKEN", None, parse_str, "Bearer token Opal must send on calls.")
    callback_hosts: tuple[str, ...] = setting(
        "OPAL_CALLBACK_HOSTS", [], parse_list,
        "Hosts Opal's async_callback URLs may name (http or https; '.example.com' adds its subdomains); "
        "unset: https only, to hosts with no loopback, private or reserved address.")
    callback_retries: int | None = setting(
        "OPAL_CALLBACK_RETRIES", None, optional(parse_int),
        "Further attempts to POST an async result after a failed one (connection error, 5xx, 429), "
        "waiting 0.5 s, 1 s, 2 s... up to 60 s between them; unset: as many as the retry window allows.")
    callback_retry_window: float = setting(
        "OPAL_CALLBACK_RETRY_WINDOW", 3600, number(0),
        "Seconds after a call ended during which its result is still offered to the callback URL; "
        "the result stays readable in the call's task record after that.")
    callback_timeout: float = setting(
        "OPAL_CALLBACK_TIMEOUT", 10, number(0.1),
        "Seconds an attempt to POST an async result waits for each read of the answer (connecting: "
        "TOOLDISCOVERY_TASK_CALLBACK_CONNECT_TIMEOUT, at most this).")


__all__ = ["OpalSettings"]
