"""Golden wire-output cases: the apps, the fixed list of requests, and the shared helpers.

``tests/golden/record.py`` sends every case in :data:`CASES` through Flask's test client and
writes ``tests/golden/<dialect>.json``; ``tests/test_golden.py`` replays the same cases and
compares status, the headers in :data:`RECORDED_HEADERS` and the exact body text.

Each case runs against a fresh app (and a fresh :class:`ToolDiscovery`), so no case depends on
another one or on their order.

Only values that change on every request are normalized (see :func:`normalize_body`); the rest of
the body text, key order and spacing included, must stay byte-for-byte the same.
"""

from __future__ import annotations

import contextlib
import enum
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from flask import Flask, Request

from flask_tooldiscovery import ToolDiscovery, ToolError

GOLDEN_DIR = Path(__file__).resolve().parent
DIALECTS = ("opal", "oxp", "tdp", "explorer", "mcp")

# -- the tools -------------------------------------------------------------------------------


class Style(enum.StrEnum):
    """How ``format_text`` writes its text."""

    UPPER = "upper"
    LOWER = "lower"
    TITLE = "title"


class Stats(TypedDict):
    """Summary statistics of a list of numbers."""

    count: int
    total: float
    mean: float


def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.

    Returns:
        The sum of a and b.
    """
    return a + b


async def get_weather(city: str, units: Literal["metric", "imperial"] = "metric") -> dict:
    """Fetch the current weather for a city.

    Args:
        city: The city name.
        units: The unit system of the temperature.
    """
    if city == "Atlantis":
        raise ToolError("Unknown city: Atlantis")
    return {"city": city, "temperature": 21.5 if units == "metric" else 70.7, "units": units}


def format_text(text: str, style: Style, repeat: int = 1, separator: Literal[" ", "-", "|"] = " ") -> str:
    """Format a text in a style, repeated.

    Args:
        text: The text to format.
        style: The style to apply.
        repeat: How many times to repeat the text.
        separator: What goes between repetitions.
    """
    styled = {Style.UPPER: text.upper(), Style.LOWER: text.lower(), Style.TITLE: text.title()}[Style(style)]
    return separator.join([styled] * repeat)


def stats(values: list[float]) -> Stats:
    """Summarize a list of numbers.

    Args:
        values: The numbers to summarize.

    Returns:
        Count, total and mean of the values.
    """
    total = float(sum(values))
    return {"count": len(values), "total": total, "mean": total / len(values) if values else 0.0}


def flaky_lookup(key: str) -> str:
    """Look a key up in a service that is down.

    Args:
        key: The key to look up.
    """
    raise ToolError("The lookup service is temporarily unavailable.", can_retry=True,
                    developer_message="dev detail", additional_prompt_content="hint")


def crash(reason: str = "none") -> str:
    """A tool that fails unexpectedly.

    Args:
        reason: Ignored.
    """
    raise RuntimeError("secret internals")


def greet_v1(name: str) -> str:
    """Greet someone (version 1).

    Args:
        name: Who to greet.
    """
    return f"Hello, {name}!"


def greet_v2(name: str, excited: bool = False) -> str:
    """Greet someone (version 2).

    Args:
        name: Who to greet.
        excited: Add an exclamation.
    """
    return f"Hello, {name}{'!!!' if excited else '.'}"


def build_discovery() -> ToolDiscovery:
    """A fresh extension with the golden tools and categories."""
    discovery = ToolDiscovery()
    discovery.category("math", "Math", description="Arithmetic and statistics.", icon="calculator",
                       display_order=1)
    discovery.category("text", "Text", description="Text formatting and greetings.", display_order=2)
    discovery.category("web", "Web", icon="globe")
    discovery.tool(annotations={"readOnlyHint": True}, category="math", tags=["math", "arithmetic"],
                   examples=[{"description": "Add two and three", "input": {"a": 2, "b": 3},
                              "expected_output": 5}])(add)
    discovery.tool(category="web", tags=["weather"],
                   annotations={"readOnlyHint": True, "openWorldHint": True, "title": "Weather"})(get_weather)
    discovery.tool(category="text", annotations={"idempotentHint": True})(format_text)
    discovery.tool(category="math", title="Statistics")(stats)
    discovery.tool(category="web", annotations={"readOnlyHint": False, "openWorldHint": True})(flaky_lookup)
    discovery.tool(annotations={"destructiveHint": True})(crash)
    discovery.tool(name="greet", version="1.0.0", category="text")(greet_v1)
    discovery.tool(name="greet", version="2.0.0", category="text")(greet_v2)
    return discovery


# -- the apps --------------------------------------------------------------------------------

OPAL_TOKEN = "opal-golden-token"
OXP_API_KEY = "oxp-golden-api-key"
OXP_JWT_SECRET = "oxp-golden-jwt-secret-0123456789abcdef"
MCP_TOKEN = "mcp-golden-token"
EXPLORER_KEY = "explorer-golden-key"
#: HS256 over OXP_JWT_SECRET, claims {"sub": "golden", "iat": 1700000000, "exp": 4102444800} (2100-01-01).
OXP_JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJnb2xkZW4iLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0."
           "Ku5EPWNoeQSYy0nrXa0gzLgAENpkuyC4ffF0jncpeQI")
#: The same claims signed with another secret.
OXP_JWT_WRONG = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
                 "eyJzdWIiOiJnb2xkZW4iLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0."
                 "pjoWfhOtWAGjXBidGbfRo9qa5Ku-jlvkm9h6rE6PJgo")

BASE_CONFIG: dict[str, Any] = {
    "TESTING": True,
    "TOOLDISCOVERY_ALLOW_EXECUTE": True,
    # The five dialects the golden files were recorded over (newer ones have tests of their own).
    "TOOLDISCOVERY_DIALECTS": ["explorer", "opal", "oxp", "tdp", "mcp"],
    "TOOLDISCOVERY_SERVER_NAME": "golden-tools",
    "TOOLDISCOVERY_SERVER_VERSION": "2.1.0",
    "TOOLDISCOVERY_SERVER_DESCRIPTION": "Golden test tools",
}


def _make(config: dict[str, Any], discovery: ToolDiscovery | None = None) -> Flask:
    app = Flask("goldenapp")
    app.config.update(BASE_CONFIG)
    app.config.update(config)
    (discovery or build_discovery()).init_app(app)
    return app


def explorer_hook(request: Request) -> contextlib.AbstractContextManager[None]:
    """The auth app's explorer hook: ``X-Explorer-Key`` must be :data:`EXPLORER_KEY`."""
    if request.headers.get("X-Explorer-Key") != EXPLORER_KEY:
        raise PermissionError("bad explorer key")
    return contextlib.nullcontext()


