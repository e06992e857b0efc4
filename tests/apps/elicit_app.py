"""An app for the MCP elicitation tests under gunicorn: ``wipe`` needs a person's approval and
writes ``<label> <pid> <what>`` to the runs file each time it runs. Start it as
``tests.apps.elicit_app:create_app(runs=..., label=..., storage=..., timeout=..., jwt_secret=...)``;
servers started with the same ``secret`` share approvals, with the same ``storage`` their
rendezvous."""

from __future__ import annotations

import os

from flask import Flask, Response

from flask_tooldiscovery import ToolDiscovery


def create_app(runs: str, label: str = "a", storage: str = "", timeout: float = 300, jwt_secret: str = "",
               secret: str = "elicit-test-key-" + "k" * 32, keepalive: float = 0.2) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(requires_approval=True)
    def wipe(what: str) -> dict:
        """Wipe something (after a person approved).

        Args:
            what: What to wipe.
        """
        with open(runs, "a", encoding="utf-8") as file:
            file.write(f"{label} {os.getpid()} {what}\n")
        return {"wiped": what, "server": label}

    app = Flask("elicit_app")
    app.config.update(SECRET_KEY=secret, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, TOOLDISCOVERY_DIALECTS=["mcp"],
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage or None, TOOLDISCOVERY_MCP_ELICITATION_TIMEOUT=timeout,
                      TOOLDISCOVERY_STREAM_KEEPALIVE=keepalive)
    if jwt_secret:
        app.config["TOOLDISCOVERY_JWT_SECRET"] = jwt_secret
    discovery.init_app(app)

    @app.after_request
    def served_by(response: Response) -> Response:
        response.headers["X-Served-By"] = label
        return response

    return app
