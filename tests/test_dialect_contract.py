"""A dialect is its :class:`Dialect`: one defined here, registered with the public ``add_dialect``,
is mounted, listed in the discovery manifest with its protocol and version, has its own settings
block validated at ``init_app``, exposes its headers to browsers, is a ``--target`` and is replayed
by ``flask tools check --replay`` through its own driver, with nothing else in the package naming
it. The documentation's "Writing a dialect" example is run the same way."""

from __future__ import annotations

import json
import logging
import re
import textwrap
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, Flask, Response, jsonify

from flask_tooldiscovery import ToolContext, ToolDiscovery, ToolError
from flask_tooldiscovery.dialects import Dialect, Protocol
from flask_tooldiscovery.dialects.driver import Driver, Observation, WireRequest, failed_kind, status_kind
from flask_tooldiscovery.errors import BadRequest, CoreError
from flask_tooldiscovery.lint.targets import Target
from flask_tooldiscovery.serving.pipeline import Pipeline
from flask_tooldiscovery.settings import DialectSettings, Settings, SettingsError, parse_str, setting, whole_number
from flask_tooldiscovery.tools.model import Tool

from .conftest import live_server

# -- the dialect: "relay", a small JSON protocol of its own ------------------------------------------


def catalog(tools: list[Tool]) -> dict[str, Any]:
    return {"relay": "0.3", "tools": [{"tool": t.name, "summary": t.description_or_title} for t in tools]}


@dataclass(frozen=True)
class RelaySettings(DialectSettings):
    """Relay's own keys."""

    cost: int = setting("RELAY_COST", 1, whole_number(1), "What each call costs, in X-Relay-Cost.")
    banner: str | None = setting("RELAY_BANNER", None, parse_str, "A line the catalog starts with.")


def relay_blueprint(pipe: Pipeline) -> Blueprint:
    """``GET /relay/catalog`` lists the tools; ``POST /relay/run`` with ``{"tool", "args"}`` runs one."""
    bp = pipe.blueprint(__name__)

    @pipe.route("/catalog", "discovery", ["GET"], endpoint="catalog")
    def serve_catalog() -> Response:
        banner = RelaySettings.of(pipe.settings).banner
        return pipe.send(pipe.document("catalog", lambda toolset: {
            **({"banner": banner} if banner else {}), **catalog(toolset.latest())}))

    @pipe.route("/run", "call", ["POST"], endpoint="run")
    def run() -> Response | tuple[Response, int]:
        body = pipe.body(required=True)
        if not isinstance(body, dict):
            raise BadRequest("The body must be a JSON object: {\"tool\": ..., \"args\": {...}}.")
        outcome = pipe.invoke(pipe.find(str(body.get("tool"))), body.get("args") or {}, pipe.context())
        pipe.add_headers({"X-Relay-Cost": str(RelaySettings.of(pipe.settings).cost)})
        if outcome.ok:
            return jsonify(done=True, result=outcome.value)
        status = 400 if outcome.status == "invalid" else 200
        return jsonify(done=False, problem=outcome.error_message, retry=bool(outcome.failure and
                                                                          outcome.failure.can_retry)), status

    return bp


def relay_error(exc: CoreError) -> tuple[Any, int]:
    """The core's refusals in relay's own shape."""
    return {"done": False, "problem": exc.message, "code": exc.status}, exc.status


class RelayDriver(Driver):
    """How relay's clients call tools."""

    def list_tools(self, prefix: str) -> WireRequest:
        return WireRequest("GET", f"{prefix}/catalog")

    def tool_names(self, body: Any) -> list[str]:
        return [t["tool"] for t in body["tools"]]

    def call_path(self, prefix: str, name: str) -> str:
        return f"{prefix}/run"

    def call_body(self, tool: Tool | str, arguments: Any, settings: Settings) -> Any:
        return {"tool": tool if isinstance(tool, str) else tool.name, "args": arguments}

    def read(self, status: int, body: Any) -> Observation:
        if status == 200 and isinstance(body, dict) and body.get("done"):
            return Observation("ok", [body.get("result")])
        problem = str(body.get("problem", "")) if isinstance(body, dict) else ""
        if status == 200:  # the tool failed: relay says so in the body
            return Observation(failed_kind(problem), message=problem)
        return Observation("invalid" if status == 400 else status_kind(status), message=problem)


#: Relay's clients take one parameter per tool at most, and lower-case names.
RELAY_TARGET = Target("relay", "Relay clients", re.compile(r"^[a-z_]+$"),
                      lambda schema: [] if len(schema.get("properties") or {}) <= 1 else ["relay takes one parameter"],
                      lambda schema: schema)

