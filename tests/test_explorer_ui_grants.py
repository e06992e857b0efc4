"""The explorer's preview of a tool's UI (``GET /explorer/tools/<name>/ui``) serves the UI of a tool
everyone sees, or of a tool the caller may see through the grant its detail carries (``ui.url``,
sealed with the app's ``SECRET_KEY``, good for a few minutes, for that tool on that mount only).
Everything else is one and the same 404, so probing names says nothing of hidden tools."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from flask import Flask
from itsdangerous import TimestampSigner

from flask_tooldiscovery import UI, Identity, ToolDiscovery
from flask_tooldiscovery.calls.approvals import sealer
from flask_tooldiscovery.dialects.explorer.ui_preview import GRANT_TTL

from .apps.ui_app import TEMPLATES
from .conftest import live_server

KEY, OLD_KEY = "grant-key-now", "grant-key-before"
ADMIN = {"X-User": "root", "X-Scopes": "admin"}
BLUE = {"X-User": "bob", "X-Team": "blue"}
NO_UI = {"error": "No tool UI here."}


def discovery() -> ToolDiscovery:
    d = ToolDiscovery()
    d.tool(name="public_card", ui="order_card.html")(lambda: "x")
    d.tool(name="public_plain")(lambda: "x")
    d.tool(name="admin_card", ui=UI("order_card.html", uri="ui://admin/card"), scopes=["admin"])(lambda: "x")
    d.tool(name="admin_other_card", ui=UI("order_card.html", uri="ui://admin/other"), scopes=["admin"])(lambda: "x")
    d.tool(name="admin_plain", scopes=["admin"])(lambda: "x")
    d.tool(name="blue_card", ui=UI("order_card.html", uri="ui://blue/card"),
           visible=lambda who: who is not None and who.claims.get("team") == "blue")(lambda: "x")

    @d.identity
    def from_headers(request: Any) -> Identity | None:
        if "X-User" not in request.headers:
            return None
        return Identity(subject=request.headers["X-User"], scopes=tuple(request.headers.get("X-Scopes", "").split()),
                        claims={"team": request.headers.get("X-Team", "")})

    return d


def build(name: str = "grants", **config: Any) -> Flask:
    app = Flask(name, template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"], **config)
    discovery().init_app(app)
    return app


def frame_url(client: Any, tool: str, headers: dict[str, str]) -> str:
    """Where the detail the caller gets says to frame the tool's UI from."""
    detail = client.get(f"/explorer/tools/{tool}", headers=headers)
    assert detail.status_code == 200, detail.get_data(as_text=True)
    url: str = detail.get_json()["ui"]["url"]
    return url


def refused(answer: Any) -> bool:
    return answer.status_code == 404 and answer.get_json() == NO_UI


def test_an_anonymous_probe_learns_nothing_of_hidden_tools() -> None:
    app = build(SECRET_KEY=KEY)
    with live_server(app) as base:
        probes = {name: requests.get(f"{base}/explorer/tools/{name}/ui", timeout=10)
                  for name in ("admin_card", "blue_card", "admin_plain", "public_plain", "no_such_tool", "a/b")}
        served = requests.get(f"{base}/explorer/tools/public_card/ui", timeout=10)
    for name, answer in probes.items():
        assert (answer.status_code, answer.content, answer.headers["Content-Type"]) == (
            404, probes["no_such_tool"].content, "application/json"), name
    assert probes["no_such_tool"].json() == NO_UI
    assert served.status_code == 200 and served.headers["Content-Type"].startswith("text/html")
    # credentials sent to the route itself change nothing: the frame never sends them
    assert refused(app.test_client().get("/explorer/tools/admin_card/ui", headers=ADMIN))


def test_the_detail_of_a_tool_everyone_sees_frames_it_without_a_grant() -> None:
    client = build(SECRET_KEY=KEY).test_client()
    detail = client.get("/explorer/tools/public_card")
    assert detail.get_json()["ui"]["url"] == "/explorer/tools/public_card/ui" and detail.headers["ETag"]
    assert client.get("/explorer/tools/public_card/ui").status_code == 200
    assert "url" not in client.get("/explorer/tools/public_plain").get_json()


def test_the_granted_url_of_an_authorized_callers_detail_serves_the_ui() -> None:
    app = build(SECRET_KEY=KEY)
    client = app.test_client()
    for tool, who in (("admin_card", ADMIN), ("blue_card", BLUE)):
        url = frame_url(client, tool, who)
        assert urlsplit(url).path == f"/explorer/tools/{tool}/ui" and parse_qs(urlsplit(url).query)["grant"]
        assert client.get(f"/explorer/tools/{tool}").status_code == 404  # anonymous: no detail to get one from
        with live_server(app) as base:
            framed = requests.get(base + url, timeout=10)  # as the frame loads it: no credentials
        assert framed.status_code == 200 and framed.headers["Content-Type"].startswith("text/html")
        assert "frame-ancestors 'self'" in framed.headers["Content-Security-Policy"]
    detail = client.get("/explorer/tools/admin_card", headers=ADMIN)
    assert detail.headers["Cache-Control"] == "no-store" and "ETag" not in detail.headers  # this caller's, for now


