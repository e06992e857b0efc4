"""``flask tools``: output and exit codes of every command."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask, has_request_context

from flask_tooldiscovery import ToolDiscovery

from .apps.sample import create_app


@pytest.fixture
def runner():
    return create_app({"TESTING": True}).test_cli_runner()


def test_list(runner) -> None:
    result = runner.invoke(args=["tools", "list"])
    assert result.exit_code == 0
    lines = result.output.strip().splitlines()
    assert lines[0] == "add@1.0.0\tAdd two numbers."
    assert "get_weather@1.2.0\tFetch current weather for a city." in lines


def test_list_shows_the_prompts_a_caller_may_see() -> None:
    from .apps.prompts_app import create_app as prompts_app

    runner = prompts_app(TESTING=True).test_cli_runner()
    listed = runner.invoke(args=["tools", "list"])
    assert listed.exit_code == 0
    tools, _, prompts = listed.output.partition("\nprompts:\n")
    assert tools.splitlines() == ["add@1.0.0\tAdd two numbers.", "count_words@1.0.0\tCount the words of a text."]
    assert prompts.splitlines() == [
        "code_review(code, language?)\tAsk for a review of some code.",
        "plan_trip(country, city, days?)\tPlan a trip.",
        "greeting()\tGreet whoever asks.",
        "describe_chart(report_id)\tDescribe a chart, with the report it comes from.",
        "audit()\tStart an audit (admins only)."]
    assert "audit()" not in runner.invoke(args=["tools", "--as", "bob", "list"]).output
    assert "audit()" in runner.invoke(args=["tools", "--as", "root", "--scope", "admin", "list"]).output


def test_show(runner) -> None:
    result = runner.invoke(args=["tools", "show", "add"])
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["input_schema"]["required"] == ["a", "b"]
    missing = runner.invoke(args=["tools", "show", "nope"])
    assert missing.exit_code == 1 and "Tool not found: nope" in missing.output


def test_call(runner) -> None:
    ok = runner.invoke(args=["tools", "call", "add", "--input", '{"a": 1, "b": 2}'])
    assert ok.exit_code == 0 and json.loads(ok.output) == 3.0
    asynchronous = runner.invoke(args=["tools", "call", "get_weather", "--input", '{"city": "Oslo"}'])
    assert asynchronous.exit_code == 0 and json.loads(asynchronous.output)["city"] == "Oslo"
    invalid = runner.invoke(args=["tools", "call", "add", "--input", '{"a": "x"}'])
    assert invalid.exit_code == 1 and "parameter_errors" in invalid.output
    failed = runner.invoke(args=["tools", "call", "get_weather", "--input", '{"city": "Atlantis"}'])
    assert failed.exit_code == 1 and "Unknown city: Atlantis" in failed.output
    bad_json = runner.invoke(args=["tools", "call", "add", "--input", "{"])
    assert bad_json.exit_code == 1 and "not valid JSON" in bad_json.output


@pytest.mark.parametrize("what, check", [
    ("opal", lambda d: d["functions"][0]["endpoint"] == "/tools/add"),
    ("oxp", lambda d: d["$schema"] == "urn:oxp:1.0" and d["items"][0]["id"] == "ExampleTools.add@1.0.0"),
    ("tdp", lambda d: d["protocol_version"] == "1.0"),
    ("explorer", lambda d: d[0]["name"] == "add" and "inputSchema" in d[0]),
    ("mcp", lambda d: d["tools"][0]["name"] == "add"),
    ("openai", lambda d: d[0] == {"type": "function", "function": {
        "name": "add", "description": "Add two numbers.", "parameters": d[0]["function"]["parameters"]}}
        and d[0]["function"]["parameters"]["required"] == ["a", "b"]),
    ("openapi", lambda d: d["openapi"] == "3.1.0" and d["servers"] == [{"url": "http://localhost"}]
        and list(d["paths"]) == ["/utcp/tools/add", "/utcp/tools/get_weather", "/utcp/tools/boom"]
        and [op["operationId"] for item in d["paths"].values() for op in item.values()]
        == ["add", "get_weather", "boom"]),
    ("utcp", lambda d: d["tools"][0]["tool_call_template"]["url"] == "http://localhost/utcp/tools/add"),
    ("server_card", lambda d: d["remotes"][0]["url"] == "http://localhost/mcp"),
])
def test_export(runner, what, check) -> None:
    result = runner.invoke(args=["tools", "export", what])
    assert result.exit_code == 0, result.output
    assert check(json.loads(result.output))


def test_export_openapi_is_valid_openapi(runner) -> None:
    from jsonschema import Draft202012Validator
    from openapi_spec_validator import validate

    doc = json.loads(runner.invoke(args=["tools", "export", "openapi"]).output)
    validate(doc)
    for path, item in doc["paths"].items():
        assert path.startswith("/")
        for op in item.values():
            schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if schema is not None:
                Draft202012Validator.check_schema(schema)


def test_export_unknown(runner) -> None:
    result = runner.invoke(args=["tools", "export", "soap"])
    assert result.exit_code == 1 and "openapi" in result.output


def test_export_without_a_name_says_what_can_be_exported(runner) -> None:
    result = runner.invoke(args=["tools", "export"])
    assert result.exit_code == 2, result.output  # click's usage error
    assert "None" not in result.output
    assert "Name what to export: one of " in result.output and "openapi" in result.output
    assert "--target " in result.output and "gemini" in result.output


ALL_DOCUMENTS = ["explorer", "opal", "oxp", "tdp", "mcp", "utcp", "openapi", "server_card", "manifest"]
BASE = "https://tools.example.com/sub"


def exporting_app() -> tuple[Flask, list[bool]]:
    """Every dialect that has a document, MCP with OAuth (the manifest says where tokens come from),
    a tool for everyone, one for admins, and a tools provider that notes whether a request context
    was pushed each time it is asked."""
    pushed: list[bool] = []

    def provider() -> list[dict[str, Any]]:
        pushed.append(has_request_context())
        return [{"name": "provided", "description": "From a provider.",
                 "inputSchema": {"type": "object", "properties": {}}}]

    discovery = ToolDiscovery(tools=provider, call_handler=lambda name, arguments: "ok")
    discovery.add_tool(lambda: "hello", name="public_hello", description="Anyone.")
    discovery.add_tool(lambda: "report", name="admin_report", description="Admins.", scopes=["admin"])
    app = Flask("exporting")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=ALL_DOCUMENTS, TOOLDISCOVERY_ALLOWED_HOSTS=[
        "tools.example.com"], TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS=["https://auth.example"],
        TOOLDISCOVERY_OPEN_DIALECTS=["opal", "oxp", "tdp", "utcp"])
    discovery.init_app(app)
    return app, pushed


def test_export_pushes_no_request_and_writes_what_the_app_serves_at_the_base_url() -> None:
    """``flask tools export`` builds each document without a request context (a tools provider
    asked on the way sees none), for a caller without credentials, with the absolute URLs of
    ``--base-url``: the bytes a GET at that root answers (TDP's but for its generation time)."""
    app, pushed = exporting_app()
    runner, client = app.test_cli_runner(), app.test_client()
    served = {"opal": "/opal/discovery", "oxp": "/oxp/tools",
              "tdp": "/api/v1/tools", "utcp": "/utcp/", "openapi": "/tools/openapi.json",
              "server_card": "/mcp/server-card", "manifest": "/.well-known/tool-discovery"}
    for what in ALL_DOCUMENTS:
        pushed.clear()
        result = runner.invoke(args=["tools", "export", what, "--base-url", BASE])
        assert result.exit_code == 0, (what, result.output)
        assert (pushed or what == "server_card") and not any(pushed), what  # the card lists no tools
        exported = json.loads(result.output)
        text = json.dumps(exported)
        assert "public_hello" in text or what in ("server_card", "manifest"), what  # these name no tool
        assert "admin_report" not in text, what
        if what in served:
            answer = client.get(served[what], base_url=BASE)
            assert answer.status_code == 200, (what, answer.get_data())
            body = answer.get_json()
            if what == "tdp":
                exported.pop("generated_at"), body.pop("generated_at")
            assert exported == body, what
    manifest = json.loads(runner.invoke(args=["tools", "export", "manifest", "--base-url", BASE]).output)
    assert manifest["url"] == f"{BASE}/.well-known/tool-discovery"
    assert manifest["dialects"]["mcp"]["url"] == f"{BASE}/mcp"
    assert manifest["mcp"]["authorization"]["resourceMetadataUrl"] == \
        "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
    assert manifest["mcp"]["serverCard"]["remotes"][0]["url"] == f"{BASE}/mcp"
    assert manifest["tools"] == 2  # public_hello and provided: not admin_report
    pushed.clear()
    targeted = runner.invoke(args=["tools", "export", "--target", "opal", "--base-url", BASE])
    assert targeted.exit_code == 0 and pushed and not any(pushed)
    admin = runner.invoke(args=["tools", "--as", "root", "--scope", "admin", "export", "utcp", "--base-url", BASE])
    assert f"{BASE}/utcp/tools/admin_report" in admin.output


def test_export_refuses_a_base_url_that_is_none() -> None:
    runner = exporting_app()[0].test_cli_runner()
    for wrong in ("tools.example.com", "https://tools.example.com/?page=2", "https://tools.example.com/#top"):
        result = runner.invoke(args=["tools", "export", "utcp", "--base-url", wrong])
        assert result.exit_code == 2 and "--base-url" in result.output and "Traceback" not in result.output, wrong


def test_check_passes_on_the_example(runner) -> None:
    result = runner.invoke(args=["tools", "check"])
    assert result.exit_code == 0, result.output
    assert "pass the checks" in result.output


def test_check_reports_problems() -> None:
    d = ToolDiscovery(tools=[
        {"name": "bad-name", "description": "", "inputSchema": {
            "type": "object", "properties": {"x": {"type": 5}}}},
        {"name": "ok_name", "description": "fine", "inputSchema": {
            "type": "object", "properties": {"u": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                               "description": "a union"},
                                         "n": {"enum": [1, 2], "description": "numbers"}}}},
    ])
    app = Flask("lintapp")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal", "oxp", "tdp", "mcp"])
    d.init_app(app)
    result = app.test_cli_runner().invoke(args=["tools", "check"])
    assert result.exit_code == 1
    out = result.output
    assert "bad-name@1.0.0: [all] no description" in out
    assert "not a valid JSON Schema" in out
    assert "[opal] name 'bad-name' does not match ^[A-Za-z0-9_]+$ (exported as 'bad_name')" in out
    assert "[oxp] name 'bad-name' appears in OXP ids as 'bad_name'" in out
    assert "ok_name@1.0.0: [opal] parameter 'u': a union; Opal keeps one type ('string')" in out
    assert "ok_name@1.0.0: [tdp] parameter 'n': non-string enum values; TDP sends them as strings" in out
    # TDP keeps a union's first branch: the check names the type its manifest really sends
    assert "ok_name@1.0.0: [tdp] parameter 'u': a union; TDP keeps one type ('integer')" in out
    manifest = app.test_client().get("/api/v1/tools").get_json()
    sent = next(t for t in manifest["tools"] if t["name"] == "ok_name")
    assert sent["parameters"]["properties"]["u"]["type"] == "integer"
    assert "problem(s) found" in out


