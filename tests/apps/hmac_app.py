"""An Opal app taking epi-hmac signed requests, for several gunicorn workers: each nonce must be
taken once whichever worker a request reaches (tests/test_once_workers.py)."""

from __future__ import annotations

import base64

from flask import Flask

from flask_tooldiscovery import ToolDiscovery

APP_KEY = "opal-app"
SECRET = base64.b64encode(b"a secret of thirty-two bytes....").decode()


def create_app(storage: str | None = None, per_process: bool = False) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(annotations={"title": "Echo", "readOnlyHint": True})
    def echo(text: str) -> dict[str, str]:
        """Echo the text.

        Args:
            text: What to echo.
        """
        return {"text": text}

    app = Flask(__name__)
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_HMAC_APP_KEY=APP_KEY,
                      TOOLDISCOVERY_OPAL_HMAC_SECRET=SECRET, TOOLDISCOVERY_STATE_STORAGE_URI=storage,
                      TOOLDISCOVERY_STATE_PER_PROCESS=per_process, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    discovery.init_app(app)
    return app
