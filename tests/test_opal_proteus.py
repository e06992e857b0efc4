"""Opal's tool UIs in Opal's own format, Proteus (``application/vnd.opal.proteus+json``), checked with
the official SDK's model of it (PyPI ``optimizely-opal.opal-tools-sdk``, ``opal_tools_sdk.proteus``)
and against the SDK serving the same documents: a tool with an MCP App reads as a Document whose
Bridge frames the App by its ``ui://`` URI (the App still readable there, as HTML) with a fallback
that shows the result as text; a tool's own Proteus document (a dict, a template) beside or instead
of its HTML; what is refused at registration and ``init_app``; bad reads answered in JSON."""

from __future__ import annotations

import copy
import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from opal_tools_sdk.proteus import ProteusBridge, ProteusDocument
from pydantic import ValidationError

from flask_tooldiscovery import UI, RegistrationError, ToolDiscovery, UIError

from .apps.proteus_app import CARD, SUMMARY, create_app
from .apps.ui_app import TEMPLATES
from .conftest import live_server
from .opal_sdk import by_name, sdk, sdk_app

PROTEUS = "application/vnd.opal.proteus+json"
APP_HTML = "text/html;profile=mcp-app"


def read(client: Any, uri: str) -> dict[str, Any]:
    """``POST /opal/resources/read`` through ``client`` (httpx, or Flask's test client): its JSON."""
    answer = client.post("/opal/resources/read", json={"uri": uri})
    text = answer.get_data(as_text=True) if hasattr(answer, "get_data") else answer.text
    assert answer.status_code == 200, text
    assert answer.headers["content-type"].split(";")[0] == "application/json"
    result: dict[str, Any] = json.loads(text)
    return result


def document(answer: dict[str, Any]) -> tuple[ProteusDocument, dict[str, Any]]:
    """The answer's text as the SDK's model parses it (a ValidationError fails the test), and as JSON."""
    raw = json.loads(answer["text"])
    return ProteusDocument.model_validate(raw), raw


def bridges(node: Any) -> list[ProteusBridge]:
    """The Bridge elements of a parsed node, in order."""
    root = getattr(node, "root", node)
    if isinstance(root, list):
        return [b for item in root for b in bridges(item)]
    if isinstance(root, ProteusBridge):
        return [root]
    return bridges(root) if hasattr(root, "root") else []


def sdk_serves(uri: str, parsed: ProteusDocument) -> dict[str, Any]:
    """What the SDK's ``POST /resources/read`` answers for a ``@resource`` returning ``parsed``."""

    def define() -> None:
        @sdk.resource(uri=uri, name=uri)
        async def resource() -> ProteusDocument:
            return parsed

    with sdk_app(define) as theirs:
        answer = theirs.post("/resources/read", json={"uri": uri})
    assert answer.status_code == 200
    return answer.json()


def test_a_tool_with_an_app_reads_as_a_bridge_to_it_over_http() -> None:
    with live_server(create_app(TOOLDISCOVERY_DIALECTS=["opal", "mcp"])) as base, httpx.Client(base_url=base) as c:
        functions = by_name(c.get("/opal/discovery").json()["functions"])
        assert functions["get_order"]["ui_resource"] == "ui://opal/get_order"
        assert "ui_resource" not in functions["ping"]

        answer = read(c, "ui://opal/get_order")
        assert answer["uri"] == "ui://opal/get_order" and answer["mimeType"] == PROTEUS
        parsed, raw = document(answer)
        (bridge,) = bridges(parsed.body)
        assert bridge.resource == CARD.resource_uri and bridge.height == 260
        # The fallback: the result as text, a line per field of the output schema (the list of
        # objects left out), each "Label: " and the value at its JSON pointer.
        assert raw["body"]["fallback"] == [
            {"$type": "Text", "children": {"$type": "Concat", "children": [
                f"{label}: ", {"$type": "Value", "path": path}]}}
            for label, path in (("Id", "/id"), ("Item", "/item"), ("Total", "/total"))]
        assert raw["title"] == "get_order"

        # The SDK serving the same document answers the same (nothing of ours it would drop or add).
        theirs = sdk_serves(answer["uri"], parsed)
        assert theirs["mimeType"] == answer["mimeType"] and json.loads(theirs["text"]) == raw

        # The App the Bridge frames is read by its ui:// URI, through the same route: the HTML.
        app_answer = read(c, bridge.resource)
        assert app_answer["mimeType"] == APP_HTML and "window.McpApps=" in app_answer["text"]
        assert "<h1>Your order</h1>" in app_answer["text"]

        # MCP is as it was: the App, by its own URI.
        mcp = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                                   "params": {"uri": CARD.resource_uri}}).json()["result"]["contents"]
        assert [(item["uri"], item["mimeType"]) for item in mcp] == [(CARD.resource_uri, APP_HTML)]
        assert mcp[0]["text"] == app_answer["text"]