def _many_tools_app(count: int, **config: Any) -> Flask:
    d = ToolDiscovery(tools=[{"name": f"op_{i}", "description": f"Operation {i}.",
                              "inputSchema": {"type": "object", "properties": {}}} for i in range(count)]
                      + [{"name": "panel_refresh", "description": "Refresh the panel.", "visibility": ["app"],
                          "inputSchema": {"type": "object", "properties": {}}}])
    app = Flask("manytools")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp", "opal"], **config)
    d.init_app(app)
    return app


def test_check_says_when_mcp_lists_more_tools_than_clients_load() -> None:
    # 129 tools a model sees (the app-only one is not listed to it): past VS Code's 128.
    result = _many_tools_app(129).test_cli_runner().invoke(args=["tools", "check"])
    assert result.exit_code == 1, result.output
    assert "(server): [mcp] tools/list shows 129 tools and tool search is off" in result.output
    assert "TOOLDISCOVERY_TOOL_SEARCH" in result.output and "[opal]" not in result.output
    targeted = _many_tools_app(129, TOOLDISCOVERY_TOOL_SEARCH=500).test_cli_runner().invoke(
        args=["tools", "check", "--target", "mcp"])
    assert targeted.exit_code == 1 and "tool search starts only past 500 tools" in targeted.output
    # What lists fewer is enough: 128 tools, search on (or from 128 on), or toolsets to offer instead.
    for count, config in ((128, {}), (300, {"TOOLDISCOVERY_TOOL_SEARCH": True}),
                          (300, {"TOOLDISCOVERY_TOOL_SEARCH": 128}),
                          (300, {"TOOLDISCOVERY_TOOLSETS": {"few": {"tags": ["few"]}}})):
        quiet = _many_tools_app(count, **config).test_cli_runner().invoke(args=["tools", "check"])
        assert quiet.exit_code == 0 and "tools/list shows" not in quiet.output, (count, config, quiet.output)

