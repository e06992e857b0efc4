"""Headless Chromium (Debian's package) driven by Playwright. Without the browser these tests
skip locally, and fail when CI is set."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("TOOLDISCOVERY_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


@pytest.fixture(scope="module")
def browser():
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed"
    if missing is None and not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        missing = f"no Chromium at {CHROMIUM}"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)  # assertions wait as long as actions may: a loaded machine is slow
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: errors.append(f"unexpected dialog: {dialog.message}") or dialog.dismiss())
    # What the page and its frames wrote to the console, printed when the test ends: pytest shows
    # it beside a failure (a flake that cannot be reproduced leaves at least the page's own story).
    console: list[str] = []
    page.on("console", lambda message: console.append(
        f"{time.monotonic():.3f} [{message.type}] {message.location.get('url', '')}: {message.text}"[:500]))
    yield page
    context.close()
    print("browser console:", *console, sep="\n  ")
    assert not errors, errors


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