def test_a_native_proteus_document_is_what_opal_reads_and_mcp_shows_no_app() -> None:
    c = create_app(TOOLDISCOVERY_DIALECTS=["opal", "mcp"]).test_client()
    functions = by_name(c.get("/opal/discovery").get_json()["functions"])
    assert functions["order_summary"]["ui_resource"] == "ui://opal/order_summary"
    answer = read(c, "ui://opal/order_summary")
    assert answer["mimeType"] == PROTEUS
    parsed, raw = document(answer)
    assert raw == SUMMARY and bridges(parsed.body) == []
    assert json.loads(sdk_serves(answer["uri"], parsed)["text"]) == raw

    # a host that renders MCP Apps (it declared the extension at initialize: its session id says so)
    ui = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    session = c.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"extensions": ui},
        "clientInfo": {"name": "host", "version": "1"}}}).headers["Mcp-Session-Id"]
    host = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    tools = {t["name"]: t for t in c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                          headers=host).get_json()["result"]["tools"]}
    assert "ui" not in (tools["order_summary"].get("_meta") or {})
    listed = c.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
                    headers=host).get_json()["result"]
    assert [r["uri"] for r in listed["resources"]] == [CARD.resource_uri]  # the App alone, no Proteus


def test_only_proteus_declares_no_mcp_app(make_app) -> None:
    discovery = ToolDiscovery()
    given = copy.deepcopy(SUMMARY)
    discovery.tool(name="summary", proteus=given)(lambda: {"id": "A-1", "lines": []})
    given["body"] = {"$type": "Nope"}  # changed after it was checked: not what is served
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["opal", "mcp"]).test_client()
    init = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert "io.modelcontextprotocol/ui" not in init.get_json()["result"]["capabilities"].get("extensions", {})
    answer = read(c, "ui://opal/summary")
    assert answer["mimeType"] == PROTEUS and json.loads(answer["text"]) == SUMMARY


