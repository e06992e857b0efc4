"""Through a tunnel or a proxy the app sees a host name it was not told to serve: the 421 answer
says which setting to change, without repeating the host, and the WARNING log line names the host
(escaped) and ``TOOLDISCOVERY_ALLOWED_HOSTS``."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from .conftest import live_server

TUNNEL = "words-in-a-row.trycloudflare.com"
LONG = ".".join(["a" * 60] * 8)  # 487 characters, labels of 60
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def _app(**config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    app = Flask("tunnelled")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": ["mcp", "oxp"], **config})
    discovery.init_app(app)
    return app


def _refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("flask_tooldiscovery") and "refused" in r.getMessage()]


def test_the_tunnels_host_is_refused_naming_the_setting_and_served_once_listed(
        caplog: pytest.LogCaptureFixture) -> None:
    refused = _app().test_client()
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        answer = refused.post("/mcp", json=LIST, headers={**MCP_HEADERS, "Host": TUNNEL})
    assert answer.status_code == 421
    text = answer.get_data(as_text=True)
    assert "TOOLDISCOVERY_ALLOWED_HOSTS" in text and TUNNEL not in text
    [record] = _refusals(caplog)
    assert record.levelno == logging.WARNING
    assert f"host '{TUNNEL}' is not in TOOLDISCOVERY_ALLOWED_HOSTS" in record.getMessage()

    listed = _app(TOOLDISCOVERY_ALLOWED_HOSTS=["localhost", "127.0.0.1", TUNNEL]).test_client()
    served = listed.post("/mcp", json=LIST, headers={**MCP_HEADERS, "Host": TUNNEL})
    assert served.status_code == 200 and served.get_json()["result"]["tools"][0]["name"] == "ping"


def test_every_dialect_says_it_in_its_own_error_shape() -> None:
    answer = _app().test_client().get("/oxp/tools", headers={"Host": TUNNEL})
    assert answer.status_code == 421 and "TOOLDISCOVERY_ALLOWED_HOSTS" in answer.get_data(as_text=True)


def test_a_hostile_host_is_neither_echoed_nor_written_raw_to_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """Werkzeug blanks a Host with characters no host name has; a long one is cut in the log."""
    client = _app().test_client()
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        injected = client.get("/oxp/tools", environ_overrides={"HTTP_HOST": "evil.example\r\nX-Injected: 1"})
        long = client.get("/oxp/tools", environ_overrides={"HTTP_HOST": LONG})
    assert injected.status_code == long.status_code == 421
    assert "evil" not in injected.get_data(as_text=True) and "aaaa" not in long.get_data(as_text=True)
    first, second = (r.getMessage() for r in _refusals(caplog))
    assert "X-Injected" not in first and "\n" not in first and "host '' is not in TOOLDISCOVERY_ALLOWED_HOSTS" in first
    assert f"host {LONG[:200]!r} is not in" in second and len(second) < 500


def test_over_http_the_answer_and_the_log_line_are_the_same(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"), live_server(_app()) as base:
        answer = httpx.post(f"{base}/mcp", json=LIST, headers={**MCP_HEADERS, "Host": TUNNEL}, timeout=10)
    assert answer.status_code == 421
    assert "TOOLDISCOVERY_ALLOWED_HOSTS" in answer.text and TUNNEL not in answer.text
    assert any(TUNNEL in r.getMessage() and "TOOLDISCOVERY_ALLOWED_HOSTS" in r.getMessage() for r in _refusals(caplog))
