"""Prompts, completions and icons as an app of this package writes them: a code review prompt with a
``Literal`` argument, a trip planner whose city is completed by a function that reads the country
already chosen, an async prompt that reads its caller, a prompt with an image and an embedded
resource, one only callers holding a scope see, and a resource template whose variable is completed.
Start it as ``tests.apps.prompts_app:create_app()`` (gunicorn) or call ``create_app(**config)``."""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated, Literal

from flask import Flask

from flask_tooldiscovery import EmbeddedResource, Identity, Image, Message, ToolContext, ToolDiscovery, ToolError

#: A 1x1 PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
                       "AAAABJRU5ErkJggg==")
CITIES = {"France": ["Paris", "Parthenay", "Pau", "Lyon"], "Italy": ["Palermo", "Parma", "Rome"]}
REVIEW_ICON = {"src": "https://example.com/review.svg", "mimeType": "image/svg+xml", "sizes": ["any"]}


def cities(value: str, arguments: dict[str, str]) -> list[str]:
    """The cities of the country already chosen (all of them otherwise) starting with ``value``."""
    known = CITIES.get(arguments.get("country", ""), [c for group in CITIES.values() for c in group])
    return [c for c in known if c.lower().startswith(value.lower())]


def create_app(**config: object) -> Flask:
    """Each request names its caller and scopes: ``Authorization: Bearer <name>:<scope>,<scope>``."""
    discovery = ToolDiscovery()
    discovery.identity(lambda req: _caller(req.headers.get("Authorization", "")))

    @discovery.tool(icons=["https://example.com/add.png"])
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @discovery.tool
    def count_words(text: str) -> int:
        """Count the words of a text."""
        return len(text.split())

    @discovery.prompt(title="Request Code Review", icons=[REVIEW_ICON])
    def code_review(code: str, language: Literal["python", "javascript", "rust"] = "python") -> str:
        """Ask for a review of some code.

        Args:
            code: The code to review.
            language: The language it is written in.
        """
        return f"Please review this {language} code:\n{code}"

    @discovery.prompt(complete={"city": cities})
    def plan_trip(country: Annotated[str, "The country to visit."], city: Annotated[str, "A city there."],
                  days: int = 3) -> list[Message]:
        """Plan a trip."""
        if days < 1:
            raise ToolError("A trip lasts at least one day.")
        return [Message(f"Plan {days} days in {city}, {country}."),
                Message("Happy to. What do you enjoy most?", role="assistant")]

    @discovery.prompt
    async def greeting(ctx: ToolContext) -> str:
        """Greet whoever asks."""
        await asyncio.sleep(0)
        return f"Say hello to {ctx.user_id or 'a stranger'}."

    @discovery.prompt
    def describe_chart(report_id: str) -> list[object]:
        """Describe a chart, with the report it comes from.

        Args:
            report_id: The report's id.
        """
        return [Image(PNG, "image/png"), EmbeddedResource(f"reports://{report_id}", f"Report {report_id}: sales up."),
                "What does this chart say about the report?"]

    @discovery.prompt(scopes=["admin"])
    def audit() -> str:
        """Start an audit (admins only)."""
        return "List every change made today."

    @discovery.resource("reports://{report_id}", complete={"report_id": lambda value, _: [
        f"{n}" for n in range(1000) if f"{n}".startswith(value)]})
    def report(report_id: str) -> str:
        """A report by id."""
        return f"Report {report_id}"

    @discovery.resource("charts://{kind}/{year}", icons=["https://example.com/chart.png"])
    def chart(kind: Literal["bar", "line", "pie"], year: str) -> str:
        """A chart of a kind and a year."""
        return f"{kind} chart of {year}"

    app = Flask("prompts_app")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp", "explorer"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_MCP_RESOURCES=True, TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_SERVER_ICONS=[{"src": "https://example.com/server.png", "mimeType": "image/png",
                                                   "sizes": ["48x48"], "theme": "light"}])
    app.config.update(config)
    discovery.init_app(app)
    return app


def _caller(header: str) -> Identity | None:
    token = header.removeprefix("Bearer ").strip()
    if not token:
        return None
    name, _, scopes = token.partition(":")
    return Identity(subject=name, scopes=tuple(s for s in scopes.split(",") if s))
