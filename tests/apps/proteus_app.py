"""An app whose tools have Opal UIs of every kind: ``get_order`` an MCP App only (Opal gets a
Bridge to it), ``order_summary`` a Proteus document only (no App: MCP shows none), ``order_form``
both (its own Proteus template, framing the App), ``ping`` none."""

from __future__ import annotations

from typing import Any, TypedDict

from flask import Flask

from flask_tooldiscovery import UI, ToolDiscovery

from .ui_app import app_with

CARD = UI("order_card.html", uri="ui://shop/order-card", context={"heading": "Your order"}, preferred_size=(420, 260))
SUMMARY = {
    "$type": "Document",
    "title": "Order summary",
    "body": [
        {"$type": "Heading", "children": {"$type": "Value", "path": "/id"}},
        {"$type": "DataTable", "columns": [{"accessorKey": "item", "header": "Item"},
                                           {"accessorKey": "total", "header": "Total", "format": "Number"}],
         "data": {"$type": "Value", "path": "/lines"}},
    ],
}


class Line(TypedDict):
    item: str
    total: float


class Order(TypedDict):
    id: str
    item: str
    total: float
    lines: list[Line]


def make_discovery() -> ToolDiscovery:
    discovery = ToolDiscovery()

    @discovery.tool(ui=CARD, annotations={"readOnlyHint": True})
    def get_order(order_id: str) -> Order:
        """Show one order as a card."""
        return {"id": order_id, "item": "Blue mug", "total": 12.5, "lines": [{"item": "Blue mug", "total": 12.5}]}

    @discovery.tool(proteus=SUMMARY, annotations={"readOnlyHint": True})
    def order_summary(order_id: str) -> dict[str, Any]:
        """Summarise an order's lines."""
        return {"id": order_id, "lines": [{"item": "Blue mug", "total": 12.5}]}

    @discovery.tool(ui=CARD, proteus="order_form.proteus.json", title='Order "again"')
    def order_form(item: str, quantity: int = 1) -> dict[str, Any]:
        """Order an item again."""
        return {"item": item, "quantity": quantity}

    @discovery.tool
    def ping() -> str:
        """A tool without an interface."""
        return "pong"

    return discovery


def create_app(**config: Any) -> Flask:
    return app_with(make_discovery(), __name__, **config)
