"""Every ``TOOLDISCOVERY_*`` configuration key and its default, in one place.

``init_app`` applies these with ``app.config.setdefault``; the README's settings table mirrors
this module.
"""

from __future__ import annotations

from typing import Any

PREFIX = "TOOLDISCOVERY_"

#: Every dialect this package ships, in the order they are mounted by default.
ALL_DIALECTS = ("explorer", "opal", "oxp", "tdp", "mcp")

DEFAULTS: dict[str, Any] = {
    # --- the extension ---------------------------------------------------------------------
    # Which dialect blueprints to mount: a list or a comma-separated string.
    "TOOLDISCOVERY_DIALECTS": list(ALL_DIALECTS),
    # Server identity, used by Opal, TDP, OXP and MCP. SERVER_NAME defaults to the app's name.
    "TOOLDISCOVERY_SERVER_NAME": None,
    "TOOLDISCOVERY_SERVER_VERSION": "1.0.0",
    "TOOLDISCOVERY_SERVER_DESCRIPTION": "",
    # Largest request body (bytes) a dialect accepts; bigger ones get 413.
    "TOOLDISCOVERY_MAX_CONTENT_LENGTH": 1024 * 1024,
    # Turn string argument values into declared types before validation, for every dialect
    # (Opal always does, its platform sends strings).
    "TOOLDISCOVERY_COERCE_ARGUMENTS": False,
    # TDP categories: a list of {"id", "name", "description", "icon"} (also ToolDiscovery.category()).
    "TOOLDISCOVERY_CATEGORIES": [],
    # --- explorer ------------------------------------------------------------------------
    "TOOLDISCOVERY_TITLE": "Tool Explorer",
    # Lets the explorer page and POST <explorer>/tools/<name>/call run tools. Off by default.
    "TOOLDISCOVERY_ALLOW_EXECUTE": False,
    "TOOLDISCOVERY_EXPLORER_URL_PREFIX": "/explorer",
    # --- opal ----------------------------------------------------------------------------
    "TOOLDISCOVERY_OPAL_URL_PREFIX": "/opal",
    "TOOLDISCOVERY_OPAL_BEARER_TOKEN": None,
    # --- oxp -----------------------------------------------------------------------------
    "TOOLDISCOVERY_OXP_URL_PREFIX": "/oxp",
    "TOOLDISCOVERY_OXP_JWT_SECRET": None,
    "TOOLDISCOVERY_OXP_JWT_AUDIENCE": None,
    "TOOLDISCOVERY_OXP_JWT_REQUIRE_EXP": True,
    # Claims that must be present with these exact values, e.g. {"ver": "1"} for Arcade workers.
    "TOOLDISCOVERY_OXP_JWT_CLAIMS": {},
    "TOOLDISCOVERY_OXP_API_KEY": None,
    # Toolkit for tools that name none; default derived from SERVER_NAME.
    "TOOLDISCOVERY_OXP_TOOLKIT": None,
    # Also send the list under the pre-errata "tools" key, for old clients.
    "TOOLDISCOVERY_OXP_LEGACY_TOOLS_KEY": False,
    # --- tdp -----------------------------------------------------------------------------
    "TOOLDISCOVERY_TDP_URL_PREFIX": "",
    "TOOLDISCOVERY_TDP_WIRE": "spec",
    "TOOLDISCOVERY_TDP_BASE_URL": None,
    # --- mcp -----------------------------------------------------------------------------
    "TOOLDISCOVERY_MCP_URL_PREFIX": "/mcp",
    "TOOLDISCOVERY_MCP_BEARER_TOKEN": None,
    # Origins allowed to call /mcp from a browser; requests without Origin are always allowed.
    # None allows same-host origins and localhost only.
    "TOOLDISCOVERY_MCP_ALLOWED_ORIGINS": None,
    "TOOLDISCOVERY_MCP_PAGE_SIZE": 100,
}


def key(name: str) -> str:
    """``"TITLE"`` -> ``"TOOLDISCOVERY_TITLE"``."""
    return name if name.startswith(PREFIX) else PREFIX + name


def url_prefix_key(dialect: str) -> str:
    """``"opal"`` -> ``"TOOLDISCOVERY_OPAL_URL_PREFIX"``."""
    return f"{PREFIX}{dialect.upper()}_URL_PREFIX"