def test_a_proteus_template_beside_the_html() -> None:
    """ui_templates/order_form.proteus.json (docs/tool-uis.rst shows it): rendered with |tojson, a
    form and a Bridge to the tool's App."""
    c = create_app(TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    answer = read(c, "ui://opal/order_form")
    parsed, raw = document(answer)
    assert answer["mimeType"] == PROTEUS
    assert raw["title"] == 'Order "again"'  # |tojson: the quote escaped as JSON, not as HTML
    assert raw["body"][0] == {"$type": "Heading", "children": "Order an item again."}
    (bridge,) = bridges(parsed.body)
    assert bridge.resource == CARD.resource_uri
    assert read(c, bridge.resource)["mimeType"] == APP_HTML
    assert json.loads(sdk_serves(answer["uri"], parsed)["text"]) == raw
    page = (Path(__file__).resolve().parent.parent / "docs" / "tool-uis.rst").read_text()
    shown = page.split("``order_form.proteus.json``, a form", 1)[1].split(".. code-block:: html+jinja\n\n", 1)[1]
    template = (TEMPLATES / "order_form.proteus.json").read_text()
    assert textwrap.dedent(shown[:len(template) + 3 * template.count("\n")]) == template  # the page shows this one


def test_bad_reads_are_json_errors_as_the_sdk_answers() -> None:
    c = create_app(TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    with sdk_app(lambda: None) as theirs:
        sdk_statuses = [theirs.post("/resources/read", json=body).status_code
                        for body in ({}, {"uri": "ui://opal/nothing"})]
    for body, status, detail in (({"uri": "ui://opal/nothing"}, 404, "Resource not found: ui://opal/nothing"),
                                 ({"uri": "ui://opal/ping"}, 404, "Resource not found: ui://opal/ping"),
                                 ({}, 400, "Missing 'uri' field in request body"),
                                 ({"uri": 7}, 400, "Missing 'uri' field in request body")):
        answer = c.post("/opal/resources/read", json=body)
        assert (answer.status_code, answer.mimetype) == (status, "application/json")
        assert answer.get_json()["detail"] == detail
    assert sdk_statuses == [400, 404]
    for raw in ("{", "[1]"):
        answer = c.post("/opal/resources/read", data=raw, content_type="application/json")
        assert answer.status_code == 400 and answer.mimetype == "application/json"
        assert "Traceback" not in answer.get_data(as_text=True)


BAD_DOCUMENTS = [
    ({"$type": "Card", "body": "x"}, "a Proteus UI is a document"),
    ({"$type": "Document"}, "needs 'body'"),
    ({"$type": "Document", "body": "x", "footer": "y"}, "has no key 'footer'"),
    ({"$type": "Document", "body": [{"$type": "Paragraph", "children": "x"}]},
     r"body\[0\]: unknown element \$type 'Paragraph'"),
    ({"$type": "Document", "body": {"children": "x"}}, "body is an object without '\\$type'"),
    ({"$type": "Document", "body": {"$type": "Bridge"}}, "a Bridge's resource is the ui:// URI"),
    ({"$type": "Document", "body": {"$type": "Group", "children": [{"$type": "Text", "children": {"$type": "Nope"}}]}},
     r"body.children\[0\].children: unknown element"),
]


@pytest.mark.parametrize(("bad", "words"), BAD_DOCUMENTS)
def test_a_document_the_sdk_refuses_is_refused_at_registration(bad: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError):
        ProteusDocument.model_validate(bad)
    with pytest.raises(RegistrationError, match=f"tool 'shown': proteus: .*{words}"):
        ToolDiscovery().tool(name="shown", proteus=bad)(lambda: None)


@pytest.mark.parametrize(("bad", "words"), [
    (3, "proteus must be a Proteus document"),
    ("  ", "proteus must be a Proteus document"),
    ({"$type": "Document", "body": {1, 2}}, "is JSON"),
    ({"$type": "Document", "body": {"$type": "Bridge", "resource": "https://example.com/app"}}, "ui:// URI"),
])
def test_other_bad_proteus_is_refused_at_registration(bad: Any, words: str) -> None:
    with pytest.raises(RegistrationError, match=words):
        ToolDiscovery().tool(name="shown", proteus=bad)(lambda: None)


@pytest.mark.parametrize(("template", "words"), [
    ("missing.proteus.json", "Proteus template 'missing.proteus.json' not found"),
    ("not_json.proteus.json", "failed to render a JSON document"),
    ("not_proteus.proteus.json", "unknown element \\$type 'Paragraph'"),
])
def test_a_bad_proteus_template_fails_init_app_naming_it(template: str, words: str) -> None:
    discovery = ToolDiscovery()
    discovery.tool(name="shown", proteus=template)(lambda: None)
    app = Flask("bad_proteus", template_folder=str(TEMPLATES))
    with pytest.raises(UIError, match=f"tool 'shown': .*{words}"):
        discovery.init_app(app)


def test_an_app_uri_where_a_document_is_fails_init_app() -> None:
    discovery = ToolDiscovery()
    discovery.tool(name="card", ui=UI("order_card.html", uri="ui://opal/card"))(lambda: None)
    app = Flask("taken", template_folder=str(TEMPLATES))
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"])
    with pytest.raises(UIError, match="ui://opal/card: Opal's Proteus documents are at ui://opal/<tool name>"):
        discovery.init_app(app)


def test_a_template_failing_at_read_is_a_plain_500(caplog) -> None:
    state = {"up": True}

    def shop_name() -> str:  # a global of the app's templates, say, from a database that goes down
        if not state["up"]:
            raise RuntimeError("database password=hunter2 unreachable")
        return "Acme"

    discovery = ToolDiscovery()
    discovery.tool(name="shop", proteus="shop.proteus.json")(lambda: None)
    app = Flask("failing_proteus", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    app.jinja_env.globals["shop_name"] = shop_name
    discovery.init_app(app)  # renders once: fine
    c = app.test_client()
    assert json.loads(read(c, "ui://opal/shop")["text"])["title"] == "Acme"
    state["up"] = False
    with caplog.at_level(logging.ERROR, logger="flask_tooldiscovery"):
        answer = c.post("/opal/resources/read", json={"uri": "ui://opal/shop"})
    assert (answer.status_code, answer.mimetype) == (500, "application/json")
    assert answer.get_json()["detail"] == "The resource failed to render; the server log has the details."
    assert "hunter2" not in answer.get_data(as_text=True)
    assert any(isinstance(rec.exc_info[1], UIError) for rec in caplog.records if rec.exc_info)


def test_a_hidden_tools_document_is_not_found(make_app) -> None:
    discovery = ToolDiscovery()
    discovery.tool(name="shown", proteus=SUMMARY)(lambda: None)
    discovery.tool(name="secret", proteus=SUMMARY, visible=lambda identity: False)(lambda: None)
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["opal"]).test_client()
    assert [f["name"] for f in c.get("/opal/discovery").get_json()["functions"]] == ["shown"]
    assert read(c, "ui://opal/shown")["mimeType"] == PROTEUS
    hidden = c.post("/opal/resources/read", json={"uri": "ui://opal/secret"})
    assert hidden.status_code == 404 and hidden.get_json()["detail"] == "Resource not found: ui://opal/secret"


@pytest.mark.parametrize(("returns", "fallback"), [
    (str, [{"$type": "Text", "children": {"$type": "Concat", "children": [{"$type": "Value", "path": ""}]}}]),
    (dict, [{"$type": "Text", "children": "Shown: open this result in Opal on the web to see it."}]),
])
def test_the_fallback_of_a_result_without_fields(returns: type, fallback: list[Any]) -> None:
    """A string result is shown whole; a result whose fields are unknown (``-> dict``), by a sentence."""

    def shown() -> Any:
        return returns()

    shown.__annotations__["return"] = returns
    discovery = ToolDiscovery()
    discovery.tool(name="shown", title="Shown", ui=UI("order_card.html", uri="ui://shop/card"))(shown)
    app = Flask("fallbacks", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    discovery.init_app(app)
    parsed, raw = document(read(app.test_client(), "ui://opal/shown"))
    assert raw["body"]["fallback"] == fallback and bridges(parsed.body)[0].resource == "ui://shop/card"
