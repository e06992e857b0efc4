"""A realistic app offering a handful of tools through every dialect, and an existing flask-smorest
API (``pets.py``, with the ``example`` extra) offered as tools without touching its views.

Run it with ``flask --app example_app run`` or ``gunicorn "example_app:create_app()"``.
"""

from __future__ import annotations

import asyncio
import enum
import json
import math
import os
import secrets
import struct
import zlib
from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from flask import Flask

from flask_tooldiscovery import UI, Envelope, Image, ToolContext, ToolDiscovery, ToolError

try:  # the pets API needs the example extra (flask-smorest); the example runs without it
    from . import pets
except ImportError:  # pragma: no cover - exercised by the deploy test's bare install
    pets = None  # type: ignore[assignment]

discovery = ToolDiscovery()
discovery.category("math", "Math", "Arithmetic and statistics", icon="calculator")
discovery.category("weather", "Weather", "Forecasts and conditions", icon="cloud")
discovery.category("orders", "Orders", "The shop's order book", icon="package")
if pets is not None:
    pets.offer(discovery)  # the flask-smorest views, as tools


class Priority(enum.Enum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


@dataclass
class Address:
    """A postal address.

    Args:
        street: Street and number.
        city: City.
        country: ISO 3166-1 alpha-2 country code.
    """

    street: str
    city: str
    country: str = "DE"


class Forecast(TypedDict):
    city: str
    units: str
    temperature: float
    conditions: str


_CITIES = {"berlin": 11.5, "paris": 14.0, "lisbon": 19.5, "oslo": 3.0}


@discovery.tool(annotations={"title": "Add numbers", "readOnlyHint": True, "destructiveHint": False,
                             "idempotentHint": True, "openWorldHint": False},
                category="math", tags=["math"], examples=[{"description": "Two plus three", "input": {"a": 2, "b": 3}}])
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: First addend.
        b: Second addend.
    """
    return a + b


@discovery.tool(annotations={"title": "Mean of numbers", "readOnlyHint": True, "destructiveHint": False,
                             "openWorldHint": False}, category="math", tags=["math", "statistics"])
def mean(values: list[float], round_to: int | None = None) -> float:
    """Arithmetic mean of a list of numbers.

    Args:
        values: The numbers; at least one.
        round_to: Round the result to this many decimals.
    """
    if not values:
        raise ToolError("Give at least one value.", can_retry=True,
                        additional_prompt_content="Pass a non-empty list of numbers.")
    result = math.fsum(value / len(values) for value in values)  # no overflow of the sum on the way
    if not math.isfinite(result):
        raise ToolError("The mean is too large to write as a number.")
    return round(result, round_to) if round_to is not None else result


@discovery.tool(annotations={"title": "Current weather", "readOnlyHint": True, "destructiveHint": False,
                             "openWorldHint": True}, category="weather",
                tags=["weather"], version="1.2.0", timeout=5, cost_estimate="low")
async def get_weather(city: Annotated[str, "City name"],
                      units: Literal["metric", "imperial"] = "metric",
                      ctx: ToolContext = None) -> Forecast:
    """Fetch current weather for a city.

    Args:
        units: Metric (Celsius) or imperial (Fahrenheit).
    """
    await asyncio.sleep(0.01)
    celsius = _CITIES.get(city.strip().lower())
    if celsius is None:
        raise ToolError(f"Unknown city: {city}", can_retry=False,
                        developer_message=f"city {city!r} not in the demo table")
    temp = celsius if units == "metric" else round(celsius * 9 / 5 + 32, 1)
    return {"city": city, "units": units, "temperature": temp, "conditions": "partly cloudy"}


@discovery.tool(annotations={"title": "Place an order", "readOnlyHint": False, "destructiveHint": True,
                             "idempotentHint": False, "openWorldHint": False}, category="orders",
                requires_approval=True, tags=["orders"])
def create_order(
    items: Annotated[list[str], "Product SKUs"],
    ship_to: Address,
    priority: Priority = Priority.NORMAL,
    gift_note: str | None = None,
    ctx: ToolContext = None,
) -> dict:
    """Place an order for the given products.

    Args:
        items: Product SKUs, at least one.
        ship_to: The delivery address.
        priority: How fast to ship.
        gift_note: Printed on the packing slip.
    """
    if not items:
        raise ToolError("An order needs at least one item.")
    return {
        "order_id": f"ord-{abs(hash((tuple(items), ship_to.city))) % 100000:05d}",
        "items": items,
        "ship_to": ship_to,
        "priority": priority,
        "gift_note": gift_note,
        "placed_by": ctx.user_id if ctx else None,
    }


#: The order card (templates/order_card.html): MCP Apps hosts and the explorer show it with the result, and
#: Opal frames it in a Proteus document (ui://opal/order_status) that lists the fields below where it cannot.
ORDER_CARD = UI("order_card.html", uri="ui://example/order-card", context={"shop": "Example shop"},
                prefers_border=True, preferred_size=(420, 240))


class _OrderStatus(TypedDict):
    order_id: str
    status: str


class OrderStatus(_OrderStatus, total=False):
    """An order's status (and, when asked, every status it had)."""

    history: list[str]


@discovery.tool(annotations={"title": "Order status", "readOnlyHint": True, "destructiveHint": False,
                             "openWorldHint": False}, category="orders", ui=ORDER_CARD)
def order_status(order_id: str, include_history: bool = False) -> OrderStatus:
    """Look up the status of an order.

    :param order_id: The id returned by create_order.
    :param include_history: Include every status change.
    """
    status = OrderStatus(order_id=order_id, status="shipped")
    if include_history:
        status["history"] = ["placed", "packed", "shipped"]
    return status


def release_delivery_slot(slot_id: str) -> dict:
    """Give a booked delivery slot back (the rollback of book_delivery_slot: Opal calls it to undo
    a booking, once per operation).

    Args:
        slot_id: The slot book_delivery_slot booked.
    """
    return {"released": slot_id}


@discovery.tool(annotations={"title": "Book a delivery slot", "readOnlyHint": False, "destructiveHint": False,
                             "idempotentHint": False, "openWorldHint": False}, category="orders",
                rollback=release_delivery_slot, sensitive="Books a courier for the customer.")
def book_delivery_slot(order_id: str, day: Literal["monday", "wednesday", "friday"] = "monday") -> Envelope:
    """Book a courier's delivery slot for an order. Answers Opal with its v2 envelope: a message,
    the booking, and the operation with how to undo it; other protocols get the booking itself.

    Args:
        order_id: The id returned by create_order.
        day: The delivery day.
    """
    slot = f"{order_id}-{day}"
    return Envelope(message=f"Slot {slot} booked.", content={"slot_id": slot, "order_id": order_id, "day": day},
                    operation={"operation_id": f"book-{slot}", "status": "completed", "rollback": {
                        "tool_name": "release_delivery_slot", "parameters": {"slot_id": slot}}})


#: How long packing one order takes: the demo's pace, slow enough to watch progress live.
PACK_SECONDS = 0.3


@discovery.tool(annotations={"title": "Pack orders", "readOnlyHint": True, "destructiveHint": False,
                             "openWorldHint": False}, category="orders", long_running=True)
async def pack_orders(count: Annotated[int, {"minimum": 1, "maximum": 20}] = 5, ctx: ToolContext = None) -> dict:
    """Pack a batch of orders, reporting progress as each one is packed (watch it live in the
    explorer, or with an MCP client's progress callback).

    Args:
        count: How many orders to pack.
    """
    for packed in range(1, count + 1):
        await asyncio.sleep(PACK_SECONDS)  # cancelled here when the caller gives up
        await ctx.report_progress(packed, count, f"packed order {packed} of {count}")
    ctx.log("info", f"{count} orders packed")
    return {"packed": count}


@discovery.tool(annotations={"title": "Temperature chart", "readOnlyHint": True, "destructiveHint": False,
                             "openWorldHint": False}, category="weather")
def temperature_chart(cities: list[Literal["berlin", "paris", "lisbon", "oslo"]]) -> Image:
    """A bar chart (PNG) of the current temperature in some cities, one bar per city.

    Args:
        cities: The cities to draw, in order.
    """
    if not cities:
        raise ToolError("Name at least one city.")
    width, height, bar = 12 * len(cities), 40, 8
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")  # PNG filter: none
        for x in range(width):
            city, inside = cities[x // 12], x % 12 < bar
            filled = inside and height - y <= int(_CITIES[city] * 2)
            row += b"\x2b\x6c\xb0" if filled else b"\xff\xff\xff"
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))
    return Image(png, "image/png")