def build_main_app() -> Flask:
    """Every dialect, no credentials, execution allowed."""
    return _make({})


def build_auth_app() -> Flask:
    """Every dialect with its credentials set (and an explorer auth hook)."""
    discovery = build_discovery()
    discovery.auth_hook(explorer_hook)
    return _make({
        "TOOLDISCOVERY_OPAL_BEARER_TOKEN": OPAL_TOKEN,
        "TOOLDISCOVERY_OXP_API_KEY": OXP_API_KEY,
        "TOOLDISCOVERY_OXP_JWT_SECRET": OXP_JWT_SECRET,
        "TOOLDISCOVERY_MCP_BEARER_TOKEN": MCP_TOKEN,
        "TOOLDISCOVERY_OPEN_DIALECTS": ["tdp"],  # TDP has no credentials of its own: open on purpose
    }, discovery)


def build_protojson_app() -> Flask:
    """TDP in its protojson wire form."""
    return _make({"TOOLDISCOVERY_TDP_WIRE": "protojson"})


APPS: dict[str, Callable[[], Flask]] = {
    "main": build_main_app,
    "auth": build_auth_app,
    "protojson": build_protojson_app,
}

# -- the cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One request: sent as it is, to a fresh app of kind ``app``."""

    dialect: str
    name: str
    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    body: str | None = None
    app: str = "main"
    #: The ``Allow`` header is werkzeug's own (Flask's automatic OPTIONS answer, its routing 405),
    #: built from a set: its order changes with PYTHONHASHSEED, so its methods are compared sorted.
    allow_unordered: bool = False

    @property
    def id(self) -> str:
        return f"{self.dialect}/{self.name}"

    def request_record(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": dict(self.headers), "body": self.body,
                "app": self.app}


