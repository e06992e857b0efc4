"""An app for the approval tests under gunicorn: one tool that needs a person's approval and writes
a line to a file each time it runs. Two servers started with the same ``APPROVAL_SECRET_KEY`` share
approvals; ``SERVER_LABEL`` names the server in each answer's ``X-Served-By`` header and in the
file. Start it as ``tests.apps.approval_app:create_app()``."""

from __future__ import annotations

import os

from flask import Flask, Response

from flask_tooldiscovery import ToolDiscovery


def create_app() -> Flask:
    discovery = ToolDiscovery()
    label, runs = os.environ["SERVER_LABEL"], os.environ["APPROVAL_RUNS_FILE"]

    @discovery.tool(requires_approval=True)
    def wipe(what: str) -> dict:
        """Wipe something (after a person approved).

        Args:
            what: What to wipe.
        """
        with open(runs, "a", encoding="utf-8") as file:
            file.write(f"{label} {os.getpid()} {what}\n")
        return {"wiped": what, "server": label, "pid": os.getpid()}

    app = Flask("approvals")
    app.config.update(SECRET_KEY=os.environ["APPROVAL_SECRET_KEY"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_DIALECTS=["tdp", "oxp", "mcp"], TOOLDISCOVERY_OXP_TOOLKIT="Approvals")
    discovery.init_app(app)

    @app.after_request
    def served_by(response: Response) -> Response:
        response.headers["X-Served-By"] = label
        return response

    return app
