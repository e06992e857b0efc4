"""Dialect server_card: the MCP Server Card (SEP-2127 draft) and the AI Catalog that lists it,
checked against the draft's JSON Schema and field list, the catalog's URL fetched from a live server."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from jsonschema import Draft202012Validator

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.dialects.mcp.revisions import SUPPORTED as ALL_VERSIONS
from flask_tooldiscovery.settings import SettingsError

from .conftest import live_server

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "mcp-server-card.schema.json").read_text())
CARD_SCHEMA = {**SCHEMA, "$ref": "#/$defs/ServerCard"}  # the file has no top-level $ref
CARD_FIELDS = set(SCHEMA["$defs"]["ServerCard"]["properties"])
REMOTE_FIELDS = set(SCHEMA["$defs"]["Remote"]["properties"])
CARD_TYPE = "application/mcp-server-card+json"


def build(**config: Any) -> Flask:
    d = ToolDiscovery()

    @d.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    app = Flask("card_tests")
    app.config.update(TESTING=True, TOOLDISCOVERY_SERVER_NAME="Acme tools", **config)
    d.init_app(app)
    return app


def valid_card(card: dict[str, Any]) -> dict[str, Any]:
    validator = Draft202012Validator(CARD_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = [e.message for e in validator.iter_errors(card)]
    assert not errors, errors
    assert set(card) <= CARD_FIELDS and all(set(remote) <= REMOTE_FIELDS for remote in card["remotes"])
    return card


def test_the_card_is_valid_against_the_draft_schema() -> None:
    r = build().test_client().get("/mcp/server-card", base_url="http://127.0.0.1:5000")
    assert r.status_code == 200 and r.mimetype == CARD_TYPE
    card = valid_card(r.get_json())
    assert card["$schema"] == "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
    assert card["name"] == "1.0.0.127/Acme-tools" and card["version"] == "1.0.0"
    assert card["title"] == "Acme tools" and card["description"] == "Tools from Acme tools, over MCP."
    assert card["remotes"] == [{"type": "streamable-http", "url": "http://127.0.0.1:5000/mcp",
                                "supportedProtocolVersions": list(ALL_VERSIONS)}]
    assert "tools" not in card  # the current draft lists none
    assert r.headers["Access-Control-Allow-Origin"] == "*"


def test_the_servers_icons_are_the_cards() -> None:
    icons = [{"src": "https://tools.acme.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"},
             "data:image/svg+xml;base64,PHN2Zy8+"]
    app = build(TOOLDISCOVERY_SERVER_ICONS=icons)
    card = valid_card(app.test_client().get("/mcp/server-card", base_url="http://127.0.0.1:5000").get_json())
    assert card["icons"] == [icons[0], {"src": icons[1]}]
    assert "icons" not in build().test_client().get("/mcp/server-card", base_url="http://127.0.0.1:5000").get_json()


def test_name_description_and_title_follow_the_settings_within_the_drafts_limits() -> None:
    app = build(TOOLDISCOVERY_SERVER_CARD_NAME="com.acme/tools", TOOLDISCOVERY_TITLE="Acme",
                TOOLDISCOVERY_SERVER_DESCRIPTION="Look up orders, refund them and " + "much more " * 20,
                TOOLDISCOVERY_SERVER_VERSION="2.1.0-beta.1", TOOLDISCOVERY_ALLOWED_HOSTS=["tools.acme.com"])
    card = valid_card(app.test_client().get("/mcp/server-card", base_url="https://tools.acme.com").get_json())
    assert card["name"] == "com.acme/tools" and card["title"] == "Acme" and card["version"] == "2.1.0-beta.1"
    assert len(card["description"]) <= 100 and card["description"].startswith("Look up orders, refund them and")
    assert card["description"].endswith("\u2026")
    derived = build(TOOLDISCOVERY_ALLOWED_HOSTS=["tools.acme.com"]).test_client().get(
        "/mcp/server-card", base_url="https://tools.acme.com:8443").get_json()
    assert derived["name"] == "com.acme.tools/Acme-tools"
    assert derived["remotes"][0]["url"] == "https://tools.acme.com:8443/mcp"
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_SERVER_CARD_NAME"):
        build(TOOLDISCOVERY_SERVER_CARD_NAME="acme tools")


def test_the_card_follows_the_mcp_mount_point_and_needs_mcp() -> None:
    client = build(TOOLDISCOVERY_MCP_URL_PREFIX="/agents/mcp").test_client()
    card = valid_card(client.get("/agents/mcp/server-card").get_json())
    assert card["remotes"][0]["url"] == "http://localhost/agents/mcp"
    catalog = client.get("/.well-known/ai-catalog.json").get_json()
    assert catalog["entries"][0]["url"] == "http://localhost/agents/mcp/server-card"
    assert client.get("/mcp/server-card").status_code == 404
    with pytest.raises(SettingsError, match="mount mcp"):
        build(TOOLDISCOVERY_DIALECTS=["server_card"])


@pytest.mark.parametrize("config, name, value", [
    ({"TOOLDISCOVERY_MCP_BEARER_TOKEN": "s3cret-token"}, "Authorization", "Bearer {token}"),
    ({"TOOLDISCOVERY_API_KEY": "s3cret-token", "TOOLDISCOVERY_API_KEY_HEADER": "X-Acme-Key"}, "X-Acme-Key", "{token}"),
])
def test_a_protected_endpoint_names_its_header_never_the_credential(config, name, value) -> None:
    app = build(TOOLDISCOVERY_DIALECTS=["mcp", "server_card"], **config)
    r = app.test_client().get("/mcp/server-card")
    assert r.status_code == 200 and "s3cret-token" not in r.get_data(as_text=True)  # the card needs no credentials
    [header] = valid_card(r.get_json())["remotes"][0]["headers"]
    assert (header["name"], header["value"], header["isSecret"]) == (name, value, True)
    assert "headers" not in build().test_client().get("/mcp/server-card").get_json()["remotes"][0]


def test_the_catalog_lists_the_card_and_its_url_fetches_it() -> None:
    with live_server(build()) as base:
        with urllib.request.urlopen(f"{base}/.well-known/ai-catalog.json") as response:
            assert response.headers["Content-Type"] == "application/ai-catalog+json"
            catalog = json.load(response)
        assert catalog["specVersion"] == "1.0" and catalog["host"] == {"displayName": "Acme tools"}
        [entry] = catalog["entries"]
        assert entry == {"identifier": "urn:air:127.0.0.1:mcp:Acme-tools", "type": CARD_TYPE,
                         "url": f"{base}/mcp/server-card"}
        request = urllib.request.Request(entry["url"], headers={"Accept": CARD_TYPE})
        with urllib.request.urlopen(request) as response:
            assert response.headers["Content-Type"] == CARD_TYPE
            card = valid_card(json.load(response))
        assert card["remotes"][0]["url"] == f"{base}/mcp"
        namespace, name = card["name"].split("/")
        assert entry["identifier"] == f"urn:air:{'.'.join(reversed(namespace.split('.')))}:mcp:{name}"


def test_card_and_catalog_are_cached_with_an_etag() -> None:
    client = build().test_client()
    for path in ("/mcp/server-card", "/.well-known/ai-catalog.json"):
        first = client.get(path)
        again = client.get(path, headers={"If-None-Match": first.headers["ETag"]})
        assert again.status_code == 304 and again.get_data() == b"" and "Content-Type" not in again.headers
        assert client.post(path).status_code == 405


def test_cli_exports_the_card() -> None:
    result = build().test_cli_runner().invoke(args=["tools", "export", "server_card", "--base-url",
                                                    "https://tools.acme.com"])
    card = valid_card(json.loads(result.output))
    assert card["name"] == "com.acme.tools/Acme-tools" and card["remotes"][0]["url"] == "https://tools.acme.com/mcp"
