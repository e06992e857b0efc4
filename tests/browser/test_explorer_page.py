"""The explorer page in headless Chromium, served under a non-root prefix by a live server."""

from __future__ import annotations

import contextlib
import json

import pytest
from flask import Flask
from playwright.sync_api import expect

from example_app import create_app
from flask_tooldiscovery import ToolDiscovery

from ..conftest import live_server

PREFIX = "/admin/tool-explorer"

pytestmark = pytest.mark.browser


def make(**config) -> Flask:
    return create_app({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["explorer"],
                       "TOOLDISCOVERY_EXPLORER_URL_PREFIX": PREFIX, **config})


def open_page(page, base, fragment=""):
    page.goto(f"{base}{PREFIX}/{fragment}")
    page.wait_for_selector("body[data-ready='true']")


def test_lists_filters_fills_validates_executes(page, artifacts) -> None:
    with live_server(make()) as base:
        open_page(page, base)
        assert page.title() == "Example tools"
        names = page.locator("#td-list [data-tool]")
        assert names.count() == 5
        page.fill("#td-filter", "weather")
        assert page.locator("#td-list [data-tool]").count() == 1
        assert page.inner_text("#td-count") == "1 of 5 tools"
        page.fill("#td-filter", "")
        page.click("[data-tool='mean']")
        page.wait_for_selector("#td-name:has-text('mean')")
        assert "read-only" in page.inner_text("#td-badges")
        # A type error is reported inline, next to the field.
        page.fill("[data-path='/round_to']", "1.5")
        page.click("#td-validate")
        page.wait_for_selector("[data-error-for='/round_to']:not([hidden])")
        assert "integer" in page.inner_text("[data-error-for='/round_to']")
        # Running with an empty list: the tool's own ToolError comes back as an error result.
        page.fill("[data-path='/round_to']", "")
        page.click("#td-execute")
        page.wait_for_selector("#td-status:has-text('Failed')")
        assert "Give at least one value." in page.inner_text("#td-result")
        # Fill the repeatable list through the generated form.
        for i, value in enumerate(["2", "4", "9"]):
            page.click("[data-add='/values']")
            page.fill(f"[data-path='/values/{i}']", value)
        page.fill("[data-path='/round_to']", "1")
        assert json.loads(page.input_value("#td-json")) == {"values": [2, 4, 9], "round_to": 1}
        page.click("#td-validate")
        page.wait_for_selector("#td-status:has-text('Arguments are valid')")
        page.click("#td-execute")
        page.wait_for_selector("#td-status:has-text('Done')")
        assert page.inner_text("#td-result").strip() == "5.0"
        assert page.inner_text("#td-elapsed").endswith("ms")
        curl = page.text_content("#td-curl")
        assert f"{PREFIX}/tools/mean/call" in curl and "round_to" in curl
        assert page.locator("#td-history li").count() == 2  # the failed call and this one
        page.screenshot(path=str(artifacts / "explorer.png"), full_page=True)


def test_nested_object_enum_and_inline_errors(page) -> None:
    with live_server(make()) as base:
        open_page(page, base, "#tool=create_order")  # deep link
        page.wait_for_selector("#td-name:has-text('create_order')")
        page.fill("[data-path='/ship_to/street']", "Main 1")
        page.click("#td-validate")
        page.wait_for_selector("[data-error-for='/ship_to/city']:not([hidden])")
        assert "city" in page.inner_text("[data-error-for='/ship_to/city']")
        assert page.is_hidden("[data-error-for='/ship_to/street']")
        page.fill("[data-path='/ship_to/city']", "Berlin")
        page.click("[data-add='/items']")
        page.fill("[data-path='/items/0']", "SKU-1")
        page.select_option("[data-path='/priority']", label="high")
        args = json.loads(page.input_value("#td-json"))
        assert args["priority"] == "high" and args["ship_to"] == {"street": "Main 1", "city": "Berlin", "country": "DE"}
        # Raw JSON view, edited, flows back into the form.
        page.click("#td-tab-json")
        args["gift_note"] = "Happy birthday"
        page.fill("#td-json", json.dumps(args))
        page.click("#td-tab-form")
        assert page.input_value("[data-path='/gift_note']") == "Happy birthday"


