"""A tool's interface in a real MCP Apps host: a page built from the ext-apps package's own host side
(AppBridge and its postMessage transport, npm ``@modelcontextprotocol/ext-apps`` 2.x) and the official
TypeScript MCP client, bundled by esbuild, in headless Chromium against a live server. The host reads
the tool's ``ui://`` resource, renders it in a sandboxed iframe, hands it the tool input and result;
the view (the package's shipped App bundle) shows them and calls an app-only tool through the host."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from flask import Response
from playwright.sync_api import expect

from ..apps.ui_app import create_app
from ..conftest import live_server
from ..npm_cache import installed

pytestmark = pytest.mark.browser

PACKAGES = ("@modelcontextprotocol/ext-apps@2.0.4", "@modelcontextprotocol/client@^2.0.0", "zod@^4.2.0",
            "esbuild@0.25")
ENTRY = Path(__file__).resolve().parent / "mcp_apps_host.js"
HOST_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>host</title>
<script type="module" src="/host.js"></script></head><body></body></html>"""


@pytest.fixture(scope="module")
def host_bundle(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The host page's script: AppBridge and the MCP client bundled for the browser."""
    esbuild = Path("node_modules") / ".bin" / "esbuild"
    bridge = Path("node_modules") / "@modelcontextprotocol" / "ext-apps" / "dist" / "src" / "app-bridge.js"
    home = installed("mcp-apps-host", PACKAGES, lambda h: (h / esbuild).exists() and (h / bridge).exists())
    esbuild = home / esbuild
    out = tmp_path_factory.mktemp("host") / "host.js"
    built = subprocess.run([str(esbuild), str(ENTRY), "--bundle", "--format=esm", "--platform=browser",
                            f"--outfile={out}"], env={**os.environ, "NODE_PATH": str(home / "node_modules")},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert built.returncode == 0, built.stdout
    return out.read_text()


def test_an_ext_apps_host_renders_the_card_and_the_card_calls_an_app_only_tool(page, host_bundle) -> None:
    app = create_app(TOOLDISCOVERY_DIALECTS=["mcp"])
    app.add_url_rule("/host", "host", lambda: Response(HOST_PAGE, mimetype="text/html"))
    app.add_url_rule("/host.js", "host_js", lambda: Response(host_bundle, mimetype="text/javascript"))
    page.set_default_timeout(15_000)
    with live_server(app) as base:
        page.goto(f"{base}/host")
        page.wait_for_function("typeof window.showTool === 'function'")
        page.evaluate("showTool('/mcp', 'get_order', {order_id: 'A-17'})")
        view = page.frame_locator("#view")
        expect(view.locator("h1")).to_have_text("Your <order>")  # escaped in the HTML, text in the page
        expect(view.locator("#asked")).to_have_text("asked for A-17")  # ui/notifications/tool-input
        expect(view.locator("#order")).to_have_text("A-17: Blue mug, 12.5")  # ui/notifications/tool-result
        view.locator("#refresh").click()  # tools/call from the view, through the host, to the server
        expect(view.locator("#refreshed")).to_have_text("status shipped")
        log = page.evaluate("window.hostLog")
    read = log[0]["read"]
    assert read["mimeType"] == "text/html;profile=mcp-app" and read["uri"] == "ui://shop/order-card"
    assert read["meta"]["ui"]["csp"] == {"connectDomains": ["https://api.example.com"]}
    assert {"initialized": {"name": "Order card", "version": "1.0.0"}} in log
    assert {"viewCalled": "refresh_order"} in log
