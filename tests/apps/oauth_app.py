"""An app that is its own users' OAuth authorization server, for the gunicorn tests: users sign in
at ``/login?user=NAME`` (a session cookie), the server's records live in the Redis named by
``OAUTH_STATE_URI`` (unset: in the process), ``OAUTH_PUBLIC_URL`` is the name several servers
answer for (the issuer), and ``whoami`` answers who called and on which worker."""

from __future__ import annotations

import os

from flask import Flask, request, session

from flask_tooldiscovery import ToolContext, ToolDiscovery


def create_app() -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    def whoami(ctx: ToolContext = None) -> str:  # type: ignore[assignment]
        """Who calls, and which worker process answers."""
        return f"user={ctx.user_id} pid={os.getpid()}"

    @discovery.oauth_user
    def current() -> str | None:
        return session.get("user")

    app = Flask("oauth_app")
    app.secret_key = "oauth-app-shared-key-" + "k" * 32
    app.config.update(TOOLDISCOVERY_OAUTH_SERVER=True, TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_OAUTH_LOGIN_VIEW="login",
                      TOOLDISCOVERY_STATE_STORAGE_URI=os.environ.get("OAUTH_STATE_URI") or None)
    if public := os.environ.get("OAUTH_PUBLIC_URL"):  # several servers behind one name
        app.config.update(TOOLDISCOVERY_OAUTH_ISSUER=public, TOOLDISCOVERY_MCP_RESOURCE=public + "/mcp")

    @app.route("/login")
    def login() -> str:
        session["user"] = request.args["user"]
        return "signed in"

    discovery.init_app(app)
    return app
