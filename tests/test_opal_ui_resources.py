"""Opal's UI resources beside the official SDK (PyPI ``optimizely-opal.opal-tools-sdk``) serving the
same resources: the function's ``ui_resource`` in discovery (a Proteus document, its Bridge to the
MCP App) and ``POST /resources/read`` of both (keys, types, values; the statuses of a body without
``uri`` and of an unknown one), and what ours does where the SDK is weaker (a failing template
answers a plain 500, never its exception's text). tests/test_opal_proteus.py has the documents."""

from __future__ import annotations

import json
import logging

from pydantic import BaseModel, Field

from flask_tooldiscovery import ToolDiscovery, UIError
from flask_tooldiscovery.catalog.ui import MIME_TYPE

from .apps.ui_app import create_app, leaky_app
from .opal_sdk import by_name, sdk, sdk_app, shape

CARD = "ui://shop/order-card"
DOC = "ui://opal/get_order"
PROTEUS_MIME_TYPE = "application/vnd.opal.proteus+json"  # the SDK's UI.MIME_TYPE


class OrderParams(BaseModel):
    order_id: str = Field(description="The order's id")


def sdk_side(html: str, document: str) -> None:
    """The SDK's form of the ui_app's get_order, its Proteus document (``document``, parsed by the
    SDK's model) and its card (``html``)."""
    from opal_tools_sdk.proteus import ProteusDocument

    @sdk.resource(uri=CARD, name="order_card.html", mime_type=MIME_TYPE)
    async def card() -> str:
        return html

    @sdk.resource(uri=DOC, name="get_order")
    async def doc() -> ProteusDocument:
        return ProteusDocument.model_validate_json(document)

    @sdk.tool("get_order", "Show one order as a card.", ui_resource=DOC)
    async def get_order(params: OrderParams) -> dict:
        return {"id": params.order_id}


def test_ui_resource_and_resources_read_match_the_sdk() -> None:
    ours = create_app(TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    read = ours.post("/opal/resources/read", json={"uri": CARD})
    assert read.status_code == 200 and read.mimetype == "application/json"
    mine = read.get_json()
    mine_doc = ours.post("/opal/resources/read", json={"uri": DOC}).get_json()
    with sdk_app(lambda: sdk_side(mine["text"], mine_doc["text"])) as theirs:
        their_read = theirs.post("/resources/read", json={"uri": CARD})
        their_doc = theirs.post("/resources/read", json={"uri": DOC}).json()
        their_discovery = theirs.get("/discovery")
        their_functions = by_name(their_discovery.json()["functions"])
        their_statuses = [theirs.post("/resources/read", json=body).status_code
                          for body in ({}, {"uri": "ui://shop/none"})]
    assert their_read.status_code == 200
    assert shape(mine) == shape(their_read.json()) and mine == their_read.json()
    assert mine == {"uri": CARD, "text": mine["text"], "mimeType": MIME_TYPE}
    assert "window.McpApps=" in mine["text"] and "<h1>Your &lt;order&gt;</h1>" in mine["text"]
    assert shape(mine_doc) == shape(their_doc) and mine_doc["mimeType"] == their_doc["mimeType"] == PROTEUS_MIME_TYPE
    assert json.loads(mine_doc["text"]) == json.loads(their_doc["text"])

    discovery = ours.get("/opal/discovery")
    assert discovery.mimetype == their_discovery.headers["content-type"].split(";")[0]  # a UI alone: still v1
    functions = by_name(discovery.get_json()["functions"])
    assert functions["get_order"]["ui_resource"] == their_functions["get_order"]["ui_resource"] == DOC
    assert type(functions["get_order"]["ui_resource"]) is type(their_functions["get_order"]["ui_resource"])
    assert "ui_resource" not in functions["ping"]
    assert "refresh_order" not in functions  # app-only: no host between Opal's list and the model

    statuses = [ours.post("/opal/resources/read", json=body).status_code for body in ({}, {"uri": "ui://shop/none"})]
    assert statuses == their_statuses == [400, 404]
    assert ours.post("/opal/resources/read", json={}).get_json()["detail"] == "Missing 'uri' field in request body"
    bad = ours.post("/opal/resources/read", data="{", content_type="application/json")
    assert bad.status_code == 400 and "Traceback" not in bad.get_data(as_text=True)


def test_resources_read_takes_the_credentials_calls_take() -> None:
    ours = create_app(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_BEARER_TOKEN="opal-secret").test_client()
    for uri in (CARD, DOC):
        assert ours.post("/opal/resources/read", json={"uri": uri}).status_code == 401
        assert ours.post("/opal/resources/read", json={"uri": uri},
                         headers={"Authorization": "Bearer opal-secret"}).status_code == 200


def test_a_failing_template_is_a_plain_500(caplog) -> None:
    app = leaky_app("opal")
    with caplog.at_level(logging.ERROR, logger="flask_tooldiscovery"):
        r = app.test_client().post("/opal/resources/read", json={"uri": "ui://leaky.html"})
    assert r.status_code == 500
    assert r.get_json()["detail"] == "The resource failed to render; the server log has the details."
    assert "request context" not in r.get_data(as_text=True)
    assert any(isinstance(rec.exc_info[1], UIError) for rec in caplog.records if rec.exc_info)


def test_an_app_without_a_ui_has_no_resources_to_read(make_app) -> None:
    plain = ToolDiscovery()
    plain.tool(name="ping")(lambda: "pong")
    client = make_app(plain, TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    assert client.post("/opal/resources/read", json={"uri": CARD}).status_code == 404
    assert "ui_resource" not in client.get("/opal/discovery").get_json()["functions"][0]