JSON = (("Content-Type", "application/json"),)
CASES: list[Case] = []


def _add(dialect: str, name: str, method: str, path: str, *, body: Any = None, raw: str | None = None,
         headers: dict[str, str] | None = None, app: str = "main", json_type: bool | None = None,
         allow_unordered: bool = False) -> None:
    """Register a case; ``body`` is sent as JSON text, ``raw`` as it is. POSTs with a body carry
    ``Content-Type: application/json`` unless ``json_type`` is False."""
    text = json.dumps(body) if body is not None else raw
    hdrs: list[tuple[str, str]] = []
    if json_type or (json_type is None and method == "POST"):
        hdrs.extend(JSON)
    hdrs.extend((headers or {}).items())
    CASES.append(Case(dialect, name, method, path, tuple(hdrs), text, app, allow_unordered))


# ---- opal ----
OP = "opal"
_add(OP, "discovery", "GET", "/opal/discovery")
_add(OP, "discovery_trailing_slash", "GET", "/opal/discovery/")
_add(OP, "preflight", "OPTIONS", "/opal/tools/add",
     headers={"Origin": "https://opal.example", "Access-Control-Request-Method": "POST"}, allow_unordered=True)
_add(OP, "call_add_parameters", "POST", "/opal/tools/add", body={"parameters": {"a": 2, "b": 3}})
_add(OP, "call_add_bare_strings", "POST", "/opal/tools/add", body={"a": "2.5", "b": "4"})
_add(OP, "call_under_discovery", "POST", "/opal/discovery/tools/add", body={"parameters": {"a": 1, "b": 1}})
_add(OP, "call_async", "POST", "/opal/tools/get_weather",
     body={"parameters": {"city": "Oslo", "units": "imperial"}, "environment": {"execution_mode": "headless"}})
_add(OP, "call_typed_dict", "POST", "/opal/tools/stats", body={"parameters": {"values": [1, 2, 3.5]}})
_add(OP, "call_enum_default", "POST", "/opal/tools/format_text",
     body={"parameters": {"text": "hello", "style": "upper", "repeat": "2"}})
_add(OP, "call_greet_latest", "POST", "/opal/tools/greet", body={"parameters": {"name": "Ada", "excited": True}})
_add(OP, "call_tool_error", "POST", "/opal/tools/flaky_lookup", body={"parameters": {"key": "k"}})
_add(OP, "call_async_tool_error", "POST", "/opal/tools/get_weather", body={"parameters": {"city": "Atlantis"}})
_add(OP, "call_unexpected_failure", "POST", "/opal/tools/crash", body={"parameters": {}})
_add(OP, "call_invalid_arguments", "POST", "/opal/tools/add", body={"parameters": {"a": "two"}})
_add(OP, "call_invalid_enum", "POST", "/opal/tools/format_text", body={"parameters": {"text": "x", "style": "bold"}})
_add(OP, "call_unknown_tool", "POST", "/opal/tools/nope", body={"parameters": {}})
_add(OP, "call_malformed_json", "POST", "/opal/tools/add", raw='{"parameters": {"a": 1,')
_add(OP, "call_body_not_object", "POST", "/opal/tools/add", body=[1, 2])
_add(OP, "call_wrong_method", "GET", "/opal/tools/add")
_add(OP, "discovery_wrong_method", "POST", "/opal/discovery", body={})
_add(OP, "auth_discovery_is_public", "GET", "/opal/discovery", app="auth")
_add(OP, "auth_missing_token", "POST", "/opal/tools/add", body={"parameters": {"a": 1, "b": 2}}, app="auth")
_add(OP, "auth_wrong_token", "POST", "/opal/tools/add", body={"parameters": {"a": 1, "b": 2}}, app="auth",
     headers={"Authorization": "Bearer wrong-token"})
