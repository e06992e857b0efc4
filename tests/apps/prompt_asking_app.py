"""A prompt that asks its caller while it renders (two questions, one after another) and a resource
template whose reader asks one, with subscriptions on and a tool that registers a prompt at run
time, for the tests of prompts and resources that ask over MCP. ``create_app(storage=...)``: servers
started with the same ``storage`` (a Redis URL) hand answers and list changes to each other."""

from __future__ import annotations

import itertools

from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
PACE_FORM = {"type": "object", "required": ["pace"], "properties": {
    "pace": {"type": "string", "enum": ["slow", "brisk"], "default": "slow"}}}


def create_app(storage: str = "", **config: object) -> Flask:
    discovery = ToolDiscovery()

    @discovery.prompt
    def trip_brief(ctx: ToolContext, days: str = "3") -> str:
        """Brief a trip: asks who travels, then at what pace (two rounds), then renders.

        Args:
            days: How long the trip is.
        """
        ctx.log("info", "asking who travels")
        name = ctx.elicit("Who travels?", NAME_FORM, key="name")
        pace = ctx.elicit("At what pace?", PACE_FORM, key="pace")
        if not (name.accepted and pace.accepted):
            return f"Plan a {days}-day trip."
        return f"Plan a {pace.content['pace']} {days}-day trip for {name.content['name']}."

    @discovery.resource("trips://{city}", mime_type="text/plain")
    def trip_notes(ctx: ToolContext, city: str) -> str:
        """Notes on a trip to a city, for whoever says who travels."""
        name = ctx.elicit(f"Who travels to {city}?", NAME_FORM, key="name")
        return f"{city}: notes for {name.content['name'] if name.accepted else 'nobody'}."

    added = itertools.count(1)

    @discovery.tool
    def add_briefing() -> str:
        """Register one more prompt while the app runs (listening clients hear the prompt list changed)."""
        name = f"briefing_{next(added)}"
        discovery.add_prompt(lambda: "Brief me.", name=name, description="Registered at run time.")
        return name

    app = Flask("prompt_asking")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True, TOOLDISCOVERY_MCP_RESOURCES=True,
                      TOOLDISCOVERY_STREAM_KEEPALIVE=1,
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage or None, SECRET_KEY="prompt-asking-secret", **config)
    discovery.init_app(app)
    return app