def test_a_grant_opens_only_its_own_tool_on_its_own_mount() -> None:
    client = build(SECRET_KEY=KEY).test_client()
    grant = parse_qs(urlsplit(frame_url(client, "admin_card", ADMIN)).query)["grant"][0]
    for other in ("admin_other_card", "blue_card", "public_plain", "no_such_tool"):
        assert refused(client.get(f"/explorer/tools/{other}/ui", query_string={"grant": grant})), other
    elsewhere = build(SECRET_KEY=KEY, TOOLDISCOVERY_EXPLORER_URL_PREFIX="/dev/explorer").test_client()
    assert elsewhere.get("/dev/explorer/tools/admin_card", headers=ADMIN).status_code == 200
    assert refused(elsewhere.get("/dev/explorer/tools/admin_card/ui", query_string={"grant": grant}))


def test_a_tampered_grant_or_another_seal_is_the_same_404() -> None:
    app = build(SECRET_KEY=KEY)
    client = app.test_client()
    grant = parse_qs(urlsplit(frame_url(client, "admin_card", ADMIN)).query)["grant"][0]
    tampered = grant[:-2] + ("AA" if not grant.endswith("AA") else "BB")
    with app.test_request_context():  # what an approval seals, for the same tool and mount
        tool = app.extensions["tooldiscovery"].registry.resolve().get("admin_card")
        approval = sealer(GRANT_TTL, app.name).seal(tool, {"mount": "/explorer"}, None, "")
    for bad in (tampered, approval, "not-a-grant", "x" * 5000, ""):
        assert refused(client.get("/explorer/tools/admin_card/ui", query_string={"grant": bad})), bad[:20]


def test_an_expired_grant_is_the_same_404(monkeypatch: pytest.MonkeyPatch) -> None:
    client = build(SECRET_KEY=KEY).test_client()
    url = frame_url(client, "admin_card", ADMIN)
    now = int(time.time())
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: now + GRANT_TTL - 5)  # still in time
    assert client.get(url).status_code == 200
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: now + GRANT_TTL + 5)
    assert refused(client.get(url))


def test_a_key_rotated_into_the_fallbacks_still_verifies_a_grant() -> None:
    before = build(SECRET_KEY=OLD_KEY).test_client()
    url = frame_url(before, "admin_card", ADMIN)
    assert build(SECRET_KEY=KEY, SECRET_KEY_FALLBACKS=[OLD_KEY]).test_client().get(url).status_code == 200
    assert refused(build(SECRET_KEY=KEY).test_client().get(url))


def test_without_a_secret_key_only_the_uis_everyone_sees_preview() -> None:
    client = build().test_client()
    assert client.get(frame_url(client, "public_card", {})).status_code == 200
    detail = client.get("/explorer/tools/admin_card", headers=ADMIN)
    assert detail.status_code == 200 and detail.get_json()["ui"] == {"resourceUri": "ui://admin/card"}
    assert refused(client.get("/explorer/tools/admin_card/ui", query_string={"grant": "anything"}))


def test_where_discovery_needs_credentials_every_ui_needs_a_grant() -> None:
    client = build(SECRET_KEY=KEY, TOOLDISCOVERY_AUTH_DISCOVERY=True).test_client()
    assert client.get("/explorer/tools").status_code == 401
    assert refused(client.get("/explorer/tools/public_card/ui"))
    url = frame_url(client, "public_card", ADMIN)
    assert "grant=" in url and client.get(url).status_code == 200


def test_a_ui_shared_with_a_hidden_tool_renders_only_what_its_viewer_may_see() -> None:
    """Two tools sharing one UI: the anonymous preview of the public one is rendered with the tools
    anyone sees only (the hidden one, registered first, would otherwise be its ``tool``)."""
    d = ToolDiscovery()
    d.tool(name="vault_card", title="Vault Override Card", ui="order_card.html", scopes=["admin"])(lambda: "x")
    d.tool(name="shop_card", title="Shop Order Card", ui="order_card.html")(lambda: "x")

    @d.identity
    def from_headers(request: Any) -> Identity | None:
        return Identity(subject="root", scopes=("admin",)) if "X-User" in request.headers else None

    app = Flask("shared_ui", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"], SECRET_KEY=KEY)
    d.init_app(app)
    client = app.test_client()
    public = client.get(frame_url(client, "shop_card", {}))
    assert public.status_code == 200
    assert "Shop Order Card" in public.get_data(as_text=True)
    assert "Vault" not in public.get_data(as_text=True)
    granted = client.get(frame_url(client, "vault_card", ADMIN))
    assert granted.status_code == 200 and "Vault Override Card" in granted.get_data(as_text=True)
    # what the UI loads is not told the address it was framed from, grant included
    assert granted.headers["Referrer-Policy"] == "no-referrer"