def test_safe_default_warning(caplog) -> None:
    import logging

    d = ToolDiscovery()
    app = Flask("prod")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal", "mcp"], TOOLDISCOVERY_MCP_BEARER_TOKEN="t",
                      TOOLDISCOVERY_OPEN_DIALECTS=["opal"])
    with caplog.at_level(logging.WARNING):
        d.init_app(app)
    messages = [r.getMessage() for r in caplog.records]
    assert any("TOOLDISCOVERY_OPAL_BEARER_TOKEN" in m for m in messages)
    assert not any("MCP_BEARER_TOKEN" in m for m in messages)
    quiet = Flask("dev")
    quiet.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        ToolDiscovery().init_app(quiet)
    assert not caplog.records


def test_name_at_version_everywhere(tmp_path) -> None:
    d = ToolDiscovery()
    d.add_tool(lambda: "one", name="greet", version="1.0.0", description="Old.")
    d.add_tool(lambda: "two", name="greet", version="2.0.0", description="New.")
    app = Flask("versions")
    app.config.update(TESTING=True)
    d.init_app(app)
    runner = app.test_cli_runner()
    listed = runner.invoke(args=["tools", "list"]).output.splitlines()
    assert listed == ["greet@1.0.0\tOld.", "greet@2.0.0\tNew."]
    for spelling, version in (("greet@1.0.0", "1.0.0"), ("greet@1", "1.0.0"), ("greet", "2.0.0")):
        shown = json.loads(runner.invoke(args=["tools", "show", spelling]).output)
        assert shown["version"] == version, spelling
    assert json.loads(runner.invoke(args=["tools", "call", "greet@1.0.0"]).output) == "one"
    assert json.loads(runner.invoke(args=["tools", "call", "greet"]).output) == "two"
    missing = runner.invoke(args=["tools", "call", "greet@3.0.0"])
    assert missing.exit_code == 1 and "Tool not found: greet@3.0.0" in missing.output


