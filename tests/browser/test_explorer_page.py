"""The explorer page in headless Chromium, served under a non-root prefix by a live server."""

from __future__ import annotations

import contextlib
import json

import pytest
from flask import Flask, request
from playwright.sync_api import expect

from example_app import create_app
from flask_tooldiscovery import Identity, ToolDiscovery

from ..conftest import live_server
from .explorer import execute, open_explorer, open_tool

PREFIX = "/admin/tool-explorer"

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _quick_timeouts(page) -> None:
    """Everything here happens within a few seconds on a local server; fail fast when it does not."""
    page.set_default_timeout(10_000)


def make(**config) -> Flask:
    return create_app({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["explorer"],
                       "TOOLDISCOVERY_EXPLORER_URL_PREFIX": PREFIX, **config})


def open_page(page, base, fragment=""):
    open_explorer(page, base + PREFIX, fragment)


def test_lists_filters_fills_validates_executes(page, artifacts) -> None:
    app = make()
    total = len(app.extensions["tooldiscovery"].registry.resolve())  # 9 with the pets API (flask-smorest)
    with live_server(app) as base:
        open_page(page, base)
        assert page.title() == "Example tools"
        names = page.locator("#td-list [data-tool]")
        assert names.count() == total
        page.fill("#td-filter", "weather")
        page.wait_for_selector("body[data-searched='weather']")  # the server's search has answered
        shown = page.locator("#td-list [data-tool]")
        # get_weather first; temperature_chart is in the weather category (the search reads categories)
        assert [shown.nth(i).get_attribute("data-tool") for i in range(shown.count())][:2] == \
            ["get_weather", "temperature_chart"]
        assert page.inner_text("#td-count") == f"{shown.count()} of {total} tools"
        # words in another order than any description has them: the server's search finds the tool
        page.fill("#td-filter", "order place")
        page.wait_for_selector("body[data-searched='order place']")
        assert page.locator("#td-list [data-tool]").first.get_attribute("data-tool") == "create_order"
        page.fill("#td-filter", "")
        assert page.locator("#td-list [data-tool]").count() == total
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
        execute(page, "The tool reported an error")
        assert "Give at least one value." in page.inner_text("#td-result")
        # Fill the repeatable list through the generated form.
        for i, value in enumerate(["2", "4", "9"]):
            page.click("[data-add='/values']")
            page.fill(f"[data-path='/values/{i}']", value)
        page.fill("[data-path='/round_to']", "1")
        assert json.loads(page.input_value("#td-json")) == {"values": [2, 4, 9], "round_to": 1}
        page.click("#td-validate")
        page.wait_for_selector("#td-status:has-text('Arguments are valid')")
        execute(page)
        assert page.inner_text("#td-result").strip() == "5.0"
        assert page.inner_text("#td-elapsed").endswith("ms")
        curl = page.text_content("#td-curl")
        assert f"{PREFIX}/tools/mean/call" in curl and "round_to" in curl
        assert page.locator("#td-history li").count() == 2  # the failed call and this one
        page.screenshot(path=str(artifacts / "explorer.png"), full_page=True)


def test_nested_object_enum_and_inline_errors(page) -> None:
    with live_server(make()) as base:
        open_tool(page, base + PREFIX, "create_order")  # deep link
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
        open_tool(page, base + PREFIX, "create_order")
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
        # create_order also needs the server's approval (requires_approval): its prompt, then it runs.
        page.wait_for_selector("#td-approve[open]")
        assert "create_order" in page.inner_text("#td-approve-text")
        page.click("#td-approve-run")
        page.wait_for_selector("#td-status:has-text('Done')")
        structured = json.loads(page.inner_text("#td-structured"))
        assert structured["items"] == ["SKU-1"] and structured["ship_to"]["city"] == "Berlin"
        assert page.is_visible("#td-output-wrap")
        # History replay runs the same call again, once the server's question is answered (the
        # page no longer asks first: the server does).
        page.click("#td-history button:has-text('Replay')")
        page.wait_for_selector("#td-approve[open]")
        assert page.locator("#td-confirm[open]").count() == 0
        page.click("#td-approve-run")
        expect(page.locator("#td-history li")).to_have_count(2)


