"""Settings blocks: a dialect declares its own keys, init_app parses and checks them beside the
core's, and the dialect reads them back typed; the core's Settings holds only core keys."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest
from flask import Flask, jsonify

from flask_tooldiscovery import Dialect, ToolDiscovery
from flask_tooldiscovery.dialects.mcp.settings import McpSettings
from flask_tooldiscovery.settings import (
    SPECS,
    DialectSettings,
    Settings,
    SettingsError,
    choice,
    parse_list,
    parse_str,
    setting,
    whole_number,
)


@dataclass(frozen=True)
class EchoSettings(DialectSettings):
    greeting: str = setting("ECHO_GREETING", "hello", parse_str, "What /echo/greeting answers.")
    repeat: int = setting("ECHO_REPEAT", 1, whole_number(1), "How many times it says it.")
    tone: str = setting("ECHO_TONE", "plain", choice("plain", "loud"), "plain or loud.")
    allowed: tuple[str, ...] = setting("ECHO_ALLOWED", [], parse_list, "Names it greets; empty: anyone.")

    def __post_init__(self) -> None:  # a check across keys
        if self.tone == "loud" and self.repeat > 3:
            raise SettingsError("TOOLDISCOVERY_ECHO_REPEAT may be at most 3 with TOOLDISCOVERY_ECHO_TONE loud")


def _echo_blueprint(pipe):
    bp = pipe.blueprint(__name__)
    options = EchoSettings.of(pipe.settings)

    @pipe.route("/greeting", "discovery", ["GET"])
    def greeting():
        word = options.greeting.upper() if options.tone == "loud" else options.greeting
        return jsonify({"greeting": " ".join([word] * options.repeat), "allowed": list(options.allowed)})

    return bp


ECHO = Dialect("echo", _echo_blueprint, default_prefix="/echo", settings=EchoSettings)


def echo_app(**config):
    app = Flask("echo_app")
    app.config.update(TOOLDISCOVERY_DIALECTS=["echo"], TESTING=True, **config)
    ToolDiscovery(dialects=[ECHO]).init_app(app)
    return app


def test_a_dialect_defined_here_reads_its_own_parsed_block(caplog) -> None:
    with caplog.at_level("WARNING", logger="flask_tooldiscovery"):
        app = echo_app(TOOLDISCOVERY_ECHO_REPEAT="2", TOOLDISCOVERY_ECHO_TONE="LOUD",
                       TOOLDISCOVERY_ECHO_ALLOWED="ada, grace")  # as environment variables carry them
    assert app.test_client().get("/echo/greeting").get_json() == {"greeting": "HELLO HELLO",
                                                                  "allowed": ["ada", "grace"]}
    assert app.config["TOOLDISCOVERY_ECHO_GREETING"] == "hello"  # its defaults are set like the core's
    assert not [r for r in caplog.records if "unknown setting" in r.getMessage()]  # its keys are known
    defaults = echo_app()
    assert defaults.test_client().get("/echo/greeting").get_json() == {"greeting": "hello", "allowed": []}


@pytest.mark.parametrize("name, value, fragment", [
    ("ECHO_REPEAT", 0, "at least 1"),
    ("ECHO_REPEAT", "twice", "whole number"),
    ("ECHO_TONE", "whisper", "plain, loud"),
    ("ECHO_ALLOWED", [1], "strings"),
    ("ECHO_REPEAT", 4, "at most 3"),  # with the loud tone below: the block's own cross-key check
])
def test_a_wrong_value_in_a_dialects_block_fails_at_init_app_naming_the_key(name, value, fragment) -> None:
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["echo"], TOOLDISCOVERY_ECHO_TONE="loud")
    app.config["TOOLDISCOVERY_" + name] = value
    with pytest.raises(SettingsError) as info:
        ToolDiscovery(dialects=[ECHO]).init_app(app)
    assert "TOOLDISCOVERY_" + name in str(info.value)
    assert fragment in str(info.value)
    assert "tooldiscovery" not in app.extensions and not app.blueprints


def test_a_built_in_dialects_key_is_checked_even_when_that_dialect_is_not_mounted() -> None:
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_MCP_PAGE_SIZE=0)
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_MCP_PAGE_SIZE must be at least 1"):
        ToolDiscovery().init_app(app)


def test_mcp_pages_by_its_own_block() -> None:
    discovery = ToolDiscovery()
    for name in ("one", "two", "three"):
        discovery.add_tool(lambda: 1, name=name)
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_MCP_PAGE_SIZE="2")
    discovery.init_app(app)
    with app.app_context():
        assert McpSettings.of(discovery.settings).page_size == 2
    page = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).get_json()
    assert [t["name"] for t in page["result"]["tools"]] == ["one", "two"]
    assert page["result"]["nextCursor"]


def test_settings_hold_only_core_keys() -> None:
    names = {spec.name for spec in SPECS}
    assert not {"ALLOW_EXECUTE", "MCP_PAGE_SIZE", "OXP_TOOLKIT", "TDP_WIRE", "OPAL_BEARER_TOKEN"} & names
    assert not [f.name for f in fields(Settings) if f.name.startswith(("opal_", "oxp_", "tdp_"))]


def test_a_block_cannot_take_a_key_of_the_core_or_of_another_dialect() -> None:
    @dataclass(frozen=True)
    class Greedy(DialectSettings):
        title: str = setting("TITLE", "", parse_str, "The core's.")

    app = Flask("x")
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_TITLE"):
        ToolDiscovery(dialects=[Dialect("greedy", _echo_blueprint, settings=Greedy)]).init_app(app)

    @dataclass(frozen=True)
    class Copycat(DialectSettings):
        page_size: int = setting("MCP_PAGE_SIZE", 5, whole_number(1), "MCP's.")

    with pytest.raises(SettingsError, match="TOOLDISCOVERY_MCP_PAGE_SIZE"):
        ToolDiscovery(dialects=[Dialect("copycat", _echo_blueprint, settings=Copycat)]).init_app(Flask("y"))


def test_a_block_field_must_be_a_setting_and_a_block_must_be_in_the_table() -> None:
    @dataclass(frozen=True)
    class Sloppy(DialectSettings):
        size: int = 3

    with pytest.raises(TypeError, match=r"Sloppy\.size is not declared with setting"):
        ToolDiscovery(dialects=[Dialect("sloppy", _echo_blueprint, settings=Sloppy)]).init_app(Flask("x"))
    app = echo_app()
    with app.app_context(), pytest.raises(LookupError, match="Sloppy"):
        Sloppy.of(app.extensions["tooldiscovery"].settings)