def test_input_must_be_an_object(runner) -> None:
    result = runner.invoke(args=["tools", "call", "add", "--input", "[1,2]"])
    assert result.exit_code == 1 and "--input must be a JSON object of arguments, not [1, 2]" in result.output


def test_help_has_no_markup(runner) -> None:
    for command in ("export", "show", "call", "check", "list"):
        text = runner.invoke(args=["tools", command, "--help"]).output
        assert "``" not in text, command


# -- flask tools call goes through the pipeline ------------------------------------------------------


def pipeline_app(**config: Any) -> tuple[Flask, list[str]]:
    """An app with a plain tool and one that needs a person's approval; ``ran`` records the calls."""
    ran: list[str] = []
    discovery = ToolDiscovery()

    @discovery.tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append("add")
        return a + b

    @discovery.tool(requires_approval=True)
    def wipe(table: str) -> str:
        """Empty a table."""
        ran.append(f"wipe {table}")
        return f"{table} wiped"

    app = Flask("cli-pipeline")
    app.config.update({"TESTING": True, "SECRET_KEY": "cli-test-secret", **config})
    discovery.init_app(app)
    return app, ran


def test_call_meets_the_rate_limit_per_caller() -> None:
    app, ran = pipeline_app(TOOLDISCOVERY_RATELIMIT_TOOLS={"add": "2/minute"})
    runner = app.test_cli_runner()
    args = ["call", "add", "--input", '{"a": 1, "b": 2}']
    assert [runner.invoke(args=["tools", *args]).exit_code for _ in range(2)] == [0, 0]
    limited = runner.invoke(args=["tools", *args])
    assert limited.exit_code == 1 and ran == ["add", "add"]
    assert "Rate limit of 2 per 1 minute reached for tool add. (retry after 60 s)" in limited.output
    assert "Traceback" not in limited.output and isinstance(limited.exception, SystemExit)
    # The limit counts callers apart: --as names one.
    assert runner.invoke(args=["tools", "--as", "ann", *args]).exit_code == 0


