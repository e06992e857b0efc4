"""A notes app whose clients subscribe to changes: one note as a resource, kept in Redis so that
every server reads the same, a tool that edits it (and says so with ``resource_changed``) and one
that announces a change of the tool list. Start it as
``tests.apps.subscriptions_app:create_app(storage=<redis URL>)``; servers started with the same
``storage`` share the note and the subscriptions."""

from __future__ import annotations

from flask import Flask

from flask_tooldiscovery import ToolDiscovery

NOTE_URI = "notes://today"


def create_app(storage: str) -> Flask:
    import redis

    notes = redis.Redis.from_url(storage)
    discovery = ToolDiscovery()

    @discovery.resource(NOTE_URI, name="today", title="Today's note", mime_type="text/plain")
    def today() -> str:
        return (notes.get(NOTE_URI) or b"(empty)").decode()

    @discovery.tool
    def edit_note(text: str) -> str:
        """Replace today's note; subscribed clients hear that it changed."""
        notes.set(NOTE_URI, text)
        discovery.resource_changed(NOTE_URI)
        return "Saved."

    @discovery.tool
    def refresh_tools() -> str:
        """Tell subscribed clients to read the tool list again."""
        discovery.list_changed("tools")
        return "Announced."

    app = Flask("subscriptions")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_MCP_RESOURCES=True, TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True,
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage, TOOLDISCOVERY_STREAM_KEEPALIVE=1)
    discovery.init_app(app)
    return app
