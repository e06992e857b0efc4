"""An app for the MCP elicitation tests under gunicorn: ``wipe`` needs a person's approval and
writes ``<label> <pid> <what>`` to the runs file each time it runs. Start it as
``tests.apps.elicit_app:create_app(runs=..., label=..., storage=..., timeout=..., jwt_secret=...)``;
servers started with the same ``secret`` share approvals, with the same ``storage`` their
rendezvous."""

from __future__ import annotations

from flask import Flask

from .approval_app import wiping_app


def create_app(runs: str, label: str = "a", storage: str = "", timeout: float = 300, jwt_secret: str = "",
               secret: str = "elicit-test-key-" + "k" * 32, keepalive: float = 0.2) -> Flask:
    jwt = {"TOOLDISCOVERY_JWT_SECRET": jwt_secret} if jwt_secret else {}
    return wiping_app("elicit_app", label, runs, SECRET_KEY=secret, TOOLDISCOVERY_DIALECTS=["mcp"],
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage or None,
                      TOOLDISCOVERY_MCP_ELICITATION_TIMEOUT=timeout, TOOLDISCOVERY_STREAM_KEEPALIVE=keepalive, **jwt)