def test_call_sends_the_call_signals() -> None:
    from flask_tooldiscovery import signals

    app, _ = pipeline_app()
    got: list[tuple[str, Any, dict[str, Any]]] = []

    def called(sender: Any, **fields: Any) -> None:
        got.append(("tool_called", sender, fields))

    def succeeded(sender: Any, **fields: Any) -> None:
        got.append(("tool_succeeded", sender, fields))

    with signals.tool_called.connected_to(called, app), signals.tool_succeeded.connected_to(succeeded, app):
        result = app.test_cli_runner().invoke(args=["tools", "--as", "ann", "call", "add",
                                                    "--input", '{"a": 2, "b": 3}'])
    assert result.exit_code == 0 and json.loads(result.output) == 5
    assert [(name, fields["tool"].name, fields["dialect"]) for name, _, fields in got] == [
        ("tool_called", "add", "cli"), ("tool_succeeded", "add", "cli")]
    assert all(sender is app for _, sender, _ in got)
    assert got[0][2]["identity"].subject == "ann" and got[0][2]["call_id"] == got[1][2]["call_id"]
    assert got[1][2]["outcome"].value == 5


def test_call_of_a_tool_that_needs_approval_runs_only_with_approve() -> None:
    app, ran = pipeline_app()
    runner = app.test_cli_runner()
    args = ["tools", "call", "wipe", "--input", '{"table": "users"}']
    refused = runner.invoke(args=args)
    assert refused.exit_code == 1 and ran == []
    assert "needs approval" in refused.output and "--approve" in refused.output
    assert """Allow the tool 'wipe' to run with {"table": "users"}?""" in refused.output
    approved = runner.invoke(args=[*args, "--approve"])
    assert approved.exit_code == 0 and json.loads(approved.output) == "users wiped" and ran == ["wipe users"]
    # --approve approves through the approvals module: without a key to seal the request with,
    # there is nothing to approve, and the tool does not run.
    keyless, keyless_ran = pipeline_app(SECRET_KEY=None)
    unsealed = keyless.test_cli_runner().invoke(args=[*args, "--approve"])
    assert unsealed.exit_code == 1 and keyless_ran == [] and "approvals are not set up" in unsealed.output


@pytest.mark.parametrize("given, said", [
    ("{", "--input is not valid JSON"), ('{"a": NaN}', "--input is not valid JSON"),
    ('"text"', "--input must be a JSON object of arguments"),
])
def test_call_with_bad_input_is_a_clear_error(given: str, said: str) -> None:
    app, ran = pipeline_app()
    result = app.test_cli_runner().invoke(args=["tools", "call", "add", "--input", given])
    assert result.exit_code == 1 and said in result.output and ran == []
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