@discovery.prompt(title="Weather briefing", complete={"audience": lambda value, _: [
    a for a in ("travellers", "farmers", "cyclists", "sailors") if a.startswith(value.lower())]})
def weather_briefing(city: Literal["berlin", "paris", "lisbon", "oslo"], audience: str = "travellers") -> list[object]:
    """Ask for a short weather briefing on a city, its temperature chart attached.

    Args:
        city: The city to brief on.
        audience: Who the briefing is for.
    """
    return [f"Write a three-line weather briefing on {city.title()} for {audience}: it is {_CITIES[city]} °C now.",
            temperature_chart([city])]


def create_app(config: dict | None = None) -> Flask:
    """The example app with every dialect mounted and the explorer allowed to execute."""
    app = Flask(__name__)
    app.config.update(
        TOOLDISCOVERY_TITLE="Example tools",
        TOOLDISCOVERY_ALLOW_EXECUTE=True,
        TOOLDISCOVERY_SERVER_NAME="example-tools",
        TOOLDISCOVERY_SERVER_DESCRIPTION="Demo tools: math, weather (with a chart) and a small order book.",
        TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,  # a local demo, open on purpose
    )
    for key, value in os.environ.items():  # TOOLDISCOVERY_* from the environment, JSON-parsed
        if key.startswith("TOOLDISCOVERY_"):
            try:
                app.config[key] = json.loads(value)
            except ValueError:
                app.config[key] = value
    app.config.update(config or {})
    if not app.config.get("SECRET_KEY"):  # seals approvals (create_order, remove_pet need a person's yes)
        # One process (flask run, flask tools ...) is served by a key of its own; wsgi.py, the
        # entry point of several workers, warns when they would each have theirs.
        app.config["SECRET_KEY"] = os.environ.get("FLASK_SECRET_KEY") or secrets.token_hex(32)
    if pets is not None:
        pets.register(app)
    else:
        app.logger.info("flask-smorest is not installed: the pets API is left out (pip install -e '.[example]')")
    discovery.init_app(app)

    @app.get("/")
    def index() -> dict:
        return {"manifest": "/.well-known/tool-discovery", "explorer": "/explorer/", "opal": "/opal/discovery",
                "oxp": "/oxp/tools", "tdp": "/api/v1/tools", "mcp": "/mcp",
                **({"pets": "/api/pets/"} if pets is not None else {})}

    return app