def test_execution_disabled_hides_execute(page) -> None:
    with live_server(make(TOOLDISCOVERY_ALLOW_EXECUTE=False)) as base:
        open_tool(page, base + PREFIX, "add")
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


def token_app() -> Flask:
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
    return app


def test_token_field_sends_authorization(page) -> None:
    app = token_app()
    seen = []
    with live_server(app) as base:
        page.on("request", lambda r: seen.append(r.headers.get("authorization")) if r.url.endswith("/call") else None)
        page.goto(f"{base}/explorer/#tool=whoami")
        page.wait_for_selector("#td-name:has-text('whoami')")
        page.click("#td-execute")
        page.wait_for_selector("#td-result:has-text('Unauthorized')")
        assert "token" in page.inner_text("#td-result").lower()
        page.fill("#td-token", "letmein")
        execute(page)
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


def test_token_with_or_without_the_scheme(page) -> None:
    seen = []
    with live_server(token_app()) as base:
        page.on("request", lambda r: seen.append(r.headers.get("authorization")) if r.url.endswith("/call") else None)
        page.goto(f"{base}/explorer/#tool=whoami")
        page.wait_for_selector("#td-name:has-text('whoami')")
        assert page.inner_text("#td-token-status") == "No token"
        for i, typed in enumerate(("Bearer letmein", "letmein", "  bearer   letmein ")):
            page.fill("#td-token", typed)
            assert page.inner_text("#td-token-status") == "Token set"
            assert "'Authorization: Bearer letmein'" in page.text_content("#td-curl")
            page.click("#td-execute")
            expect(page.locator("#td-history li:not(.muted)")).to_have_count(i + 1)
            assert page.inner_text("#td-result").strip() == "you"
        page.fill("#td-token", "Bearer ")  # the scheme alone is no token
        assert page.inner_text("#td-token-status") == "No token"
        assert "Authorization" not in page.text_content("#td-curl")
    assert seen == ["Bearer letmein"] * 3


def test_403_hides_execute_and_shows_the_notice(page) -> None:
    with live_server(make()) as base:
        open_tool(page, base + PREFIX, "add")
        page.fill("[data-path='/a']", "1")
        page.fill("[data-path='/b']", "2")
        execute(page)
        assert page.locator("#td-history button:has-text('Replay')").count() == 1
        # Another 403 (an origin refused, say) is an error, not the switch.
        page.route("**/call", lambda route: route.fulfill(
            status=403, content_type="application/json", body='{"error": "Forbidden: origin not allowed."}'))
        page.click("#td-execute")
        page.wait_for_selector("#td-result:has-text('origin not allowed')")
        assert page.is_visible("#td-execute") and page.is_hidden("#td-disabled")
        # The server turned execution off since the page was rendered.
        page.unroute("**/call")
        page.route("**/call", lambda route: route.fulfill(
            status=403, content_type="application/json", body='{"error": "Tool execution is disabled."}'))
        page.click("#td-execute")
        page.wait_for_selector("#td-disabled:visible")
        assert page.is_hidden("#td-execute")
        assert "disabled" in page.inner_text("#td-disabled") and "disabled" in page.inner_text("#td-status")
        assert page.locator("#td-history button:has-text('Replay')").count() == 0
        assert page.is_hidden("#td-curl-wrap")
        page.keyboard.press("Control+Enter")  # the shortcut no longer runs anything
        page.click("[data-tool='mean']")
        page.wait_for_selector("#td-name:has-text('mean')")
        assert page.is_hidden("#td-execute") and page.is_visible("#td-disabled")


