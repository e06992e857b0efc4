"""The explorer previews a tool's UI beside its result, in headless Chromium against a live server:
the page hosts the UI in a sandboxed iframe and speaks MCP Apps' postMessage protocol to it (the
shipped ext-apps App bundle on the other side): the UI shows the input and the result of the call
made on the page, and its button calls an app-only tool through the explorer's API with the page's
token."""

from __future__ import annotations

import pytest
import requests
from playwright.sync_api import expect

from ..apps.ui_app import create_app
from ..conftest import live_server

pytestmark = pytest.mark.browser

TOKEN = "page-token"


def test_the_preview_shows_the_result_of_the_call_made_on_the_page(page) -> None:
    app = create_app(TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_BEARER_TOKEN=TOKEN)
    page.set_default_timeout(15_000)
    with live_server(app) as base:
        page.goto(f"{base}/explorer/#tool=get_order")
        page.wait_for_selector("body[data-ready='true']")
        page.wait_for_selector("#td-name:has-text('get_order')")
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
        view.locator("#refresh").click()  # refresh_order, app-only, through POST /explorer/tools/.../call
        expect(view.locator("#refreshed")).to_have_text("status shipped")
        expect(page.locator("#td-ui-notes")).to_contain_text("The UI called refresh_order.")

        served = requests.get(f"{base}/explorer/tools/get_order/ui", timeout=10)  # no token: a page
        missing = requests.get(f"{base}/explorer/tools/ping/ui", timeout=10)
        refused = requests.post(f"{base}/explorer/tools/refresh_order/call", json={"order_id": "A-17"}, timeout=10)
    csp = served.headers["Content-Security-Policy"]
    assert "connect-src 'self' https://api.example.com" in csp and "frame-ancestors 'self'" in csp
    assert "default-src 'none'" in csp and served.headers["Content-Type"].startswith("text/html")
    assert missing.status_code == 404 and missing.json() == {"error": "Tool 'ping' has no UI."}
    assert refused.status_code == 401  # without the page's token the same call is refused
