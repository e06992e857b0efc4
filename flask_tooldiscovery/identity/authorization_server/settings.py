"""The authorization server's ``TOOLDISCOVERY_OAUTH_*`` keys: a block of settings parsed beside the
core's in ``init_app`` (read back with ``OAuthServerSettings.of(settings)``). Every key but
``OAUTH_SERVER`` is refused while the server is off: it would change nothing."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ...settings import (
    DialectSettings,
    SettingsError,
    number,
    parse_bool,
    parse_str,
    parse_url,
    setting,
    whole_number,
)

#: RFC 6749 section 3.3: a scope token is one or more of these characters.
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")
DEFAULT_SCOPES = {"tools": "Use the tools of {title}"}


def parse_scopes(key: str, value: Any) -> Mapping[str, str]:
    """``{scope: description}``, at least one scope, each a valid RFC 6749 scope token."""
    if not isinstance(value, Mapping) or not value:
        raise SettingsError(f"{key} must be a non-empty dict of scope -> description")
    out = {}
    for scope, description in value.items():
        if not isinstance(scope, str) or not SCOPE_TOKEN.fullmatch(scope):
            raise SettingsError(f"{key}: {scope!r} is not a scope token (RFC 6749 section 3.3)")
        if not isinstance(description, str):
            raise SettingsError(f"{key}: the description of {scope!r} must be a string")
        out[scope] = description
    return MappingProxyType(out)


@dataclass(frozen=True)
class OAuthServerSettings(DialectSettings):
    """``OAuthServerSettings.of(settings)``."""

    enabled: bool = setting(
        "OAUTH_SERVER", False, parse_bool,
        "The app is its own users' OAuth 2.1 authorization server (needs the oauth extra): metadata, "
        "/oauth/authorize, /oauth/token, /oauth/register, /oauth/revoke and /oauth/grants; its access tokens "
        "are accepted by every dialect that asks for credentials, and MCP's protected resource metadata names it.")
    scopes: Mapping[str, str] = setting(
        "OAUTH_SCOPES", DEFAULT_SCOPES, parse_scopes,
        "The scopes a client may ask for, each with the line the consent page shows ({title} is "
        "TOOLDISCOVERY_TITLE); a granted scope is the caller's, as a tool's scopes= needs.")
    issuer: str | None = setting(
        "OAUTH_ISSUER", None, parse_url,
        "The issuer URL (default: the request's scheme, host and script root): set it behind a proxy "
        "that does not pass the public host and scheme.")
    login_view: str | None = setting(
        "OAUTH_LOGIN_VIEW", None, parse_str,
        "Where a visitor who is not signed in is sent (an endpoint name or a URL, with next=): default "
        "Flask-Login's login_manager.login_view.")
    access_token_ttl: int = setting(
        "OAUTH_ACCESS_TOKEN_TTL", 3600, whole_number(60), "Seconds an access token is valid.")
    refresh_token_ttl: int = setting(
        "OAUTH_REFRESH_TOKEN_TTL", 30 * 86400, whole_number(60),
        "Seconds a refresh token is valid; each use gives a new one (rotation), a used one is refused and "
        "revokes its grant.")
    registration: bool = setting(
        "OAUTH_REGISTRATION", True, parse_bool,
        "Clients may register themselves (RFC 7591 dynamic client registration at /oauth/register).")
    client_metadata_documents: bool = setting(
        "OAUTH_CLIENT_METADATA_DOCUMENTS", True, parse_bool,
        "A client_id that is an https URL names its Client ID Metadata Document, fetched and cached.")
    cimd_max_bytes: int = setting(
        "OAUTH_CIMD_MAX_BYTES", 5120, whole_number(256), "Largest Client ID Metadata Document read, in bytes.")
    cimd_timeout: float = setting(
        "OAUTH_CIMD_TIMEOUT", 5, number(0.1), "Seconds a Client ID Metadata Document's fetch may take.")
    cimd_cache_ttl: int = setting(
        "OAUTH_CIMD_CACHE_TTL", 300, whole_number(0),
        "Seconds a fetched Client ID Metadata Document is used before it is fetched again.")
    cimd_allow_loopback: bool = setting(
        "OAUTH_CIMD_ALLOW_LOOPBACK", False, parse_bool,
        "Tests only: Client ID Metadata Documents may be fetched from loopback addresses over http.")

    def __post_init__(self) -> None:
        self.only_with("enabled", "scopes", "issuer", "login_view", "access_token_ttl", "refresh_token_ttl",
                       "registration", "client_metadata_documents", "cimd_max_bytes", "cimd_timeout",
                       "cimd_cache_ttl", "cimd_allow_loopback")

    def scope_descriptions(self, title: str) -> dict[str, str]:
        """Each scope's line for the consent page, ``{title}`` filled in."""
        return {scope: text.replace("{title}", title) for scope, text in self.scopes.items()}


__all__ = ["OAuthServerSettings", "parse_scopes"]
