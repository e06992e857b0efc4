"""``flask tools check --target`` catches what each target refuses, and ``flask tools export
--target`` writes a schema that target accepts."""

from __future__ import annotations

import json
from typing import Any, Literal, Optional

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.lint.check import targets
from flask_tooldiscovery.lint.schema_rewrite import dangling_refs

#: Every target a default extension knows: the vendors' and the built-in dialects' own.
TARGETS = targets(ToolDiscovery())

REFS = {"type": "object", "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"}},
                                             "required": ["name"]}},
        "properties": {"city": {"$ref": "#/$defs/City", "description": "Where."}}, "required": ["city"]}
ROOT_UNION = {"anyOf": [{"type": "object", "properties": {"id": {"type": "integer", "description": "By id."}},
                         "required": ["id"]},
                        {"type": "object", "properties": {"name": {"type": "string", "description": "By name."}},
                         "required": ["name"]}]}


def app_with(register: Any) -> Flask:
    discovery = ToolDiscovery()
    register(discovery)
    app = Flask("targets")
    app.config["TESTING"] = True
    discovery.init_app(app)
    return app


def _optional_units(d: ToolDiscovery) -> None:
    @d.tool
    def weather(city: str, units: Literal["metric", "imperial"] = "metric", days: int = 1) -> str:
        """Weather.

        Args:
            city: City.
            units: Units.
            days: Days ahead.
        """
        return f"{city} {units} {days}"


def _nullable(d: ToolDiscovery) -> None:
    @d.tool
    def find(limit: Optional[int] = None, name: str | None = None) -> list[str]:  # noqa: UP045
        """Find.

        Args:
            limit: At most this many.
            name: Name.
        """
        return []


def _union_parameter(d: ToolDiscovery) -> None:
    @d.tool
    def lookup(key: int | str) -> str:
        """Look up.

        Args:
            key: An id or a name.
        """
        return str(key)


def _number_enum(d: ToolDiscovery) -> None:
    @d.tool
    def level(value: Literal[1, 2, 3]) -> int:
        """Level.

        Args:
            value: Level.
        """
        return value


def _explicit(schema: dict[str, Any]) -> Any:
    def register(d: ToolDiscovery) -> None:
        @d.tool(input_schema=schema)
        def explicit(**arguments: Any) -> dict[str, Any]:
            """Explicit schema."""
            return arguments

    return register


#: A tool each target refuses, and a word of the problem its lint reports.
REFUSED = {
    "mcp": (_explicit(REFS), "$ref"),
    "openai-strict": (_optional_units, "every property must be required"),
    "anthropic": (_explicit(ROOT_UNION), "at the root"),
    "gemini": (_nullable, "'null' is not supported"),
    "opal": (_union_parameter, "a union"),
    "oxp": (_explicit(REFS), "$ref"),
    "tdp": (_number_enum, "non-string enum"),
}


def _schemas(target: str, document: Any) -> list[dict[str, Any]]:
    """The input schemas an exported document holds (opal lists parameters, not a schema)."""
    if target == "openai-strict":
        return [t["function"]["parameters"] for t in document]
    if target == "anthropic":
        return [t["input_schema"] for t in document]
    if target == "gemini":
        return [t.get("parameters", {"type": "object"}) for t in document["functionDeclarations"]]
    if target == "mcp":
        return [t["inputSchema"] for t in document["tools"]]
    if target == "oxp":
        return [t["input_schema"] for t in document["items"]]
    return []


@pytest.mark.parametrize("target", sorted(REFUSED))
def test_the_lint_catches_what_the_target_refuses_and_the_export_fixes_it(target: str) -> None:
    register, word = REFUSED[target]
    app = app_with(register)
    runner = app.test_cli_runner()
    checked = runner.invoke(args=["tools", "check", "--target", target])
    assert checked.exit_code == 1, checked.output
    assert f"[{target}]" in checked.output and word in checked.output, checked.output

    tool = app.extensions["tooldiscovery"].registry.resolve().latest()[0]
    simplified = TARGETS[target].simplify(tool.input_schema)
    assert TARGETS[target].lint_schema(simplified) == [], simplified

    exported = runner.invoke(args=["tools", "export", "--target", target])
    assert exported.exit_code == 0, exported.output
    document = json.loads(exported.output)
    for schema in _schemas(target, document):
        assert TARGETS[target].lint_schema(schema) == [], (target, schema)
        assert "$ref" not in json.dumps(schema) and dangling_refs(schema) == []