RELAY = Dialect(name="relay", make_blueprint=relay_blueprint, default_prefix="/relay",
                protocol=Protocol("Relay tools", ("0.2", "0.3")), error_response=relay_error,
                cors_headers=("X-Relay-Client",), exposed_headers=("X-Relay-Cost",), driver=RelayDriver(),
                target=RELAY_TARGET, export_document=lambda pipe, root: catalog(pipe.tools().latest()),
                settings=RelaySettings)


TWO_AND_THREE = {"description": "two and three", "input": {"a": 2, "b": 3}, "expected_output": 5}


def build(*dialects: str, examples: list[dict[str, Any]] | None = None, **config: Any) -> Flask:
    discovery = ToolDiscovery()
    discovery.add_dialect(RELAY)
    callers: list[str | None] = []

    @discovery.tool(examples=examples or [TWO_AND_THREE])
    def add(a: int, b: int, ctx: ToolContext = None) -> int:  # type: ignore[assignment]
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        callers.append(ctx.dialect)
        return a + b

    @discovery.tool
    def refuse(reason: str) -> None:
        """Refuse on purpose.

        Args:
            reason: Why.
        """
        raise ToolError(f"Cannot: {reason}")

    app = Flask("relaying")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": list(dialects), **config})
    app.extensions["callers"] = callers
    discovery.init_app(app)
    return app


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc), exc.headers


def test_it_is_mounted_and_answers_over_http() -> None:
    with live_server(build("relay")) as base:
        with urllib.request.urlopen(f"{base}/relay/catalog", timeout=10) as response:
            assert response.status == 200 and response.headers["ETag"]
            assert [t["tool"] for t in json.load(response)["tools"]] == ["add", "refuse"]
        assert post(f"{base}/relay/run", {"tool": "add", "args": {"a": 2, "b": 3}})[:2] == (
            200, {"done": True, "result": 5})
        status, body, _ = post(f"{base}/relay/run", {"tool": "add", "args": {"a": "x", "b": 1}})
        assert status == 400 and body["done"] is False and "a:" in body["problem"]
        # The core's refusals come back in relay's own shape: an unknown tool, a body that is not JSON.
        assert post(f"{base}/relay/run", {"tool": "nope"})[:2] == (
            404, {"done": False, "problem": "Tool not found: nope", "code": 404})
        bad = urllib.request.Request(f"{base}/relay/run", data=b"{", method="POST",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=10)
        assert refused.value.code == 400 and json.load(refused.value)["code"] == 400
        assert post(f"{base}/relay/run", ["add"])[:2] == (400, {
            "done": False, "problem": 'The body must be a JSON object: {"tool": ..., "args": {...}}.', "code": 400})


def test_it_is_listed_in_the_manifest_with_its_protocol_and_version() -> None:
    client = build("relay", "mcp", "manifest").test_client()
    manifest = client.get("/.well-known/tool-discovery").get_json()
    assert list(manifest["dialects"]) == ["relay", "mcp"]
    entry = manifest["dialects"]["relay"]
    assert (entry["protocol"], entry["version"]) == ("Relay tools", "0.3")
    assert entry["url"] == "http://localhost/relay/catalog" and entry["calls"] == ["http://localhost/relay/run"]
    assert [(r["kind"], r["methods"]) for r in entry["routes"]] == [("discovery", ["GET"]), ("call", ["POST"])]
    assert manifest["mcp"]["url"] == "http://localhost/mcp"  # the built-in entries stay as they were
    assert "relay" not in manifest  # no entry of its own: it declares no manifest_section


def test_its_settings_block_is_validated_at_init_app_and_read_typed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        client = build("relay", TOOLDISCOVERY_RELAY_COST="3", TOOLDISCOVERY_RELAY_BANNER="Relay on").test_client()
    assert "unknown setting" not in caplog.text  # its keys are known keys
    assert client.get("/relay/catalog").get_json()["banner"] == "Relay on"
    assert client.post("/relay/run", json={"tool": "add", "args": {"a": 1, "b": 1}}).headers["X-Relay-Cost"] == "3"
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_RELAY_COST"):
        build("relay", TOOLDISCOVERY_RELAY_COST="free")
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_RELAY_COST"):
        build("mcp", TOOLDISCOVERY_RELAY_COST=0)  # checked when it is in the table, mounted or not


