"""GitHub's REST API as tools (``TOOLDISCOVERY_GITHUB_TOOLS``), searched in MCP by meaning
(``TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC``), for gunicorn ``--preload``: :func:`create_app` searches
once before it returns, as an app warming its index would, so the index is built and its tools'
embedding begun in the master, before the workers are forked. Each answer says which process
served it (``X-Worker``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from flask import Flask, Response

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.tools.providers import tool_from_object


def create_app() -> Flask:
    catalogue = json.loads(Path(os.environ["TOOLDISCOVERY_GITHUB_TOOLS"]).read_text())
    tools = [tool_from_object(t) for t in catalogue["tools"]]
    discovery = ToolDiscovery()
    discovery.add_provider(tools)
    app = Flask("semantic")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp", "explorer"], TOOLDISCOVERY_TOOL_SEARCH=True,
                      TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC=True)
    discovery.init_app(app)

    @app.after_request
    def served_by(response: Response) -> Response:
        response.headers["X-Worker"] = str(os.getpid())
        return response

    warmed = app.test_client().get("/explorer/tools", query_string={"q": "list the repositories"})
    assert warmed.status_code == 200, warmed.get_data(as_text=True)
    return app
