"""The explorer page's prompts in headless Chromium: listed under the tools, tried with a form whose
suggestions come from the server's completions, their messages shown."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ..apps.prompts_app import create_app
from ..conftest import live_server

ALICE = {"Authorization": "Bearer alice"}


@pytest.fixture(autouse=True)
def _quick_timeouts(page) -> None:
    page.set_default_timeout(10_000)


def open_page(page, base: str, fragment: str = "") -> None:
    page.set_extra_http_headers(ALICE)  # the app's identity hook names every caller
    page.goto(f"{base}/explorer/{fragment}")
    page.wait_for_selector("body[data-ready='true'][data-prompts-ready='true']")


@pytest.mark.browser
def test_a_developer_lists_fills_with_suggestions_and_gets_a_prompt(page, artifacts) -> None:
    with live_server(create_app()) as base:
        open_page(page, base)
        names = page.locator("#td-prompts [data-prompt]")
        expect(names).to_have_count(4)  # audit needs the admin scope
        assert [n.get_attribute("data-prompt") for n in names.all()] == [
            "code_review", "plan_trip", "greeting", "describe_chart"]
        page.click("[data-prompt='plan_trip']")
        expect(page.locator("#td-prompt-name")).to_have_text("plan_trip")
        assert page.locator("#td-detail").is_hidden()
        page.fill("#td-prompt-arg-country", "Italy")
        page.fill("#td-prompt-arg-city", "P")  # typed: the completer's suggestions for Italy
        expect(page.locator("#td-prompt-arg-city-options option")).to_have_count(2)
        assert [o.get_attribute("value") for o in page.locator("#td-prompt-arg-city-options option").all()] == [
            "Palermo", "Parma"]
        page.fill("#td-prompt-arg-city", "")  # a required argument left out is named before anything is sent
        page.click("#td-prompt-get")
        expect(page.locator("#td-prompt-status")).to_have_text("Fill in: city")
        page.fill("#td-prompt-arg-city", "Parma")
        page.fill("#td-prompt-arg-days", "0")
        page.click("#td-prompt-get")
        expect(page.locator("#td-prompt-status")).to_have_text("HTTP 500: A trip lasts at least one day.")
        page.fill("#td-prompt-arg-days", "2")
        page.click("#td-prompt-get")
        messages = page.locator("#td-prompt-messages li")
        expect(messages).to_have_count(2)
        assert messages.nth(0).get_attribute("data-role") == "user"
        assert messages.nth(0).locator(".message-text").inner_text() == "Plan 2 days in Parma, Italy."
        assert messages.nth(1).get_attribute("data-role") == "assistant"
        # an image and an embedded resource, by the prompt's own address
        page.goto(f"{base}/explorer/#prompt=describe_chart")
        page.wait_for_selector("body[data-prompts-ready='true']")
        page.fill("#td-prompt-arg-report_id", "9")
        page.click("#td-prompt-get")
        expect(page.locator("#td-prompt-messages li")).to_have_count(3)
        image = page.locator("#td-prompt-messages img.result-image")
        page.wait_for_function("() => document.querySelector('#td-prompt-messages img').naturalWidth === 1")
        assert image.get_attribute("src").startswith("data:image/png;base64,")
        assert "Report 9: sales up." in page.inner_text("#td-prompt-messages")
        page.screenshot(path=str(artifacts / "explorer-prompts.png"), full_page=True)
        # choosing a tool leaves the prompt
        page.click("[data-tool='add']")
        expect(page.locator("#td-name")).to_have_text("add")
        assert page.locator("#td-prompt").is_hidden()


@pytest.mark.browser
def test_without_execution_the_prompts_are_listed_but_not_run(page) -> None:
    with live_server(create_app(TOOLDISCOVERY_ALLOW_EXECUTE=False)) as base:
        open_page(page, base, "#prompt=greeting")
        expect(page.locator("#td-prompt-name")).to_have_text("greeting")
        assert page.locator("#td-prompt-get").is_disabled()
        assert page.locator("#td-prompt-disabled").is_visible()