_add(OP, "auth_correct_token", "POST", "/opal/tools/add", body={"parameters": {"a": 1, "b": 2}}, app="auth",
     headers={"Authorization": f"Bearer {OPAL_TOKEN}"})

# ---- oxp ----
X = "oxp"
URN = "urn:oxp:1.0"


def _oxp_call(request: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": URN, "request": request}


_add(X, "health", "GET", "/oxp/health")
_add(X, "list_tools", "GET", "/oxp/tools")
_add(X, "call_add", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-1", "tool_id": "GoldenTools.add", "input": {"a": 2, "b": 3}}))
_add(X, "call_flat_form", "POST", "/oxp/tools/call",
     body={"call_id": "golden-call-2", "trace_id": "golden-trace-2", "tool_id": "GoldenTools.add@1.0.0",
           "input": {"a": 0.5, "b": 0.25}})
_add(X, "call_generated_call_id", "POST", "/oxp/tools/call",
     body=_oxp_call({"tool_id": "GoldenTools.format_text", "input": {"text": "hi", "style": "title", "repeat": 3,
                                                                     "separator": "-"}}))
_add(X, "call_async", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-3", "tool_id": "GoldenTools.get_weather", "input": {"city": "Oslo"}}))
_add(X, "call_typed_dict", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-4", "tool_id": "GoldenTools.stats", "input": {"values": [2, 4]}}))
_add(X, "call_version_exact", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-5", "tool_id": "GoldenTools.greet@1.0.0", "input": {"name": "Ada"}}))
_add(X, "call_version_major", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-6", "tool_id": "GoldenTools.greet@2", "input": {"name": "Ada"}}))
_add(X, "call_version_latest", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-7", "tool_id": "GoldenTools.greet",
                     "input": {"name": "Ada", "excited": True}}))
_add(X, "call_tool_error", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-8", "tool_id": "GoldenTools.flaky_lookup", "input": {"key": "k"}}))
_add(X, "call_unexpected_failure", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-9", "tool_id": "GoldenTools.crash", "input": {}}))
_add(X, "call_invalid_arguments", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-10", "tool_id": "GoldenTools.add", "input": {"a": "two", "c": 1}}))
_add(X, "call_unknown_tool", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-11", "tool_id": "GoldenTools.nope", "input": {}}))
_add(X, "call_unknown_version", "POST", "/oxp/tools/call",
     body=_oxp_call({"call_id": "golden-call-12", "tool_id": "GoldenTools.greet@3.0.0", "input": {"name": "A"}}))
_add(X, "call_malformed_request", "POST", "/oxp/tools/call",
     body=_oxp_call({"tool_id": "not an id", "extra": 1}))
_add(X, "call_malformed_json", "POST", "/oxp/tools/call", raw='{"request": {')
_add(X, "call_empty_body", "POST", "/oxp/tools/call", raw="")
_add(X, "call_unsupported_schema", "POST", "/oxp/tools/call",
     body={"$schema": "urn:oxp:2.0", "request": {"tool_id": "GoldenTools.add"}})
_add(X, "call_wrong_method", "GET", "/oxp/tools/call")
_add(X, "health_wrong_method", "POST", "/oxp/health", body={})
_add(X, "auth_health_is_public", "GET", "/oxp/health", app="auth")
_add(X, "auth_list_missing_credentials", "GET", "/oxp/tools", app="auth")
_add(X, "auth_list_wrong_api_key", "GET", "/oxp/tools", app="auth", headers={"OXP-API-Key": "wrong-key"})
_add(X, "auth_list_correct_api_key", "GET", "/oxp/tools", app="auth", headers={"OXP-API-Key": OXP_API_KEY})
_add(X, "auth_call_wrong_jwt", "POST", "/oxp/tools/call", app="auth",
     body=_oxp_call({"call_id": "golden-call-13", "tool_id": "GoldenTools.add", "input": {"a": 1, "b": 2}}),
     headers={"Authorization": f"Bearer {OXP_JWT_WRONG}"})
_add(X, "auth_call_correct_jwt", "POST", "/oxp/tools/call", app="auth",
     body=_oxp_call({"call_id": "golden-call-14", "tool_id": "GoldenTools.add", "input": {"a": 1, "b": 2}}),
     headers={"Authorization": f"Bearer {OXP_JWT}"})

# ---- tdp ----
T = "tdp"
_add(T, "manifest", "GET", "/api/v1/tools")
_add(T, "tool_add", "GET", "/api/v1/tools/add")
_add(T, "tool_two_versions", "GET", "/api/v1/tools/greet")
_add(T, "tool_unknown", "GET", "/api/v1/tools/nope")
_add(T, "tool_name_missing", "GET", "/api/v1/tools/")
_add(T, "manifest_options", "OPTIONS", "/api/v1/tools")
_add(T, "execute_add", "POST", "/api/v1/tools/execute", body={"tool_name": "add", "arguments": {"a": 2, "b": 3}})
_add(T, "execute_string_arguments", "POST", "/api/v1/tools/execute",
     body={"tool_name": "format_text", "arguments": {"text": "Hi", "style": "lower", "repeat": "2"}})
_add(T, "execute_async_dict", "POST", "/api/v1/tools/execute",
     body={"tool_name": "get_weather", "arguments": {"city": "Lima"}})
_add(T, "execute_typed_dict", "POST", "/api/v1/tools/execute",
     body={"tool_name": "stats", "arguments": {"values": [1, 2]}})
_add(T, "execute_tool_error", "POST", "/api/v1/tools/execute",
     body={"tool_name": "flaky_lookup", "arguments": {"key": "k"}})
_add(T, "execute_unexpected_failure", "POST", "/api/v1/tools/execute", body={"tool_name": "crash"})
_add(T, "execute_invalid_arguments", "POST", "/api/v1/tools/execute",
     body={"tool_name": "add", "arguments": {"a": 1}})
_add(T, "execute_unknown_tool", "POST", "/api/v1/tools/execute", body={"tool_name": "nope", "arguments": {}})
_add(T, "execute_malformed_json", "POST", "/api/v1/tools/execute", raw="{tool_name: add}")
_add(T, "execute_missing_tool_name", "POST", "/api/v1/tools/execute", body={"arguments": {}})
_add(T, "execute_wrong_method", "DELETE", "/api/v1/tools/execute")
_add(T, "execute_get_method", "GET", "/api/v1/tools/execute")
_add(T, "manifest_wrong_method", "POST", "/api/v1/tools", body={})
_add(T, "protojson_manifest", "GET", "/api/v1/tools", app="protojson")
_add(T, "protojson_tool_add", "GET", "/api/v1/tools/add", app="protojson")
_add(T, "protojson_tool_defaults", "GET", "/api/v1/tools/format_text", app="protojson")

# ---- explorer ----
E = "explorer"
_add(E, "page", "GET", "/explorer/")
_add(E, "list_tools", "GET", "/explorer/tools")
_add(E, "tool_add", "GET", "/explorer/tools/add")
_add(E, "tool_with_output_schema", "GET", "/explorer/tools/stats")
_add(E, "tool_unknown", "GET", "/explorer/tools/nope")
_add(E, "call_add", "POST", "/explorer/tools/add/call", body={"a": 2, "b": 3},
     headers={"X-Trace-Id": "golden-trace-1"})
_add(E, "call_generated_trace_id", "POST", "/explorer/tools/greet/call", body={"name": "Ada"})
_add(E, "call_async", "POST", "/explorer/tools/get_weather/call", body={"city": "Oslo"},
     headers={"X-Trace-Id": "golden-trace-2"})
_add(E, "call_typed_dict", "POST", "/explorer/tools/stats/call", body={"values": [1.5, 2.5]},
     headers={"X-Trace-Id": "golden-trace-3"})
_add(E, "call_tool_error", "POST", "/explorer/tools/flaky_lookup/call", body={"key": "k"},
     headers={"X-Trace-Id": "golden-trace-4"})
_add(E, "call_unexpected_failure", "POST", "/explorer/tools/crash/call", body={},
     headers={"X-Trace-Id": "golden-trace-5"})
_add(E, "call_invalid_arguments", "POST", "/explorer/tools/format_text/call",
     body={"text": 3, "style": "bold", "repeat": 1.5}, headers={"X-Trace-Id": "golden-trace-6"})
_add(E, "call_unknown_tool", "POST", "/explorer/tools/nope/call", body={})
_add(E, "call_malformed_json", "POST", "/explorer/tools/add/call", raw='{"a": 1,,}')
_add(E, "call_empty_body", "POST", "/explorer/tools/add/call", raw="", headers={"X-Trace-Id": "golden-trace-7"})
_add(E, "call_wrong_method", "PUT", "/explorer/tools/add/call", body={}, allow_unordered=True)
_add(E, "validate_valid", "POST", "/explorer/tools/add/validate", body={"a": 1, "b": 2})
_add(E, "validate_invalid", "POST", "/explorer/tools/format_text/validate",
     body={"style": "bold", "repeat": "x", "extra": True})
_add(E, "validate_malformed_json", "POST", "/explorer/tools/add/validate", raw="[1, 2")
_add(E, "auth_missing_key", "POST", "/explorer/tools/add/call", body={"a": 1, "b": 2}, app="auth")
_add(E, "auth_wrong_key", "POST", "/explorer/tools/add/call", body={"a": 1, "b": 2}, app="auth",
     headers={"X-Explorer-Key": "wrong"})
_add(E, "auth_correct_key", "POST", "/explorer/tools/add/call", body={"a": 1, "b": 2}, app="auth",
     headers={"X-Explorer-Key": EXPLORER_KEY, "X-Trace-Id": "golden-trace-8"})

# ---- mcp ----
M = "mcp"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def _rpc(method: str, params: dict[str, Any] | None = None, id_: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


_INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
         "clientInfo": {"name": "golden-client", "version": "1.0.0"}}
_add(M, "initialize", "POST", "/mcp", body=_rpc("initialize", _INIT))
_add(M, "initialize_unknown_version", "POST", "/mcp",
     body=_rpc("initialize", {**_INIT, "protocolVersion": "2099-01-01"}, id_="init-2"))
_add(M, "initialized_notification", "POST", "/mcp",
     body={"jsonrpc": "2.0", "method": "notifications/initialized"})
_add(M, "ping", "POST", "/mcp", body=_rpc("ping", id_=7), headers={"MCP-Protocol-Version": "2025-06-18"})
_add(M, "tools_list", "POST", "/mcp", body=_rpc("tools/list", {}, id_=2))
_add(M, "server_discover_2026", "POST", "/mcp", body=_rpc("server/discover", {"_meta": MODERN}, id_=3))
_add(M, "tools_list_2026", "POST", "/mcp", body=_rpc("tools/list", {"_meta": MODERN}, id_=4))
_add(M, "initialize_in_2026_refused", "POST", "/mcp", body=_rpc("initialize", {**_INIT, "_meta": MODERN}, id_=5))
_add(M, "unsupported_modern_version", "POST", "/mcp",
     body=_rpc("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2030-01-01"}}, id_=6))
_add(M, "call_add", "POST", "/mcp", body=_rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, id_=10))
_add(M, "call_add_2026", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": MODERN}, id_=11))
# 2026-07-28 as the official SDK 2.x sends it: the full envelope and the routing headers.
FULL = {**MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def _modern(method: str, version: str = "2026-07-28", name: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    return {**headers, "Mcp-Name": name} if name else headers


_add(M, "server_discover_2026_sdk", "POST", "/mcp", body=_rpc("server/discover", {"_meta": FULL}, id_=30),
     headers=_modern("server/discover"))
_add(M, "tools_list_2026_sdk", "POST", "/mcp", body=_rpc("tools/list", {"_meta": FULL}, id_=31),
     headers=_modern("tools/list"))
_add(M, "call_add_2026_sdk", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": FULL}, id_=32),
     headers=_modern("tools/call", name="add"))
_add(M, "initialize_in_2026_sdk_refused", "POST", "/mcp",
     body=_rpc("initialize", {**_INIT, "_meta": FULL}, id_=33), headers=_modern("initialize"))
_add(M, "unsupported_modern_version_sdk", "POST", "/mcp",
     body=_rpc("tools/list", {"_meta": {**FULL, "io.modelcontextprotocol/protocolVersion": "2030-01-01"}}, id_=34),
     headers=_modern("tools/list", "2030-01-01"))
_add(M, "routing_header_mismatch", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": FULL}, id_=35),
     headers=_modern("tools/call", name="crash"))
_add(M, "call_async", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "get_weather", "arguments": {"city": "Oslo"}}, id_=12))
_add(M, "call_typed_dict", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "stats", "arguments": {"values": [3, 4, 5]}}, id_=13))
_add(M, "call_string_result", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "format_text", "arguments": {"text": "ab", "style": "upper", "repeat": 2,
                                                                   "separator": "|"}}, id_=14))
_add(M, "call_tool_error", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "flaky_lookup", "arguments": {"key": "k"}}, id_=15))
_add(M, "call_unexpected_failure", "POST", "/mcp", body=_rpc("tools/call", {"name": "crash", "arguments": {}}, id_=16))
_add(M, "call_invalid_arguments", "POST", "/mcp",
     body=_rpc("tools/call", {"name": "add", "arguments": {"a": "x"}}, id_=17))