def test_tool_error_is_not_a_crash_and_raw_response(page) -> None:
    with live_server(make()) as base:
        open_tool(page, base + PREFIX, "mean")
        page.click("#td-execute")  # no values: the tool raises its own ToolError
        page.wait_for_selector("#td-status:has-text('The tool reported an error')")
        assert "Failed" not in page.inner_text("#td-status")
        assert "the tool reported an error" in page.inner_text("#td-result").lower()
        assert "Give at least one value." in page.inner_text("#td-result")
        raw = json.loads(page.text_content("#td-raw"))
        assert raw["isError"] is True and raw["_meta"]["_trace_id"]
        # A 500 that is not a tool result is a failure.
        page.route("**/call", lambda route: route.fulfill(status=500, content_type="text/html", body="<h1>oops</h1>"))
        execute(page, "Failed (HTTP 500)")
        page.unroute("**/call")
        # A success: the whole JSON, _meta included, behind "Raw response".
        page.click("[data-add='/values']")
        page.fill("[data-path='/values/0']", "3")
        execute(page)
        assert page.is_hidden("#td-raw")
        page.click("#td-raw-wrap summary")
        raw = json.loads(page.inner_text("#td-raw"))
        assert raw["content"] == [{"type": "text", "text": "3.0"}] and raw["isError"] is False
        assert raw["_meta"]["_trace_id"]


def test_annotations_as_json_in_the_detail(page) -> None:
    with live_server(make()) as base:
        open_tool(page, base + PREFIX, "create_order")
        assert page.is_visible("#td-annotations")
        assert json.loads(page.inner_text("#td-annotations")) == {
            "title": "Place an order", "readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
            "openWorldHint": False}
    d = ToolDiscovery()

    @d.tool
    def plain() -> str:
        """No annotations."""
        return "x"

    app = Flask("plainapp")
    app.config.update(TOOLDISCOVERY_DIALECTS=["explorer"])
    d.init_app(app)
    with live_server(app) as base:
        page.goto(f"{base}/explorer/#tool=plain")
        page.wait_for_selector("#td-name:has-text('plain')")
        assert page.is_hidden("#td-annotations-wrap")


DARK_BG = "rgb(20, 23, 28)"


def test_theme_before_first_paint_without_inline_script(page) -> None:
    page.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation', "
                         "function (e) { window.__csp.push(e.violatedDirective + ' ' + e.blockedURI); });")
    with live_server(make()) as base:
        response = page.goto(f"{base}{PREFIX}/")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self';" in csp and "unsafe-inline" not in csp
        page.wait_for_selector("body[data-ready='true']")
        page.click("#td-theme")  # saved: dark
        # Without the page's main script at all, the saved theme is already applied.
        page.route("**/explorer.js", lambda route: route.abort())
        page.reload(wait_until="domcontentloaded")
        assert page.get_attribute("html", "data-theme") == "dark"
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == DARK_BG
        # No saved choice: the system's preference, still before the main script.
        page.evaluate("localStorage.clear()")
        page.emulate_media(color_scheme="dark")
        page.reload(wait_until="domcontentloaded")
        assert page.get_attribute("html", "data-theme") == "dark"
        page.emulate_media(color_scheme="light")
        page.reload(wait_until="domcontentloaded")
        assert page.get_attribute("html", "data-theme") == "light"
        page.unroute("**/explorer.js")
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert page.inner_text("#td-theme") == "Dark mode"
        # Every script is a file of the page's origin; the config block is data, not a script.
        inline = page.evaluate("Array.from(document.scripts).filter(function (s) { return !s.src; })"
                               ".map(function (s) { return s.type; })")
        assert inline == ["application/json"]
        assert page.evaluate("window.__csp") == []


def test_favicon_served_and_linked(page) -> None:
    app = make()
    served: list[tuple[str, int]] = []
    app.after_request(lambda response: served.append((request.path, response.status_code)) or response)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    with live_server(app) as base:
        open_page(page, base)
        href = page.get_attribute("link[rel='icon']", "href")
        assert href and href.startswith(f"{PREFIX}/static/")
        icon = page.request.get(base + href)
        assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
        page.wait_for_timeout(300)
    assert [entry for entry in served if entry[1] >= 400] == []
    assert not [text for text in console if "Failed to load resource" in text]