def test_browsers_may_send_and_read_its_own_headers() -> None:
    client = build("relay", "mcp", "oxp", TOOLDISCOVERY_ALLOWED_ORIGINS=["https://app.example"],
                   TOOLDISCOVERY_OPEN_DIALECTS=["oxp"]).test_client()
    origin = {"Origin": "https://app.example"}
    preflight = client.options("/relay/run", headers={**origin, "Access-Control-Request-Method": "POST",
                                                      "Access-Control-Request-Headers": "x-relay-client"})
    assert "X-Relay-Client" in preflight.headers["Access-Control-Allow-Headers"]
    ran = client.post("/relay/run", json={"tool": "add", "args": {"a": 1, "b": 1}}, headers=origin)
    assert ran.headers["X-Relay-Cost"] == "1"
    exposed = "WWW-Authenticate, X-Trace-Id, Retry-After, ETag, X-Relay-Cost"  # the core's, then its own
    assert ran.headers["Access-Control-Expose-Headers"] == exposed
    mcp = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=origin)
    assert mcp.headers["Access-Control-Expose-Headers"].split(", ")[-1] == "Mcp-Session-Id"
    oxp = client.get("/oxp/tools", headers=origin)
    assert "Mcp-Session-Id" not in oxp.headers["Access-Control-Expose-Headers"]  # MCP's header is MCP's


def test_it_is_replayed_through_its_own_driver() -> None:
    app = build("relay", "mcp")
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert result.exit_code == 0, result.output
    assert "replay: 1 example(s) run through 2 dialect(s)." in result.output
    assert app.extensions["callers"] == ["relay", "mcp"]  # the example ran once through each


def test_a_replay_difference_names_it() -> None:
    app = build("relay", "mcp", examples=[{"description": "one more", "input": {"a": 1, "b": 1},
                                           "expected_output": 3}])
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert result.exit_code == 1
    assert "add@1.0.0: [replay] one more: expected 3, but relay, mcp answered otherwise" in result.output


def test_the_driver_reads_what_the_dialect_answers() -> None:
    client = build("relay").test_client()
    driver = RelayDriver()
    settings = ToolDiscovery.state(client.application).settings

    def call(tool: str, arguments: Any) -> Observation:
        wire = driver.call_tool("/relay", tool, arguments, settings)
        response = client.open(wire.path, method=wire.method, json=wire.json)
        return driver.read(response.status_code, response.get_json())

    assert (call("add", {"a": 1, "b": 2}).kind, call("add", {"a": 1, "b": 2}).value) == ("ok", 3)
    assert call("add", {"a": "x", "b": 1}).kind == "invalid"
    assert call("refuse", {"reason": "closed"}).kind == "tool_error"
    assert call("nope", {}).kind == "unknown"
    listing = driver.list_tools("/relay")
    assert driver.tool_names(client.open(listing.path, method=listing.method).get_json()) == ["add", "refuse"]


def test_its_clients_are_a_lint_and_export_target() -> None:
    runner = build("relay").test_cli_runner()
    checked = runner.invoke(args=["tools", "check", "--target", "relay"])
    assert checked.exit_code == 1 and "add@1.0.0: [relay] relay takes one parameter" in checked.output
    assert "refuse@1.0.0" not in checked.output
    exported = runner.invoke(args=["tools", "export", "--target", "relay"])
    assert exported.exit_code == 0 and json.loads(exported.output)["tools"][1]["tool"] == "refuse"
    unknown = runner.invoke(args=["tools", "check", "--target", "nope"])
    assert unknown.exit_code == 2 and "choose one of: openai-strict, anthropic, gemini" in unknown.output
    assert "relay" in unknown.output


# -- the documentation's example -------------------------------------------------------------------

GUIDE = (Path(__file__).resolve().parent.parent / "docs" / "topics" / "dialects.rst").read_text()


def guide_example() -> str:
    match = re.search(r"^\.\. code-block:: python\n\n((?:   .*\n|\n)+)", GUIDE, re.M)
    assert match is not None, "the guide shows its dialect in a Python block"
    return textwrap.dedent(match.group(1))


def test_the_guide_writes_a_dialect_in_under_40_lines() -> None:
    source = guide_example()
    dialect = source.split("\n@discovery.tool", 1)[0]  # the dialect, and its registration
    assert len([line for line in dialect.splitlines() if line.strip()]) < 40
    namespace: dict[str, Any] = {"__name__": "guide_dialect"}
    exec(compile(source, "dialects.rst", "exec"), namespace)
    app: Flask = namespace["app"]
    app.config["TESTING"] = True
    client = app.test_client()
    assert client.get("/plain/tools").get_json() == [{"name": "add", "about": "Add two numbers."}]
    assert client.post("/plain/call/add", json={"a": 2, "b": 3}).get_json() == {"value": 5}
    entry = client.get("/.well-known/tool-discovery").get_json()["dialects"]["plain"]
    assert (entry["protocol"], entry["version"], entry["url"]) == ("Plain tools", "1.0", "http://localhost/plain/tools")
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert result.exit_code == 0, result.output
    assert "replay: 1 example(s) run through 2 dialect(s)." in result.output
