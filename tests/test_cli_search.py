"""``flask tools search QUERY``: the core's search from the command line, best first, as the
``--as``/``--scope`` caller may see the tools; what cannot be searched exits 1 with the core's
message."""

from __future__ import annotations

from typing import Any

from flask import Flask

from flask_tooldiscovery import ToolDiscovery


def build() -> Flask:
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="pulls_create", title="Create a pull request", description="Open a pull request.")
    d.add_tool(lambda: 1, name="pulls_list", description="List pull requests.\n\nEvery open one.",
               annotations={"readOnlyHint": True})
    d.add_tool(lambda: 1, name="runs_cancel", title="Cancel a workflow run", description="Cancel a workflow run.")
    d.add_tool(lambda: 1, name="secrets_delete", title="Delete a secret", description="Delete a repository secret.",
               scopes=["admin"])
    app = Flask("cli_search")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"])
    d.init_app(app)
    return app


def search(*args: str) -> Any:
    return build().test_cli_runner().invoke(args=["tools", *args])


def test_the_best_tools_come_first_with_their_title_or_first_line() -> None:
    result = search("search", "open a PR")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "pulls_create@1.0.0\tCreate a pull request"
    assert "pulls_list@1.0.0\tList pull requests." in lines
    assert search("search", "stop the CI build", "--limit", "1").output.splitlines() == \
        ["runs_cancel@1.0.0\tCancel a workflow run"]


def test_the_same_order_as_the_explorer_search() -> None:
    app = build()
    served = app.test_client().get("/explorer/tools", query_string={"q": "pull request", "limit": "3"})
    printed = app.test_cli_runner().invoke(args=["tools", "search", "pull request", "--limit", "3"])
    assert [line.split("@")[0] for line in printed.output.splitlines()] == [t["name"] for t in served.get_json()]


def test_a_caller_finds_only_what_they_may_see() -> None:
    assert "secrets_delete" in search("search", "delete the secret").output
    assert "secrets_delete" not in search("--as", "bob", "search", "delete the secret").output
    admin = search("--as", "root", "--scope", "admin", "search", "delete the secret")
    assert admin.output.splitlines()[0].startswith("secrets_delete@")


def test_what_cannot_be_searched_exits_1_with_the_core_message() -> None:
    for args, message in [(["   "], "The query must be a non-empty string."),
                          (["the of a"], "The query has no word to search for."),
                          (["x" * 5000], "The query is longer than"),
                          (["pull\x00request"], "The query must be text"),
                          (["pull\udcffrequest"], "The query must be text"),  # an undecodable byte
                          (["pull", "--limit", "0"], "The limit must be an integer from 1 to 50."),
                          (["pull", "--limit", "-1"], "The limit must be an integer from 1 to 50."),
                          (["pull", "--limit", "10000"], "The limit must be an integer from 1 to 50.")]:
        result = search("search", *args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.output
        assert "Traceback" not in result.output