def test_destructive_confirmation_after_validation(page) -> None:
    validated: list[str] = []
    with live_server(make()) as base:
        page.on("request", lambda r: validated.append(r.url.rsplit("/", 1)[1]) if r.method == "POST" else None)
        open_tool(page, base + PREFIX, "create_order")
        page.click("#td-execute")  # ship_to and items missing: no confirmation, the errors
        page.wait_for_selector("[data-error-for='/ship_to/city']:not([hidden])", timeout=5000)
        assert page.locator("#td-confirm[open]").count() == 0
        assert "not valid" in page.inner_text("#td-status")
        assert validated == ["validate"]
        # Broken JSON never reaches the dialog either.
        page.click("#td-tab-json")
        page.fill("#td-json", "{nope")
        page.click("#td-execute")
        page.wait_for_selector("#td-root-errors:has-text('not valid')")
        assert page.locator("#td-confirm[open]").count() == 0 and validated == ["validate"]
        page.fill("#td-json", json.dumps({"ship_to": {"street": "Main 1", "city": "Berlin"}, "items": ["SKU-1"]}))
        page.click("#td-execute")
        page.wait_for_selector("#td-confirm[open]")
        page.click("#td-confirm-run")
        page.wait_for_selector("#td-approve[open]")  # the server asks too (428), then runs it
        page.click("#td-approve-run")
        page.wait_for_selector("#td-status:has-text('Done')")
        assert validated == ["validate", "validate", "call", "call"]


def test_the_lists_follow_the_token_entered(page) -> None:
    """A tool and a prompt only a token's holder sees are listed once the token is entered, and go
    when it is cleared; where discovery needs credentials, the list says so, then loads with the token."""
    token = "list-token"

    def build(**config) -> Flask:
        discovery = ToolDiscovery()
        discovery.tool(name="open_tool")(lambda: "o")
        discovery.tool(name="member_tool", scopes=["members"])(lambda: "m")
        discovery.prompt(name="member_prompt", scopes=["members"])(lambda: "Hello, member.")

        @discovery.identity
        def holder(incoming) -> Identity | None:
            held = incoming.headers.get("Authorization") == f"Bearer {token}"
            return Identity(subject="member", scopes=("members",)) if held else None

        app = Flask("listed")
        app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"], **config)
        discovery.init_app(app)
        return app

    with live_server(build()) as base:
        page.goto(f"{base}/explorer/")
        page.wait_for_selector("body[data-ready='true'][data-prompts-ready='true']")
        expect(page.locator("#td-list [data-tool]")).to_have_count(1)
        expect(page.locator("#td-prompts [data-prompt]")).to_have_count(0)
        page.fill("#td-token", token)
        page.locator("#td-token").press("Tab")  # the field's change
        expect(page.locator("[data-tool='member_tool']")).to_be_visible()
        expect(page.locator("#td-count")).to_have_text("2 of 2 tools")
        expect(page.locator("[data-prompt='member_prompt']")).to_be_visible()
        page.fill("#td-token", "")
        page.locator("#td-token").press("Tab")
        expect(page.locator("[data-tool='member_tool']")).to_have_count(0)
        expect(page.locator("[data-prompt='member_prompt']")).to_have_count(0)
        expect(page.locator("[data-tool='open_tool']")).to_be_visible()
    with live_server(build(TOOLDISCOVERY_AUTH_DISCOVERY=True)) as base:
        page.goto(f"{base}/explorer/")
        expect(page.locator("#td-count")).to_contain_text("Could not load tools (401)")
        page.fill("#td-token", "Bearer " + token)
        page.locator("#td-token").press("Tab")
        expect(page.locator("#td-count")).to_have_text("2 of 2 tools")
