"""MCP's own ``TOOLDISCOVERY_MCP_*`` keys: its credentials (a static token, or MCP as an OAuth 2.1
resource server: :mod:`.auth`), paging and batches, resources and subscriptions, the approval elicitation's wait, and
tasks (how often clients poll, how long ``tasks/result`` waits).
(``TOOLDISCOVERY_MCP_ALLOWED_ORIGINS`` is the core's: an older name of ``ALLOWED_ORIGINS``.)"""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import (
    DialectSettings,
    number,
    parse_bool,
    parse_list,
    parse_str,
    parse_url,
    parse_url_with_query,
    parse_urls,
    setting,
    whole_number,
)


@dataclass(frozen=True)
class McpSettings(DialectSettings):
    """``McpSettings.of(pipe.settings)``."""

    bearer_token: str | None = setting("MCP_BEARER_TOKEN", None, parse_str, "Bearer token MCP clients must send.")
    page_size: int = setting("MCP_PAGE_SIZE", 100, whole_number(1), "tools/list page size.")
    max_batch: int = setting(
        "MCP_MAX_BATCH", 10, whole_number(1),
        "Largest JSON-RPC batch (protocol versions before 2025-06-18; later ones refuse batches).")
    authorization_servers: tuple[str, ...] = setting(
        "MCP_AUTHORIZATION_SERVERS", [], parse_urls,
        "Issuer URLs of the OAuth authorization servers whose JWT access tokens MCP accepts (needs the jwt "
        "extra): MCP then serves protected resource metadata and its 401s point to it.")
    resource: str | None = setting(
        "MCP_RESOURCE", None, parse_url,
        "The MCP endpoint's public URL: the resource tokens must name in aud (default: built from each request).")
    scopes: tuple[str, ...] = setting(
        "MCP_SCOPES", [], parse_list,
        "Scopes every access token must carry (403 insufficient_scope otherwise); advertised as scopes_supported.")
    jwks_url: str | None = setting(
        "MCP_JWKS_URL", None, parse_url_with_query,
        "JWKS of the authorization server(s) (default: jwks_uri from their metadata, fetched on the first token).")
    resources: bool = setting(
        "MCP_RESOURCES", False, parse_bool,
        "MCP serves the resources registered with @discovery.resource (resources/list, /templates/list, /read).")
    elicitation_timeout: float = setting(
        "MCP_ELICITATION_TIMEOUT", 300, number(0.0),
        "Seconds an MCP call waits for its caller's answer: a handshake-era approval elicitation (at most "
        "APPROVAL_TTL), a task's question (tasks/update); 0: never ask by elicitation.")
    subscriptions: bool = setting(
        "MCP_SUBSCRIPTIONS", False, parse_bool,
        "MCP clients may subscribe to changes: subscriptions/listen (2026-07-28), resources/subscribe and the "
        "session's GET stream (handshake era); list changes and discovery.resource_changed(uri) reach them from "
        "any worker sharing STATE_STORAGE_URI. Each open stream holds a server thread.")
    subscription_seconds: float = setting(
        "MCP_SUBSCRIPTION_SECONDS", 300, number(1.0),
        "Seconds one MCP subscription stream stays open; then the server ends it and the client listens again.")
    task_poll_interval: int = setting(
        "MCP_TASK_POLL_INTERVAL", 1000, whole_number(1),
        "Milliseconds an MCP client is told to wait between two reads of a task (pollIntervalMs).")
    task_result_wait: float = setting(
        "MCP_TASK_RESULT_WAIT", 25, number(0.0),
        "Seconds a 2025-11-25 tasks/result waits for its task to end before answering that it still runs "
        "(keep it under the server's request timeout, e.g. gunicorn's --timeout with sync workers).")


__all__ = ["McpSettings"]