def test_openai_strict_export_keeps_the_argument_shape() -> None:
    app = app_with(_optional_units)
    document = json.loads(app.test_cli_runner().invoke(args=["tools", "export", "--target", "openai-strict"]).output)
    function = document[0]["function"]
    assert function["strict"] is True
    parameters = function["parameters"]
    assert parameters["required"] == ["city", "units", "days"] and parameters["additionalProperties"] is False
    assert "default" not in json.dumps(parameters)
    assert 'Default: "metric".' in parameters["properties"]["units"]["description"]
    assert parameters["properties"]["units"]["enum"] == ["metric", "imperial"]  # still the tool's own values


def test_openai_strict_falls_back_to_non_strict_where_it_cannot_be_met() -> None:
    def register(d: ToolDiscovery) -> None:
        @d.tool
        def tag(labels: dict[str, str]) -> int:
            """Tag.

            Args:
                labels: Free-form labels.
            """
            return len(labels)

    app = app_with(register)
    runner = app.test_cli_runner()
    assert "additionalProperties: false" in runner.invoke(args=["tools", "check", "--target", "openai-strict"]).output
    function = json.loads(runner.invoke(args=["tools", "export", "--target", "openai-strict"]).output)[0]["function"]
    assert function["strict"] is False
    assert function["parameters"]["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_names_a_target_refuses_are_reported_and_exported_safely() -> None:
    def register(d: ToolDiscovery) -> None:
        @d.tool(name="weather.today")
        def today() -> str:
            """Today."""
            return "sunny"

    app = app_with(register)
    runner = app.test_cli_runner()
    for target in ("openai-strict", "anthropic", "opal"):
        output = runner.invoke(args=["tools", "check", "--target", target]).output
        assert "name 'weather.today' does not match" in output, output
    exported = json.loads(runner.invoke(args=["tools", "export", "--target", "anthropic"]).output)
    assert exported[0]["name"] == "weather_today"
    gemini = json.loads(runner.invoke(args=["tools", "export", "--target", "gemini"]).output)
    assert gemini["functionDeclarations"][0] == {"name": "weather.today", "description": "Today."}  # no parameters


def test_a_clean_tool_passes_every_target() -> None:
    def register(d: ToolDiscovery) -> None:
        @d.tool
        def add(a: float, b: float) -> float:
            """Add.

            Args:
                a: First.
                b: Second.
            """
            return a + b

    runner = app_with(register).test_cli_runner()
    for target in TARGETS:
        if target in ("gemini", "claude-directory", "chatgpt"):  # additionalProperties: false is not Gemini's;
            continue  # the directories ask annotations of every tool (tests/test_connect_directories.py)
        result = runner.invoke(args=["tools", "check", "--target", target])
        passed = f"The one tool passes the checks of {target}."
        assert result.exit_code == 0 and passed in result.output, (target, result.output)


def test_export_needs_a_document_or_a_target_not_both() -> None:
    runner = app_with(_optional_units).test_cli_runner()
    assert runner.invoke(args=["tools", "export", "mcp", "--target", "mcp"]).exit_code != 0
    assert "--target" in runner.invoke(args=["tools", "export", "nothing"]).output


def test_dialect_targets_export_the_dialects_document() -> None:
    runner = app_with(_union_parameter).test_cli_runner()
    opal = json.loads(runner.invoke(args=["tools", "export", "--target", "opal"]).output)
    assert opal["functions"][0]["parameters"][0]["type"] in ("integer", "string")
    tdp = json.loads(runner.invoke(args=["tools", "export", "--target", "tdp"]).output)
    assert tdp["tools"][0]["name"] == "lookup"


def _directory_app(**config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(annotations={"title": "Forecast", "readOnlyHint": True})
    def forecast(city: str) -> str:
        """Forecast.

        Args:
            city: City.
        """
        return city

    @discovery.tool
    def delete_note(note_id: str) -> str:
        """Delete a note.

        Args:
            note_id: The note.
        """
        return note_id

    @discovery.tool(name="x" * 65, annotations={"title": "Long", "destructiveHint": False})
    def long_name() -> str:
        """A name too long."""
        return ""

    app = Flask("directory")
    app.config.update(TESTING=True, **config)
    discovery.init_app(app)
    return app


def test_the_claude_directory_asks_titles_hints_short_names_streamable_http_and_oauth_or_nothing() -> None:
    runner = _directory_app(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_MCP_BEARER_TOKEN="t").test_cli_runner()
    checked = runner.invoke(args=["tools", "check", "--target", "claude-directory"])
    assert checked.exit_code == 1
    lines = checked.output.splitlines()
    assert "delete_note@1.0.0: [claude-directory] no annotations.title (export writes 'Delete note'; declare one " \
           "with annotations={'title': ...})" in lines
    assert any(line.startswith("delete_note@1.0.0: [claude-directory] neither annotations.readOnlyHint nor "
                               "destructiveHint") for line in lines)
    assert any(line.startswith(f"{'x' * 65}@1.0.0: [claude-directory] name ") for line in lines)
    assert not any(line.startswith("forecast@") for line in lines)
    server = [line for line in lines if line.startswith("(server): [claude-directory]")]
    assert len(server) == 2 and "mount the mcp dialect" in server[0] and "static bearer token" in server[1]

    oauth = _directory_app(TOOLDISCOVERY_DIALECTS=["mcp"],
                           TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["https://auth.example.com"],
                           TOOLDISCOVERY_MCP_RESOURCE="https://tools.example.com/mcp").test_cli_runner()
    assert "(server)" not in oauth.invoke(args=["tools", "check", "--target", "claude-directory"]).output


def test_the_claude_directory_export_derives_titles_and_names_what_it_cannot() -> None:
    runner = _directory_app(TOOLDISCOVERY_DIALECTS=["mcp"]).test_cli_runner()
    exported = runner.invoke(args=["tools", "export", "--target", "claude-directory"])
    assert exported.exit_code == 0, exported.output
    tools = {t["name"]: t for t in json.loads(exported.stdout)["tools"]}
    assert tools["delete_note"]["annotations"] == {"title": "Delete note"}
    assert tools["forecast"]["annotations"] == {"title": "Forecast", "readOnlyHint": True}
    assert exported.stderr.splitlines() == [
        "[claude-directory] not derived: readOnlyHint or destructiveHint of delete_note"]


def test_a_model_vendors_list_leaves_out_tools_only_an_interface_calls() -> None:
    """A tool only its UI calls (``visibility=["app"]``) is never handed to a model: the OpenAI
    export and the vendors' ``--target`` lists leave it out, and their checks do not report it
    (an MCP Apps host is listed it, so ``export mcp`` keeps it)."""
    def register(d: ToolDiscovery) -> None:
        @d.tool
        def weather(city: str) -> str:
            """Weather.

            Args:
                city: City.
            """
            return city

        # a name with a dot and a union at the schema's root: every vendor and MCP refuse one of them
        d.add_tool(lambda **kw: kw, name="widget.refresh", description="Called by the widget.",
                   input_schema=ROOT_UNION, visibility=["app"])

    app = app_with(register)
    runner = app.test_cli_runner()
    openai = json.loads(runner.invoke(args=["tools", "export", "openai"]).output)
    assert [f["function"]["name"] for f in openai] == ["weather"]
    strict = json.loads(runner.invoke(args=["tools", "export", "--target", "openai-strict"]).output)
    assert [f["function"]["name"] for f in strict] == ["weather"]
    assert [t["name"] for t in json.loads(runner.invoke(args=["tools", "export", "--target", "anthropic"]).output)] \
        == ["weather"]
    gemini = json.loads(runner.invoke(args=["tools", "export", "--target", "gemini"]).output)
    assert [f["name"] for f in gemini["functionDeclarations"]] == ["weather"]
    for target in ("openai-strict", "anthropic", "gemini"):
        checked = runner.invoke(args=["tools", "check", "--target", target])
        assert "widget" not in checked.output, (target, checked.output)
    # the MCP tools/list an Apps host is listed still carries it (and MCP's own check sees it)
    mcp = json.loads(runner.invoke(args=["tools", "export", "mcp"]).output)
    assert sorted(t["name"] for t in mcp["tools"]) == ["weather", "widget.refresh"]
    assert "widget.refresh" in runner.invoke(args=["tools", "check", "--target", "mcp"]).output