_add(M, "call_unknown_tool", "POST", "/mcp", body=_rpc("tools/call", {"name": "nope", "arguments": {}}, id_=18))
_add(M, "unknown_method", "POST", "/mcp", body=_rpc("resources/list", {}, id_=19))
_add(M, "malformed_json", "POST", "/mcp", raw='{"jsonrpc": "2.0", "id": 1, "method": ')
_add(M, "batch", "POST", "/mcp", body=[_rpc("ping", id_=20), {"jsonrpc": "2.0", "method": "notifications/x"},
                                       _rpc("tools/call", {"name": "greet", "arguments": {"name": "B"}}, id_=21)])
_add(M, "wrong_http_method", "GET", "/mcp")
_add(M, "bad_protocol_version_header", "POST", "/mcp", body=_rpc("ping", id_=22),
     headers={"MCP-Protocol-Version": "1999-01-01"})
_add(M, "cors_allowed_origin", "POST", "/mcp", body=_rpc("ping", id_=23), headers={"Origin": "http://localhost:6274"})
_add(M, "forbidden_origin", "POST", "/mcp", body=_rpc("ping", id_=24), headers={"Origin": "https://evil.example"})
_add(M, "auth_missing_token", "POST", "/mcp", body=_rpc("tools/list", {}, id_=30), app="auth")
_add(M, "auth_wrong_token", "POST", "/mcp", body=_rpc("tools/list", {}, id_=31), app="auth",
     headers={"Authorization": "Bearer wrong-token"})
