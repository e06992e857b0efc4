"""``flask tools check --target claude-directory`` and ``--target chatgpt`` say what each connector
directory's review asks: each rule that the registry and the settings can show passes a tool that
meets it and fails one that does not, and the check names what it cannot see."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

GOOD = {"title": "Look up an order", "readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


def _app(tools: list[dict[str, Any]], **config: Any) -> Flask:
    app = Flask("directories")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp"], **config})
    ToolDiscovery(tools=tools).init_app(app)
    return app


def _tool(name: str = "lookup_order", description: str = "Find an order by its number.",
          annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "description": description, "annotations": GOOD if annotations is None else annotations,
            "inputSchema": {"type": "object", "properties": {
                "number": {"type": "string", "description": "The order's number."}}, "required": ["number"]}}


def _check(target: str, tools: list[dict[str, Any]], **config: Any) -> tuple[int, list[str]]:
    result = _app(tools, **config).test_cli_runner().invoke(args=["tools", "check", "--target", target])
    return result.exit_code, result.output.splitlines()


def _findings(lines: list[str], target: str) -> list[str]:
    return [line for line in lines if f": [{target}] " in line]


@pytest.mark.parametrize("target", ["claude-directory", "chatgpt"])
def test_a_tool_that_meets_every_rule_passes_and_the_check_names_what_it_cannot_see(target: str) -> None:
    code, lines = _check(target, [_tool()])
    assert code == 0, lines
    assert f"The one tool passes the checks of {target}." in lines
    unseen = [line for line in lines if line.startswith(f"[{target}] not checked here")]
    assert any("privacy policy" in line for line in unseen), lines


CHATGPT_FAILURES = {
    "open world not said": (_tool(annotations={k: v for k, v in GOOD.items() if k != "openWorldHint"}),
                            "annotations.openWorldHint not set"),
    "no hints at all": (_tool(annotations={"title": "Look up"}),
                        "annotations.readOnlyHint, destructiveHint, openWorldHint not set"),
    "hints that contradict": (_tool(annotations={**GOOD, "destructiveHint": True}),
                              "readOnlyHint and destructiveHint are both True"),
    "no description": (_tool(description=""), "no description"),
    "no title": (_tool(annotations={k: v for k, v in GOOD.items() if k != "title"}),
                 "no title (export writes 'Lookup order')"),
    "a name over 64": (_tool(name="n" * 65), f"name {'n' * 65!r} does not match"),
    "a union at the root": ({**_tool(), "inputSchema": {"type": "object", "anyOf": [
        {"type": "object", "properties": {"a": {"type": "string", "description": "A."}}},
        {"type": "object", "properties": {"b": {"type": "string", "description": "B."}}}]}},
        "anyOf at the root is not supported"),
}


@pytest.mark.parametrize("case", sorted(CHATGPT_FAILURES))
def test_chatgpt_fails_a_tool_that_breaks_a_rule(case: str) -> None:
    tool, expected = CHATGPT_FAILURES[case]
    code, lines = _check("chatgpt", [tool])
    assert code == 1
    found = _findings(lines, "chatgpt")
    assert len(found) == 1 and expected in found[0], lines


def test_claude_directory_asks_a_description_title_and_a_hint_but_not_open_world() -> None:
    code, lines = _check("claude-directory", [_tool(annotations={"title": "Look up", "readOnlyHint": True})])
    assert code == 0, lines
    code, lines = _check("claude-directory", [_tool(description="")])
    assert code == 1 and _findings(lines, "claude-directory") == [
        "lookup_order@1.0.0: [claude-directory] no description: reviewers and the model read what it does and "
        "when to call it there"]


@pytest.mark.parametrize("target", ["claude-directory", "chatgpt"])
def test_the_server_is_over_streamable_http_with_oauth_or_none(target: str) -> None:
    who = "the directory" if target == "claude-directory" else "ChatGPT"
    code, lines = _check(target, [_tool()], TOOLDISCOVERY_MCP_BEARER_TOKEN="s3cret")
    assert code == 1 and [line for line in lines if line.startswith("(server)")] == [
        f"(server): [{target}] a static bearer token (TOOLDISCOVERY_MCP_BEARER_TOKEN) is for private deployments: "
        f"{who} takes OAuth (TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS, or the app's own: TOOLDISCOVERY_OAUTH_SERVER) "
        "or no authentication"]
    code, lines = _check(target, [_tool()], TOOLDISCOVERY_DIALECTS=["opal"])
    assert code == 1 and any(line.startswith(f"(server): [{target}] {who} lists remote MCP servers") for line in lines)
    code, lines = _check(target, [_tool()], TOOLDISCOVERY_MCP_BEARER_TOKEN="s3cret",
                         TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["https://auth.example.com"],
                         TOOLDISCOVERY_MCP_RESOURCE="https://tools.example.com/mcp")
    assert code == 0, lines


def test_the_chatgpt_export_writes_the_tools_list_with_titles() -> None:
    result = _app([_tool(annotations={"readOnlyHint": True})]).test_cli_runner().invoke(
        args=["tools", "export", "--target", "chatgpt"])
    assert result.exit_code == 0, result.output
    assert '"title": "Lookup order"' in result.stdout
