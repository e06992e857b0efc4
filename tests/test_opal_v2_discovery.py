"""Opal's v2 discovery beside the official SDK on the same tools: the media type (v2 as soon as a
v2 feature is listed, v1 otherwise), the keys and types of the document, and ``instructions``
(TOOLDISCOVERY_INSTRUCTIONS, which MCP's ``initialize`` answers too)."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from flask_tooldiscovery import Envelope, ToolDiscovery

from .opal_sdk import by_name, sdk, sdk_app, shape

V1 = "application/json"
V2 = "application/vnd.optimizely.opal.tools.discovery+json"
INSTRUCTIONS = "Weather and reports for the Acme fleet; ask for a city first."


class WeatherParams(BaseModel):
    city: str = Field(description="City name")
    days: int = Field(1, description="Days ahead")


class ReportParams(BaseModel):
    topic: str = Field(description="What the report is about")


def sdk_tools(*, async_report: bool) -> None:
    @sdk.tool("get_weather", "Fetch the weather.")
    async def get_weather(params: WeatherParams) -> dict:
        return {"city": params.city, "days": params.days}

    @sdk.tool("report", "Make a report.", **({"mode": "async", "timeout": 600} if async_report else {}))
    async def report(params: ReportParams) -> dict:
        return {"topic": params.topic}


def our_tools(*, async_report: bool) -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool(name="get_weather", description="Fetch the weather.")
    def get_weather(city: Annotated[str, "City name"], days: Annotated[int, "Days ahead"] = 1) -> dict:
        return {"city": city, "days": days}

    @d.tool(name="report", description="Make a report.",
            **({"long_running": True, "timeout": 600} if async_report else {}))
    def report(topic: Annotated[str, "What the report is about"]) -> dict:
        return {"topic": topic}

    return d


@pytest.mark.parametrize("async_report, media_type", [(False, V1), (True, V2)], ids=["v1", "v2-async"])
def test_media_type_and_document_match_the_sdk(make_app, async_report: bool, media_type: str) -> None:
    with sdk_app(lambda: sdk_tools(async_report=async_report), instructions=INSTRUCTIONS) as theirs:
        answer = theirs.get("/discovery")
        their_type, their_doc = answer.headers["content-type"], answer.json()
    app = make_app(our_tools(async_report=async_report), TOOLDISCOVERY_DIALECTS=["opal"],
                   TOOLDISCOVERY_INSTRUCTIONS=INSTRUCTIONS)
    answer = app.test_client().get("/opal/discovery")
    assert (their_type, answer.mimetype) == (media_type, media_type)
    ours = answer.get_json()
    assert their_doc["instructions"] == ours["instructions"] == INSTRUCTIONS
    # Ours also names the server (name, description, version): the seed document lists them.
    assert set(ours) - set(their_doc) == {"name", "version"}
    assert by_name(ours["functions"]).keys() == by_name(their_doc["functions"]).keys()
    for name, function in by_name(their_doc["functions"]).items():
        mine = by_name(ours["functions"])[name]
        assert shape(mine) == shape(function), name
        # Field by field the same, but that ours writes a default into the description.
        for my_param, their_param in zip(mine["parameters"], function["parameters"], strict=True):
            assert my_param["description"].startswith(their_param["description"])
            assert {**my_param, "description": ""} == {**their_param, "description": ""}
        assert {**mine, "parameters": []} == {**function, "parameters": []}


def test_v1_stays_as_it_was_without_instructions(make_app) -> None:
    app = make_app(our_tools(async_report=False), TOOLDISCOVERY_DIALECTS=["opal"])
    answer = app.test_client().get("/opal/discovery")
    assert answer.mimetype == V1 and "instructions" not in answer.get_json()
    # The learned answer (the fast path) and a 304 keep the type of the document they stand for.
    app = make_app(our_tools(async_report=True), TOOLDISCOVERY_DIALECTS=["opal"])
    client = app.test_client()
    first = client.get("/opal/discovery")
    again = client.get("/opal/discovery")
    assert first.mimetype == again.mimetype == V2
    assert client.get("/opal/discovery", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304


@pytest.mark.parametrize("config, expected", [
    ({"TOOLDISCOVERY_SERVER_DESCRIPTION": "Acme tools"}, "Acme tools"),
    ({"TOOLDISCOVERY_SERVER_DESCRIPTION": "Acme tools", "TOOLDISCOVERY_INSTRUCTIONS": INSTRUCTIONS}, INSTRUCTIONS),
    ({}, None),
])
def test_mcp_instructions(make_app, config: dict[str, str], expected: str | None) -> None:
    app = make_app(our_tools(async_report=False), TOOLDISCOVERY_DIALECTS=["mcp"], **config)
    answer = app.test_client().post("/mcp", json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 200
    assert answer.get_json()["result"].get("instructions") == expected


def _returns_envelope() -> Envelope:
    return Envelope(message="ok")


def _undo(order_id: str) -> dict:
    return {"undone": order_id}


@pytest.mark.parametrize("options, function", [
    ({"wait": True}, None),
    ({"skippable_interaction": True}, None),
    ({"sensitive": "Check it"}, None),
    ({"rollback": _undo}, None),
    ({}, _returns_envelope),  # an envelope-returning tool lists nothing new: its return type says v2
], ids=["wait", "skippable_interaction", "sensitive", "rollback", "envelope"])
def test_each_v2_feature_alone_makes_discovery_v2(make_app, options: dict[str, object], function: object) -> None:
    d = ToolDiscovery()

    def plain() -> dict:
        return {}

    d.add_tool(function or plain, name="one", description="One tool.", **options)
    answer = make_app(d, TOOLDISCOVERY_DIALECTS=["opal"]).test_client().get("/opal/discovery")
    assert answer.mimetype == V2