_add(M, "auth_correct_token", "POST", "/mcp", body=_rpc("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}},
                                                       id_=32), app="auth",
     headers={"Authorization": f"Bearer {MCP_TOKEN}"})


def cases_for(dialect: str) -> list[Case]:
    return [c for c in CASES if c.dialect == dialect]


# -- sending and normalizing -------------------------------------------------------------------

#: Response headers that are recorded and compared (``Access-Control-*`` by prefix).
RECORDED_HEADERS = ("Content-Type", "WWW-Authenticate", "Allow", "Cache-Control")
HEADER_PREFIXES = ("Access-Control-",)

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
#: A generated trace id: 32 lower-case hex digits (the W3C traceparent trace-id form).
TRACE_ID = r"[0-9a-f]{32}"
TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"
NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
#: (key, the shape of its volatile value, placeholder). Only these keys are normalized, and only
#: when their value has that shape: a client-chosen call id, a different timestamp format or a
#: duration that is no longer a number is compared as it is.
VOLATILE: tuple[tuple[str, str, str], ...] = (
    ("generated_at", f'"{TIMESTAMP}"', '"<generated_at>"'),
    ("generatedAt", f'"{TIMESTAMP}"', '"<generated_at>"'),
    ("duration", NUMBER, '"<duration>"'),
    ("call_id", f'"{UUID4}"', '"<uuid4>"'),
    ("trace_id", f'"{TRACE_ID}"', '"<trace-id>"'),
    ("_trace_id", f'"{TRACE_ID}"', '"<trace-id>"'),
)
_PATTERNS = [(key, re.compile(r'("' + re.escape(key) + r'"\s*:\s*)' + shape), placeholder)
             for key, shape, placeholder in VOLATILE]