def test_destructive_confirmation_and_structured_content(page) -> None:
    with live_server(make()) as base:
        open_page(page, base, "#tool=create_order")
        page.wait_for_selector("#td-name:has-text('create_order')")
        page.fill("[data-path='/ship_to/street']", "Main 1")
        page.fill("[data-path='/ship_to/city']", "Berlin")
        page.click("[data-add='/items']")
        page.fill("[data-path='/items/0']", "SKU-1")
        page.click("#td-execute")
        page.wait_for_selector("#td-confirm[open]")
        assert "destructive" in page.inner_text("#td-confirm-text")
        page.click("#td-confirm-cancel")
        page.wait_for_selector("#td-status:has-text('Cancelled')")
        assert page.locator("#td-history li.muted").count() == 1  # nothing ran
        page.click("#td-execute")
        page.wait_for_selector("#td-confirm[open]")
        page.click("#td-confirm-run")
        page.wait_for_selector("#td-status:has-text('Done')")
        structured = json.loads(page.inner_text("#td-structured"))
        assert structured["items"] == ["SKU-1"] and structured["ship_to"]["city"] == "Berlin"
        assert page.is_visible("#td-output-wrap")
        # History replay runs the same call again (after confirming).
        page.click("#td-history button:has-text('Replay')")
        page.wait_for_selector("#td-confirm[open]")
        page.click("#td-confirm-run")
        expect(page.locator("#td-history li")).to_have_count(2)


def test_execution_disabled_hides_execute(page) -> None:
    with live_server(make(TOOLDISCOVERY_ALLOW_EXECUTE=False)) as base:
        open_page(page, base, "#tool=add")
        page.wait_for_selector("#td-name:has-text('add')")
        assert not page.is_visible("#td-execute")
        assert page.is_visible("#td-disabled")
        assert "disabled" in page.inner_text("#td-disabled")
        # Like the peer console, the JSON starts with every required key, null until filled in.
        assert json.loads(page.input_value("#td-json")) == {"a": None, "b": None}
        page.fill("[data-path='/a']", "1")
        assert json.loads(page.input_value("#td-json")) == {"a": 1, "b": None}
        page.click("#td-validate")  # validation still works
        page.wait_for_selector("#td-status:has-text('not valid')")
        assert page.inner_text("[data-error-for='/b']") == "null is not of type 'number'"


def test_token_field_sends_authorization(page) -> None:
    d = ToolDiscovery()

    @d.tool
    def whoami() -> str:
        """Who is calling."""
        return "you"

    @d.auth_hook
    @contextlib.contextmanager
    def require_token(request):
        if request.headers.get("Authorization") != "Bearer letmein":
            raise PermissionError("wrong token")
        yield

    app = Flask("tokenapp")
    app.config.update(TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    d.init_app(app)
    seen = []
    with live_server(app) as base:
        page.on("request", lambda r: seen.append(r.headers.get("authorization")) if r.url.endswith("/call") else None)
        page.goto(f"{base}/explorer/#tool=whoami")
        page.wait_for_selector("#td-name:has-text('whoami')")
        page.click("#td-execute")
        page.wait_for_selector("#td-result:has-text('Unauthorized')")
        assert "token" in page.inner_text("#td-result").lower()
        page.fill("#td-token", "letmein")
        page.click("#td-execute")
        page.wait_for_selector("#td-status:has-text('Done')")
        assert page.inner_text("#td-result").strip() == "you"
    assert seen == [None, "Bearer letmein"]


def test_title_escaped_dark_mode_and_keyboard(page) -> None:
    with live_server(make(TOOLDISCOVERY_TITLE="</script><script>window.pwned=1</script>")) as base:
        open_page(page, base)
        assert page.evaluate("window.pwned") is None
        assert page.inner_text("#td-title") == "</script><script>window.pwned=1</script>"
        page.click("#td-theme")
        assert page.get_attribute("html", "data-theme") == "dark"
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert page.get_attribute("html", "data-theme") == "dark"
        # Keyboard only: Tab from the filter to the first tool and open it with Enter.
        page.focus("#td-filter")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.wait_for_selector("#td-name:has-text('add')")
        page.focus("[data-path='/a']")
        page.keyboard.type("2")
        page.keyboard.press("Tab")
        page.keyboard.type("3")
        page.keyboard.press("Control+Enter")
        page.wait_for_selector("#td-status:has-text('Done')")
        assert page.inner_text("#td-result").strip() == "5.0"
