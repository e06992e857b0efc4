"""An app for the identity tests under gunicorn: one tool that tells who it was called by, every
dialect that runs tools mounted, the identity layer's JWT keys taken from the arguments. Start it as
``tests.apps.identity_app:create_app(secret=..., issuer=...)`` or with ``jwks_url=...``."""

from __future__ import annotations

from typing import Any

from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery


def create_app(secret: str = "", issuer: str = "", audience: str = "", jwks_url: str = "",
               auth_discovery: bool = False, callback_hosts: str = "") -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(requirements={"user_id": True})
    def whoami(ctx: ToolContext) -> dict[str, Any]:
        """Who called: the context's user id, the identity's subject and what the body claimed."""
        return {"user_id": ctx.user_id, "subject": ctx.identity.subject if ctx.identity else None,
                "claimed_user_id": ctx.extra.get("claimed_user_id")}

    @discovery.tool(long_running=True)
    def whoami_later(ctx: ToolContext) -> dict[str, Any]:
        """The same, run as a task (Opal's async_callback) after the request was answered."""
        return whoami(ctx)

    app = Flask("identity")
    config = {"JWT_SECRET": secret, "JWT_ISSUER": issuer, "JWT_AUDIENCE": audience, "JWT_JWKS_URL": jwks_url}
    app.config.update({f"TOOLDISCOVERY_{k}": v for k, v in config.items() if v})
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "oxp", "tdp", "mcp", "utcp", "explorer"],
                      TOOLDISCOVERY_ALLOW_EXECUTE=True, TOOLDISCOVERY_OXP_TOOLKIT="Who",
                      TOOLDISCOVERY_AUTH_DISCOVERY=auth_discovery, TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=callback_hosts)
    discovery.init_app(app)
    return app