def normalize_body(text: str) -> tuple[str, list[str]]:
    """``text`` with volatile values replaced by placeholders, and the keys that were replaced.

    Works on the text itself (a key, then its value) so that everything else, key order and
    spacing included, is kept byte for byte; JSON bodies only. The result is then parsed to check
    that no volatile value of those keys is left anywhere (say, after a change of spacing the
    pattern did not foresee).
    """
    try:
        json.loads(text)
    except ValueError:
        return text, []
    replaced: list[str] = []
    for key, pattern, placeholder in _PATTERNS:
        text, count = pattern.subn(lambda m, p=placeholder: m.group(1) + p, text)
        if count:
            replaced.append(key)
    leftovers = list(_volatile_leftovers(json.loads(text)))
    if leftovers:
        raise AssertionError(f"volatile values left after normalization: {leftovers}")
    return text, replaced


def _volatile_leftovers(node: Any, path: str = "$") -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            for vkey, shape, _ in VOLATILE:
                if key == vkey and re.fullmatch(shape, json.dumps(value)):
                    yield f"{path}.{key}"
            yield from _volatile_leftovers(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _volatile_leftovers(value, f"{path}[{i}]")


def recorded_headers(headers: Any) -> dict[str, str]:
    """The response headers that are compared, in a fixed order (name as :data:`RECORDED_HEADERS`
    spells it; ``Access-Control-*`` sorted by name)."""
    out: dict[str, str] = {}
    for name in RECORDED_HEADERS:
        values = headers.getlist(name)
        if values:
            out[name] = ", ".join(values) if len(values) > 1 else values[0]
    prefixes = tuple(p.lower() for p in HEADER_PREFIXES)
    extra = sorted((k, v) for k, v in headers.items() if k.lower().startswith(prefixes))
    for name, value in extra:
        out[name] = value
    return out


@dataclass
class Result:
    status: int
    headers: dict[str, str]
    body: str
    normalized: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "headers": self.headers, "body": self.body}
        if self.normalized:
            out["normalized"] = self.normalized
        return out


def send(case: Case) -> Result:
    """Send ``case`` to a fresh app of its kind; the response as it is recorded."""
    app = APPS[case.app]()
    client = app.test_client()
    response = client.open(case.path, method=case.method, headers=list(case.headers),
                           data=case.body.encode("utf-8") if case.body is not None else None)
    body, normalized = normalize_body(response.get_data(as_text=True))
    headers = recorded_headers(response.headers)
    if case.allow_unordered and "Allow" in headers:
        headers["Allow"] = ", ".join(sorted(m.strip() for m in headers["Allow"].split(",")))
        normalized.append("Allow order")
    return Result(response.status_code, headers, body, normalized)


def golden_path(dialect: str) -> Path:
    return GOLDEN_DIR / f"{dialect}.json"
