"""An app for the approval tests under gunicorn: tools that need a person's approval and write a
line to a file each time they run. Two servers started with the same ``APPROVAL_SECRET_KEY`` share
approvals; ``SERVER_LABEL`` names the server in each answer's ``X-Served-By`` header and in the
file; ``APPROVAL_STORAGE``, when set, is the state store spent approvals are kept in. Start it as
``tests.apps.approval_app:create_app()``."""

from __future__ import annotations

import os
from typing import Any

from flask import Flask, Response

from flask_tooldiscovery import ToolDiscovery


def wiping_app(name: str, label: str, runs: str, **config: Any) -> Flask:
    """A Flask app ``name`` (``config`` set before ``init_app``) with one tool, ``wipe``, that needs a
    person's approval and writes ``<label> <pid> <what>`` to the file ``runs`` each time it runs;
    every answer names ``label`` in its ``X-Served-By`` header."""
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

    @discovery.tool(requires_approval=True)
    def refund(order: str, amount: int) -> dict:
        """Refund an order (after a person approved).

        Args:
            order: The order to refund.
            amount: How much, in cents.
        """
        with open(runs, "a", encoding="utf-8") as file:
            file.write(f"{label} {os.getpid()} refund {order} {amount!r}\n")
        return {"refunded": amount, "server": label}

    app = Flask(name)
    app.config.update(TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, **config)
    discovery.init_app(app)

    @app.after_request
    def served_by(response: Response) -> Response:
        response.headers["X-Served-By"] = label
        return response

    return app


def create_app() -> Flask:
    return wiping_app("approvals", os.environ["SERVER_LABEL"], os.environ["APPROVAL_RUNS_FILE"],
                      SECRET_KEY=os.environ["APPROVAL_SECRET_KEY"], TOOLDISCOVERY_OXP_TOOLKIT="Approvals",
                      TOOLDISCOVERY_DIALECTS=["tdp", "oxp", "mcp", "opal", "utcp", "explorer"],
                      TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_STATE_STORAGE_URI=os.environ.get("APPROVAL_STORAGE") or None,
                      TOOLDISCOVERY_STATE_PER_PROCESS=os.environ.get("APPROVAL_PER_PROCESS") == "1")
