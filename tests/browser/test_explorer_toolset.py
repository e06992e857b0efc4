"""A toolset's explorer page in headless Chromium: ``/explorer/x/<name>/`` lists, searches and runs
only the toolset's tools, beside the full page at ``/explorer/``."""

from __future__ import annotations

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from ..conftest import live_server

pytestmark = pytest.mark.browser


def make() -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(tags=["issues"])
    def issues_list(repo: str) -> list[str]:
        """List the open issues of a repository.

        Args:
            repo: The repository, as owner/name.
        """
        return [f"{repo}#1"]

    @discovery.tool(tags=["issues"])
    def issues_close(number: int) -> str:
        """Close an issue.

        Args:
            number: The issue's number.
        """
        return f"closed #{number}"

    @discovery.tool(tags=["repos"])
    def repos_delete(repo: str) -> str:
        """Delete a repository.

        Args:
            repo: The repository, as owner/name.
        """
        return f"deleted {repo}"

    app = Flask("explorer_toolset")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_TOOLSETS={"issues": {"tags": ["issues"], "dialects": ["explorer"]}})
    discovery.init_app(app)
    return app


def shown(page) -> list[str]:
    rows = page.locator("#td-list [data-tool]")
    return [rows.nth(i).get_attribute("data-tool") for i in range(rows.count())]


def test_a_toolsets_page_lists_searches_and_runs_only_its_tools(page) -> None:
    page.set_default_timeout(10_000)
    with live_server(make()) as base:
        page.goto(f"{base}/explorer/")
        page.wait_for_selector("body[data-ready='true']")
        assert sorted(shown(page)) == ["issues_close", "issues_list", "repos_delete"]
        page.goto(f"{base}/explorer/x/issues/")
        page.wait_for_selector("body[data-ready='true']")
        assert sorted(shown(page)) == ["issues_close", "issues_list"]
        page.fill("#td-filter", "delete a repository")
        page.wait_for_selector("body[data-searched='delete a repository']")
        assert "repos_delete" not in shown(page)
        page.fill("#td-filter", "")
        page.click("[data-tool='issues_list']")
        page.wait_for_selector("#td-name:has-text('issues_list')")
        page.fill("[data-path='/repo']", "acme/app")
        page.click("#td-execute")
        page.wait_for_selector("#td-result:has-text('acme/app#1')")
