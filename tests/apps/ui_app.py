"""An app whose tools have an interface (an order card): ``get_order`` shows it, ``refresh_order``
is called by the card only (``visibility=["app"]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask

from flask_tooldiscovery import UI, ToolDiscovery

TEMPLATES = Path(__file__).resolve().parent / "ui_templates"
ORDERS = {"A-17": {"id": "A-17", "item": "Blue mug", "total": 12.5}}
CARD = UI("order_card.html", uri="ui://shop/order-card", context={"heading": "Your <order>"},
          csp={"connect_domains": ["https://api.example.com"]}, permissions=["clipboard_write"],
          prefers_border=True, preferred_size=(420, 260))


def make_discovery() -> ToolDiscovery:
    discovery = ToolDiscovery()

    @discovery.tool(ui=CARD, annotations={"readOnlyHint": True})
    def get_order(order_id: str) -> dict[str, Any]:
        """Show one order as a card."""
        return ORDERS[order_id]

    @discovery.tool(visibility=["app"], ui=CARD)
    def refresh_order(order_id: str) -> dict[str, Any]:
        """Refresh an order's delivery status (the card's button)."""
        return {"id": order_id, "status": "shipped"}

    @discovery.tool
    def ping() -> str:
        """A tool without an interface."""
        return "pong"

    return discovery


def app_with(discovery: ToolDiscovery, name: str = __name__, **config: Any) -> Flask:
    """A test app serving ``discovery``, its templates from :data:`TEMPLATES`, calls allowed."""
    app = Flask(name, template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_ALLOW_EXECUTE=True, **config)
    discovery.init_app(app)
    return app


def create_app(**config: Any) -> Flask:
    return app_with(make_discovery(), **config)


def leaky_app(dialect: str) -> Flask:
    """An app serving only ``dialect``, whose one tool ``leak`` has a UI template (leaky.html) that
    reads the request: it compiles, and fails when rendered outside a request."""
    discovery = ToolDiscovery()
    discovery.tool(name="leak", ui="leaky.html")(lambda: "x")
    app = Flask(f"leaky_{dialect}", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[dialect])
    discovery.init_app(app)
    return app
