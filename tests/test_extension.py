"""init_app: config defaults, double registration, dialect mounting, several apps."""

from __future__ import annotations

import sys

import pytest
from flask import Flask, jsonify, render_template_string

from flask_tooldiscovery import Dialect, ToolDiscovery
from flask_tooldiscovery.dialects.explorer.dialect import ExplorerSettings
from flask_tooldiscovery.settings import SPECS, SettingsError, key, specs

BLOCKS = [d.settings for d in map(ToolDiscovery().dialect, ToolDiscovery().dialect_names) if d.settings]
DEFAULTS = [key(spec.name) for spec in (*SPECS, *(s for block in BLOCKS for s in specs(block)))]


def test_config_defaults_are_set_without_overriding(make_app) -> None:
    d = ToolDiscovery()
    app = make_app(d, TOOLDISCOVERY_TITLE="Mine", TOOLDISCOVERY_DIALECTS=[])
    for name in DEFAULTS:
        assert name in app.config
    assert app.config["TOOLDISCOVERY_TITLE"] == "Mine"
    assert app.config["TOOLDISCOVERY_ALLOW_EXECUTE"] is False  # a dialect's key, set though none is mounted
    assert app.config["TOOLDISCOVERY_MCP_PAGE_SIZE"] == 100
    with app.app_context():
        assert d.settings.server_name == "testapp"
    assert app.extensions["tooldiscovery"] is d
    assert all(k.startswith("TOOLDISCOVERY_") for k in DEFAULTS)


def test_unset_dialects_mount_every_dialect_the_package_ships_and_only_those() -> None:
    from flask_tooldiscovery.dialects import BUILTIN

    own = Dialect(name="mine", make_blueprint=lambda pipe: pipe.blueprint(__name__))
    d = ToolDiscovery(dialects=[own])
    app = Flask("every")
    d.init_app(app)
    assert ToolDiscovery.mounted_dialects(app) == list(BUILTIN)  # a dialect of one's own is named to mount
    assert "mine" not in ToolDiscovery.pipelines(app)


def test_double_registration_is_refused() -> None:
    d = ToolDiscovery()
    app = Flask("x")
    app.config["TOOLDISCOVERY_DIALECTS"] = []
    d.init_app(app)
    with pytest.raises(RuntimeError, match="already registered"):
        d.init_app(app)
    with pytest.raises(RuntimeError, match="already registered"):
        ToolDiscovery().init_app(app)


def test_constructor_with_app() -> None:
    app = Flask("x")
    app.config["TOOLDISCOVERY_DIALECTS"] = "opal, oxp"
    d = ToolDiscovery(app)
    assert app.extensions["tooldiscovery"] is d
    assert {bp for bp in app.blueprints} == {"tooldiscovery_opal", "tooldiscovery_oxp"}


def test_unknown_dialect_names_known_ones() -> None:
    app = Flask("x")
    app.config["TOOLDISCOVERY_DIALECTS"] = ["opal", "soap"]
    with pytest.raises(ValueError) as info:
        ToolDiscovery().init_app(app)
    assert "soap" in str(info.value)
    for name in ("explorer", "mcp", "opal", "oxp", "tdp"):
        assert name in str(info.value)


def _echo_blueprint(pipe):
    bp = pipe.blueprint(__name__)

    @pipe.route("/names", "discovery", ["GET"])
    def names():
        return jsonify([t.name for t in pipe.tools()])

    @pipe.route("/title", "health", ["GET"])
    def title():
        return jsonify(pipe.settings.title)

    return bp


ECHO = Dialect("echo", _echo_blueprint, default_prefix="/echo")


@pytest.fixture
def echo_dialect():
    return ECHO


def test_dialect_table_mounts_a_dialect_defined_here(echo_dialect) -> None:
    d = ToolDiscovery()

    @d.tool
    def ping() -> str:
        return "pong"

    app = Flask("x")
    app.config["TOOLDISCOVERY_DIALECTS"] = ["echo"]
    with pytest.raises(ValueError, match="echo"):  # not in this extension's table
        d.init_app(app)
    d = ToolDiscovery(dialects=[echo_dialect])
    d.add_tool(lambda: "pong", name="ping")
    app = Flask("x")
    app.config["TOOLDISCOVERY_DIALECTS"] = ["echo"]
    d.init_app(app)
    assert app.test_client().get("/echo/names").json == ["ping"]
    assert "echo" not in ToolDiscovery().dialect_names  # the table belongs to each extension

    other = Flask("y")
    other.config.update(TOOLDISCOVERY_DIALECTS=["echo"], TOOLDISCOVERY_ECHO_URL_PREFIX="/elsewhere")
    d2 = ToolDiscovery(tools=[{"name": "provided", "description": "", "inputSchema": {}}])
    d2.add_dialect(echo_dialect)
    d2.init_app(other)
    assert other.test_client().get("/elsewhere/names").json == ["provided"]
    assert other.test_client().get("/echo/names").status_code == 404


