"""init_app: config defaults, double registration, dialect mounting, several apps."""

from __future__ import annotations

import pytest
from flask import Blueprint, Flask, jsonify, render_template_string

from flask_tooldiscovery import ToolDiscovery, register_dialect
from flask_tooldiscovery.config import DEFAULTS
from flask_tooldiscovery.dialects import DIALECTS


def test_config_defaults_are_set_without_overriding(make_app) -> None:
    d = ToolDiscovery()
    app = make_app(d, TOOLDISCOVERY_TITLE="Mine", TOOLDISCOVERY_DIALECTS=[])
    for key in DEFAULTS:
        assert key in app.config
    assert app.config["TOOLDISCOVERY_TITLE"] == "Mine"
    assert app.config["TOOLDISCOVERY_ALLOW_EXECUTE"] is False
    assert app.config["TOOLDISCOVERY_SERVER_NAME"] == "testapp"
    assert app.extensions["tooldiscovery"] is d
    assert all(k.startswith("TOOLDISCOVERY_") for k in DEFAULTS)


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


@pytest.fixture
def echo_dialect():
    def make_blueprint(ext):
        bp = Blueprint("tooldiscovery_echo", __name__)

        @bp.get("/names")
        def names():
            return jsonify([t.name for t in ext.tools()])

        return bp

    register_dialect("echo", make_blueprint, default_prefix="/echo")
    yield
    DIALECTS.pop("echo", None)


def test_dialect_table_mounts_a_dialect_defined_here(echo_dialect) -> None:
    d = ToolDiscovery()

    @d.tool
    def ping() -> str:
        return "pong"

    app = Flask("x")
    app.config["TOOLDISCOVERY_DIALECTS"] = ["echo"]
    d.init_app(app)
    assert app.test_client().get("/echo/names").json == ["ping"]

    other = Flask("y")
    other.config.update(TOOLDISCOVERY_DIALECTS=["echo"], TOOLDISCOVERY_ECHO_URL_PREFIX="/elsewhere")
    d2 = ToolDiscovery(tools=[{"name": "provided", "description": "", "inputSchema": {}}])
    d2.init_app(other)
    assert other.test_client().get("/elsewhere/names").json == ["provided"]
    assert other.test_client().get("/echo/names").status_code == 404


def test_two_apps_one_extension_different_config(echo_dialect) -> None:
    d = ToolDiscovery()

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
    with a.app_context():
        assert d.setting("TITLE") == "A"
    with b.app_context():
        assert d.setting("TITLE") == "B"


def test_template_filter_injects_title_and_flag(make_app) -> None:
    app = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=[],
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
