"""The Flask-Login recipe of docs/topics/identity-recipes.rst in headless Chromium: a visitor
signs in through the app's own login form, is sent back to the explorer page, and runs a tool
there with nothing but the session cookie; the tool sees the signed-in user."""

from __future__ import annotations

import pytest

from ..conftest import live_server
from ..test_identity_recipes import recipe
from .explorer import execute

pytestmark = pytest.mark.browser


def run_refused(page) -> str:
    page.wait_for_selector("body[data-ready='true']")
    page.click("[data-tool='whoami']")
    page.wait_for_selector("#td-name:has-text('whoami')")
    execute(page, "Failed")
    return str(page.inner_text("#td-status")).strip()


def test_a_user_signed_in_with_the_apps_login_form_runs_a_tool_on_the_explorer_page(page) -> None:
    page.set_default_timeout(10_000)
    app = recipe("login_app")["app"]
    with live_server(app) as base:
        page.goto(f"{base}/explorer/")
        status = run_refused(page)
        assert status == "Failed (HTTP 401)."  # not signed in: refused
        page.goto(f"{base}/login?next=/explorer/")
        page.fill("input[name='username']", "alice")
        page.fill("input[name='password']", "alice-password")
        with page.expect_navigation():
            page.click("button:has-text('Sign in')")
        assert page.url == f"{base}/explorer/"
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator("[data-tool='my_orders']").count() == 1  # alice's own tools are listed
        page.click("[data-tool='whoami']")
        page.wait_for_selector("#td-name:has-text('whoami')")
        execute(page)
        assert page.inner_text("#td-result").strip() == "alice"