def test_two_apps_one_extension_different_config(echo_dialect) -> None:
    d = ToolDiscovery(dialects=[echo_dialect])

    @d.tool
    def ping() -> str:
        return "pong"

    a, b = Flask("a"), Flask("b")
    a.config.update(TOOLDISCOVERY_DIALECTS=["echo"], TOOLDISCOVERY_TITLE="A")
    b.config.update(TOOLDISCOVERY_DIALECTS=["echo"], TOOLDISCOVERY_TITLE="B",
                    TOOLDISCOVERY_ECHO_URL_PREFIX="/b")
    d.init_app(a)
    d.init_app(b)
    assert not hasattr(d, "app")
    assert a.test_client().get("/echo/names").json == ["ping"]
    assert b.test_client().get("/b/names").json == ["ping"]
    assert a.test_client().get("/echo/title").json == "A"
    assert b.test_client().get("/b/title").json == "B"
    with a.app_context():
        assert d.settings.title == "A"
    with b.app_context():
        assert d.settings.title == "B"


def test_template_filter_injects_title_and_flag(make_app) -> None:
    app = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["explorer"],  # the explorer's page filter
                   TOOLDISCOVERY_TITLE="</script><script>alert(1)</script>",
                   TOOLDISCOVERY_ALLOW_EXECUTE=True)
    with app.test_request_context():
        html = render_template_string(
            "{% set page = config|tooldiscovery_page %}<title>{{ page.title }}</title>"
            "<script>var s = {{ page|tojson }};</script>")
    assert "<script>alert(1)" not in html
    assert "&lt;/script&gt;" in html
    assert '"allow_execute": true' in html
    assert "\\u003c/script\\u003e" in html


@pytest.mark.parametrize("value, expected", [
    ("false", False), ("False", False), ("0", False), ("no", False), ("off", False), ("", False),
    ("true", True), ("1", True), ("yes", True), ("ON", True), (True, True), (0, False),
])
def test_boolean_settings_read_the_usual_strings(make_app, value, expected) -> None:
    app = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=value)
    with app.app_context():
        assert ExplorerSettings.of(app.extensions["tooldiscovery"].settings).allow_execute is expected
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="one")
    app = make_app(d, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=value)
    status = app.test_client().post("/explorer/tools/one/call", json={}).status_code
    assert status == (200 if expected else 403)


@pytest.mark.parametrize("name, value, fragment", [
    ("ALLOW_EXECUTE", "maybe", "boolean"),
    ("ALLOW_EXECUTE", 2, "boolean"),
    ("MAX_CONTENT_LENGTH", "lots", "whole number"),
    ("MAX_CONTENT_LENGTH", 0, "at least 1"),
    ("MAX_CONCURRENT_CALLS", -1, "at least 0"),
    ("MCP_PAGE_SIZE", 2.5, "whole number"),
    ("TDP_WIRE", "xml", "spec, protojson"),
    ("OPAL_URL_PREFIX", "opal", "start with '/'"),
    ("OXP_JWT_CLAIMS", ["ver"], "dict"),
    ("CATEGORIES", [{"id": "x"}], "'id' and 'name'"),
    ("DIALECTS", ["opal", "soap"], "soap"),
])
def test_a_wrong_setting_fails_at_init_app_naming_the_key(name, value, fragment) -> None:
    app = Flask("x")
    app.config["TOOLDISCOVERY_" + name] = value
    with pytest.raises(SettingsError) as info:
        ToolDiscovery().init_app(app)
    assert "TOOLDISCOVERY_" + name in str(info.value) or name == "DIALECTS"
    assert fragment in str(info.value)
    assert "tooldiscovery" not in app.extensions


def test_numbers_from_strings_and_unknown_keys_warned_once(caplog) -> None:
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_MAX_CONTENT_LENGTH="2048", TOOLDISCOVERY_DIALECTS="opal",
                      TOOLDISCOVERY_ALOW_EXECUTE=True, TESTING=True)
    with caplog.at_level("WARNING", logger="flask_tooldiscovery"):
        ToolDiscovery().init_app(app)
    with app.app_context():
        assert app.extensions["tooldiscovery"].settings.max_content_length == 2048
    warned = [r for r in caplog.records if "TOOLDISCOVERY_ALOW_EXECUTE" in r.getMessage()]
    assert len(warned) == 1


def test_settings_are_frozen(make_app) -> None:
    app = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=[])
    with app.app_context():
        settings = app.extensions["tooldiscovery"].settings
        with pytest.raises(AttributeError):
            settings.max_content_length = 1
        with pytest.raises(AttributeError):
            ExplorerSettings.of(settings).allow_execute = True
        with pytest.raises(TypeError):
            settings.blocks[ExplorerSettings] = None
        app.config["TOOLDISCOVERY_ALLOW_EXECUTE"] = True  # read once, at init_app
        app.config["TOOLDISCOVERY_MAX_CONTENT_LENGTH"] = 1
        settings = app.extensions["tooldiscovery"].settings
        assert ExplorerSettings.of(settings).allow_execute is False
        assert settings.max_content_length == 1024 * 1024


def test_jwt_setting_without_pyjwt_fails_at_init_app(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)  # import jwt now raises ImportError
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["oxp"], TOOLDISCOVERY_OXP_JWT_SECRET="s" * 40)
    with pytest.raises(RuntimeError, match=r"pip install 'flask-tooldiscovery\[jwt\]'"):
        ToolDiscovery().init_app(app)
