"""A small app of the tests' own (the CLI and hostile-input tests build it, not the example app)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from flask import Flask

from flask_tooldiscovery import ToolDiscovery, ToolError


def create_app(config: dict[str, Any] | None = None) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(annotations={"readOnlyHint": True}, tags=["math"])
    def add(a: float, b: float) -> float:
        """Add two numbers.

        Args:
            a: First addend.
            b: Second addend.
        """
        return a + b

    @discovery.tool(version="1.2.0", annotations={"readOnlyHint": True, "openWorldHint": True})
    async def get_weather(city: Annotated[str, "City name"], units: Literal["metric", "imperial"] = "metric") -> dict:
        """Fetch current weather for a city.

        Args:
            city: The city.
            units: Metric or imperial.
        """
        if city == "Atlantis":
            raise ToolError(f"Unknown city: {city}", can_retry=False)
        return {"city": city, "units": units, "temperature": 12.5}

    @discovery.tool
    def boom() -> None:
        """Always fails unexpectedly."""
        raise RuntimeError("internal detail")

    app = Flask("sample")
    app.config.update(TOOLDISCOVERY_SERVER_NAME="example-tools", TOOLDISCOVERY_ALLOW_EXECUTE=True)
    app.config.update(config or {})
    discovery.init_app(app)
    return app
