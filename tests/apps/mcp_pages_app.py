"""An app for the MCP page cache's tests under gunicorn: 12 tools served 5 to a ``tools/list``
page, one of them for the ``admin`` scope and one visible to the subject ``bob`` alone; the caller
says who it is in ``X-User`` (``root`` holds ``admin``; none: ``guest``); ``POST /add/<name>`` registers a tool
while the server runs. Start it as ``tests.apps.mcp_pages_app:create_app()``."""

from __future__ import annotations

from typing import Any

from flask import Flask

from flask_tooldiscovery import Identity, ToolDiscovery


def constant(value: Any) -> Any:
    return lambda: value


def create_app() -> Flask:
    discovery = ToolDiscovery()
    for i in range(10):
        discovery.add_tool(constant(i), name=f"tool_{i:02d}", description=f"Tool {i}.")
    discovery.add_tool(lambda: "r", name="report", description="Admins only.", scopes=["admin"])
    discovery.add_tool(lambda: "b", name="bobs", description="Bob's own.",
                       visible=lambda identity: identity is not None and identity.subject == "bob")

    @discovery.identity
    def who(req: Any) -> Identity:
        user = req.headers.get("X-User", "guest")
        return Identity(subject=user, scopes=("admin",) if user == "root" else ())

    app = Flask("mcp_pages")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp", "oxp"], TOOLDISCOVERY_MCP_PAGE_SIZE=5)
    discovery.init_app(app)

    @app.post("/add/<name>")
    def add(name: str) -> dict[str, str]:
        discovery.add_tool(constant(name), name=name, description=f"Added {name}.")
        return {"added": name}

    return app
