"""``flask tools check --replay``: declared examples run through every mounted dialect in process."""

from __future__ import annotations

from typing import Any

from flask import Flask

from flask_tooldiscovery import ToolDiscovery, ToolError


def build(**config: Any) -> Flask:
    d = ToolDiscovery()

    @d.tool(examples=[{"description": "Two plus three", "input": {"a": 2, "b": 3}, "expected_output": 5},
                      {"description": "A bad one", "input": {"a": "x", "b": 1}}])
    def add(a: float, b: float) -> float:
        """Add.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    @d.tool(examples=[{"input": {"name": "Ada"}}, {"input": {"name": ""}}])
    def greet(name: str) -> dict[str, str]:
        """Greet.

        Args:
            name: Who.
        """
        if not name:
            raise ToolError("Whom should I greet?")
        return {"greeting": f"Hello {name}"}

    @d.tool(examples=[{"input": {}}])
    def words() -> str:
        """A string result."""
        return "3"

    @d.tool(annotations={"destructiveHint": True}, examples=[{"input": {"what": "all"}}])
    def wipe(what: str) -> None:
        """Wipe.

        Args:
            what: What.
        """
        calls.append(what)

    calls: list[str] = []
    app = Flask("replay")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_ALLOW_EXECUTE": True, **config})
    app.extensions["wipes"] = calls
    d.init_app(app)
    return app


def test_examples_that_agree_everywhere_pass() -> None:
    app = build()
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert result.exit_code == 0, result.output
    assert "Every replayed example agrees across the dialects." in result.output
    assert "replay: 5 example(s) run through 6 dialect(s)." in result.output
    assert "wipe: destructive or needs approval; not replayed" in result.output
    assert app.extensions["wipes"] == []


def test_destructive_tools_run_once_per_dialect_when_asked() -> None:
    app = build()
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay", "--include-destructive"])
    assert result.exit_code == 0, result.output
    assert len(app.extensions["wipes"]) == 6


def test_a_difference_between_dialects_is_reported() -> None:
    d = ToolDiscovery()

    @d.tool(examples=[{"description": "a count sent as text", "input": {"count": "3"}}])
    def repeat(count: int) -> int:
        """Repeat.

        Args:
            count: How often.
        """
        return count

    app = Flask("replay")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal", "mcp", "oxp", "tdp"])
    d.init_app(app)
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert result.exit_code == 1
    line = next(x for x in result.output.splitlines() if "[replay]" in x)
    # Opal and TDP turn strings into declared types (their clients send text); MCP and OXP do not.
    assert line.startswith("repeat@1.0.0: [replay] a count sent as text: ")
    assert "opal, tdp: ok 3" in line and "mcp, oxp: invalid" in line, line
    assert "1 replay difference(s)" in result.output


def test_an_expected_output_is_checked() -> None:
    d = ToolDiscovery()

    @d.tool(examples=[{"input": {"a": 1}, "expected_output": 3}])
    def double(a: int) -> int:
        """Double.

        Args:
            a: A number.
        """
        return 2 * a

    app = Flask("replay")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp", "utcp"])
    d.init_app(app)
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert result.exit_code == 1
    assert "expected 3, but mcp, utcp answered otherwise" in result.output


def test_credentials_for_protected_dialects_come_from_header() -> None:
    app = build(TOOLDISCOVERY_BEARER_TOKEN="s3cret")
    runner = app.test_cli_runner()
    refused = runner.invoke(args=["tools", "check", "--replay"])
    assert refused.exit_code == 1 and "every dialect refused the call" in refused.output
    passed = runner.invoke(args=["tools", "check", "--replay", "--header", "Authorization: Bearer s3cret"])
    assert passed.exit_code == 0, passed.output
    assert runner.invoke(args=["tools", "check", "--replay", "--header", "nonsense"]).exit_code != 0


def test_dialects_that_cannot_run_the_tools_are_named() -> None:
    app = build(TOOLDISCOVERY_ALLOW_EXECUTE=False)
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert "explorer: does not run tools with these settings; left out" in result.output
    assert "run through 5 dialect(s)" in result.output
