"""The explorer previews a tool's UI beside its result, in headless Chromium against a live server:
the page hosts the UI in a sandboxed iframe and speaks MCP Apps' postMessage protocol to it (the
shipped ext-apps App bundle on the other side): the UI shows the input and the result of the call
made on the page, and its button calls an app-only tool through the explorer's API with the page's
token. A tool not everyone sees is framed from where its detail says (with a grant), as the frame
loads it: without the page's credentials."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from flask import Flask
from playwright.sync_api import expect

from flask_tooldiscovery import Identity

from ..apps.ui_app import CARD, ORDERS, TEMPLATES, create_app, make_discovery
from ..conftest import live_server
from .explorer import open_tool

pytestmark = pytest.mark.browser

TOKEN = "page-token"


def test_the_preview_shows_the_result_of_the_call_made_on_the_page(page) -> None:
    app = create_app(TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_BEARER_TOKEN=TOKEN)
    page.set_default_timeout(15_000)
    with live_server(app) as base:
        open_tool(page, base + "/explorer", "get_order")
        expect(page.locator("[data-tool='refresh_order'] .badge")).to_have_text(["app only"])
        page.fill("#td-token", TOKEN)
        page.fill("[data-path='/order_id']", "A-17")
        page.click("#td-execute")
        expect(page.locator("#td-status")).to_have_text("Done (HTTP 200).")
        frame = page.locator("#td-ui iframe")
        expect(frame).to_have_attribute("sandbox", "allow-scripts")
        expect(frame).to_have_attribute("allow", "clipboard-write")
        view = page.frame_locator("#td-ui iframe")
        expect(view.locator("h1")).to_have_text("Your <order>")
        expect(view.locator("#asked")).to_have_text("asked for A-17")
        expect(view.locator("#order")).to_have_text("A-17: Blue mug, 12.5")
        # refresh_order, app-only, through POST /explorer/tools/.../call. The click is dispatched to the
        # button itself: the page around the frame may still be moving (the history, the frame taking
        # the height the UI asks for), and a click at where the button was could land beside it.
        view.locator("#refresh").dispatch_event("click")
        expect(view.locator("#refreshed")).to_have_text("status shipped")
        expect(page.locator("#td-ui-notes")).to_contain_text("The UI called refresh_order.")

        served = requests.get(f"{base}/explorer/tools/get_order/ui", timeout=10)  # no token: a page
        missing = requests.get(f"{base}/explorer/tools/ping/ui", timeout=10)
        refused = requests.post(f"{base}/explorer/tools/refresh_order/call", json={"order_id": "A-17"}, timeout=10)
    csp = served.headers["Content-Security-Policy"]
    assert "connect-src 'self' https://api.example.com" in csp and "frame-ancestors 'self'" in csp
    assert "default-src 'none'" in csp and served.headers["Content-Type"].startswith("text/html")
    assert missing.status_code == 404 and missing.json() == {"error": "No tool UI here."}
    assert refused.status_code == 401  # without the page's token the same call is refused


def test_a_tool_only_members_see_is_framed_with_the_grant_its_detail_gives(page) -> None:
    discovery = make_discovery()

    @discovery.identity
    def member(request) -> Identity | None:  # the page's session: a cookie its fetches send
        return Identity(subject=request.cookies["member"]) if "member" in request.cookies else None

    @discovery.tool(ui=CARD, visible=lambda who: who is not None)
    def members_order(order_id: str) -> dict[str, Any]:
        """Show one order to members."""
        return ORDERS[order_id]

    app = Flask("members", template_folder=str(TEMPLATES))
    app.config.update(TESTING=True, TOOLDISCOVERY_ALLOW_EXECUTE=True, TOOLDISCOVERY_DIALECTS=["explorer"],
                      SECRET_KEY="members-key")
    discovery.init_app(app)
    page.set_default_timeout(15_000)
    with live_server(app) as base:
        page.context.add_cookies([{"name": "member", "value": "ann", "url": base}])
        open_tool(page, base + "/explorer", "members_order")
        page.fill("[data-path='/order_id']", "A-17")
        page.click("#td-execute")
        expect(page.locator("#td-status")).to_have_text("Done (HTTP 200).")
        view = page.frame_locator("#td-ui iframe")
        expect(view.locator("#order")).to_have_text("A-17: Blue mug, 12.5")
        src = page.locator("#td-ui iframe").get_attribute("src") or ""
        probed = requests.get(f"{base}/explorer/tools/members_order/ui", timeout=10)  # no grant, no cookie
        unknown = requests.get(f"{base}/explorer/tools/no_such_tool/ui", timeout=10)
    assert src.startswith("/explorer/tools/members_order/ui?grant=")
    assert (probed.status_code, probed.content) == (unknown.status_code, unknown.content)
    assert probed.status_code == 404 and probed.json() == {"error": "No tool UI here."}
