"""Dialect tdp: the manifest in both wire forms, single tools, headers, statuses, execute."""

from __future__ import annotations

import enum
import json
import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest
from jsonschema import Draft202012Validator

from flask_tooldiscovery import RegistrationError, ToolContext, ToolDiscovery, ToolError

# A JSON Schema written from the seed document's tables (spec form), closed at every level.
PARAM = {
    "type": "object",
    "properties": {
        "type": {"enum": ["string", "number", "integer", "boolean", "array", "object"]},
        "description": {"type": "string"},
        "enum": {"type": "array", "items": {"type": "string"}},
        "default": {},
        "items": {"$ref": "#/$defs/param"},
        "properties": {"type": "object", "additionalProperties": {"$ref": "#/$defs/param"}},
        "required": {"type": "array", "items": {"type": "string"}},
        "minimum": {"type": "number"}, "maximum": {"type": "number"},
        "minLength": {"type": "integer"}, "maxLength": {"type": "integer"},
        "pattern": {"type": "string"}, "format": {"type": "string"},
    },
    "required": ["type"],
    "additionalProperties": False,
}
TOOL = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9_]+$"},
        "description": {"type": "string", "minLength": 1},
        "category": {"type": "string"},
        "parameters": {
            "type": "object",
            "properties": {
                "type": {"const": "object"},
                "properties": {"type": "object", "additionalProperties": {"$ref": "#/$defs/param"}},
                "required": {"type": "array", "items": {"type": "string"}},
                "additionalProperties": {"type": "boolean"},
            },
            "required": ["type", "properties"],
            "additionalProperties": False,
        },
        "metadata": {
            "type": "object",
            "properties": {
                "enabled_by_default": {"type": "boolean"},
                "requires_approval": {"type": "boolean"},
                "timeout_seconds": {"type": "integer"},
                "rate_limit_per_minute": {"type": "integer"},
                "cost_estimate": {"enum": ["low", "medium", "high", "variable"]},
                "long_running": {"type": "boolean"},
                "idempotent": {"type": "boolean"},
                "modifies_state": {"type": "boolean"},
                "sensitive_output": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "examples": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"description": {"type": "string"}, "input": {"type": "object"},
                                   "expected_output": {}},
                    "additionalProperties": False}},
            },
            "required": ["enabled_by_default", "requires_approval"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "description", "parameters", "metadata"],
    "additionalProperties": False,
}
MANIFEST = {
    "$defs": {"param": PARAM, "tool": TOOL},
    "type": "object",
    "properties": {
        "protocol_version": {"const": "1.0"},
        "scenario": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                           "description": {"type": "string"}, "base_url": {"type": "string"}},
            "required": ["name", "version", "description"],
            "additionalProperties": False,
        },
        "tools": {"type": "array", "items": {"$ref": "#/$defs/tool"}},
        "categories": {"type": "array", "items": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                           "description": {"type": "string"}, "icon": {"type": "string"}},
            "required": ["id", "name"], "additionalProperties": False}},
        "generated_at": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"},
    },
    "required": ["protocol_version", "scenario", "tools", "categories", "generated_at"],
    "additionalProperties": False,
}
TOOL_SCHEMA = {**TOOL, "$defs": {"param": PARAM}}


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Box:
    width: float
    height: float = 1.0


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()
    d.category("agent_lifecycle", "Agent Lifecycle", "Spawning and stopping agents", icon="play",
               display_order=2)

    @d.tool(category="agent_lifecycle", timeout=30, rate_limit_per_minute=10, cost_estimate="high",
            long_running=True, tags=["coding", "agent"],
            examples=[{"description": "Fix a bug", "input": {"task": "Fix login", "retries": 2,
                                                             "ratio": 0.5, "dry": False,
                                                             "labels": ["a"], "opts": {"x": None}}}])
    def spawn_coding_agent(
        task: Annotated[str, "Clear description of the coding task"],
        runner_type: Literal["claude-code", "codex", "opencode"] = "claude-code",
        retries: int = 0, ratio: float = 0.5, dry: bool = False,
        labels: list[str] | None = None, opts: dict[str, int] | None = None,
    ) -> dict:
        """Spawn a coding agent to execute a software engineering task."""
        return {"task": task, "runner": runner_type, "retries": retries}

    @d.tool(annotations={"idempotentHint": True}, enabled_by_default=False, requires_approval=True,
            input_schema={"type": "object", "title": "Weird", "$defs": {"Lvl": {"enum": [1, 2]}},
                          "properties": {
                              "level": {"$ref": "#/$defs/Lvl", "title": "Level"},
                              "mode": {"type": ["string", "null"], "minLength": 1, "maxLength": 5},
                              "color": {"const": "red"},
                              "box": {"type": "object", "additionalProperties": False,
                                      "properties": {"w": {"type": "number", "exclusiveMinimum": 0}}},
                              "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]},
                              "anything": {},
                          }})
    def odd(level=1, mode=None, color="red", box=None, pair=None, anything=None) -> int:
        """Odd schema features."""
        return level

    @d.tool
    def typed(color: Color, box: Box, boxes: list[Box] = ()) -> list:
        """Typed params."""
        return [color.value, box.width]

    @d.tool
    def fail() -> None:
        """Fails."""
        raise ToolError("nope")

    return d


@pytest.fixture
def app(discovery, make_app):
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_SERVER_NAME="agent-manager",
                    TOOLDISCOVERY_SERVER_DESCRIPTION="Manages agents",
                    TOOLDISCOVERY_TDP_BASE_URL="http://localhost:15000")


def _validate(schema, doc):
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in Draft202012Validator(schema).iter_errors(doc)]
    assert not errors, errors


def test_spec_form_manifest(app) -> None:
    r = app.test_client().get("/api/v1/tools")
    assert r.status_code == 200 and r.mimetype == "application/json"
    assert r.headers["Cache-Control"] == "public, max-age=60"
    doc = r.get_json()
    _validate(MANIFEST, doc)
    assert doc["scenario"] == {"name": "agent-manager", "version": "1.0.0",
                               "description": "Manages agents", "base_url": "http://localhost:15000"}
    assert doc["categories"] == [{"id": "agent_lifecycle", "name": "Agent Lifecycle",
                                  "description": "Spawning and stopping agents", "icon": "play"}]
    tools = {t["name"]: t for t in doc["tools"]}
    spawn = tools["spawn_coding_agent"]
    assert spawn["category"] == "agent_lifecycle"
    assert spawn["parameters"]["properties"]["runner_type"] == {
        "type": "string", "enum": ["claude-code", "codex", "opencode"], "default": "claude-code"}
    assert spawn["parameters"]["required"] == ["task"]
    assert spawn["metadata"] == {
        "enabled_by_default": True, "requires_approval": False, "timeout_seconds": 30,
        "rate_limit_per_minute": 10, "cost_estimate": "high", "long_running": True,
        "tags": ["coding", "agent"],
        "examples": [{"description": "Fix a bug", "input": {"task": "Fix login", "retries": 2,
                                                            "ratio": 0.5, "dry": False,
                                                            "labels": ["a"], "opts": {"x": None}}}]}
    odd = tools["odd"]
    assert odd["metadata"]["idempotent"] is True and odd["metadata"]["enabled_by_default"] is False
    props = odd["parameters"]["properties"]
    assert props["level"] == {"type": "integer", "enum": ["1", "2"]}
    assert props["mode"] == {"type": "string", "minLength": 1, "maxLength": 5}
    assert props["color"] == {"type": "string", "enum": ["red"]}
    assert props["box"] == {"type": "object", "properties": {"w": {"type": "number"}}}
    assert props["pair"] == {"type": "array", "items": {"type": "integer"}}
    assert props["anything"] == {"type": "string"}
    assert tools["typed"]["parameters"]["properties"]["boxes"]["items"]["properties"]["height"] == {
        "type": "number", "default": 1.0}


# The protojson messages, from Vrooli's tool.proto, manifest.proto and common/v1/types.proto: every
# field by its JSON name, with its kind. The consumer parses with protojson.Unmarshal (no
# DiscardUnknown): an unknown key, a wrong shape or an out-of-range number drops the manifest.
# "?" marks proto3 ``optional`` fields, where 0 is a value. (``asyncBehavior`` is never emitted
# here, so it is left out: its presence fails the check.)
PROTO = {
    "ToolManifest": {"protocolVersion": "string", "scenario": "ScenarioInfo", "tools": "[ToolDefinition]",
                     "categories": "[ToolCategory]", "generatedAt": "timestamp",
                     "capabilities": "ManifestCapabilities"},
    "ScenarioInfo": dict.fromkeys(("name", "version", "description", "baseUrl", "healthEndpoint",
                                   "executeEndpointTemplate"), "string"),
    "ManifestCapabilities": {"supportsAsync": "bool", "supportsWebsocketStatus": "bool",
                             "websocketEndpoint": "string", "supportsBatchExecution": "bool",
                             "supportsCaching": "bool", "cacheTtlSeconds": "int32"},
    "ToolDefinition": {"name": "string", "description": "string", "category": "string",
                       "parameters": "ToolParameters", "metadata": "ToolMetadata"},
    "ToolParameters": {"type": "string", "properties": "{ParameterSchema}", "required": "[string]",
                       "additionalProperties": "bool"},
    "ParameterSchema": {"type": "string", "description": "string", "enum": "[string]", "default": "JsonValue",
                        "items": "ParameterSchema", "properties": "{ParameterSchema}", "required": "[string]",
                        "format": "string", "minimum": "?double", "maximum": "?double", "minLength": "?int32",
                        "maxLength": "?int32", "pattern": "string"},
    "ToolMetadata": {"enabledByDefault": "bool", "requiresApproval": "bool", "timeoutSeconds": "int32",
                     "rateLimitPerMinute": "int32", "costEstimate": "string", "longRunning": "bool",
                     "idempotent": "bool", "tags": "[string]", "examples": "[ToolExample]",
                     "modifiesState": "bool", "sensitiveOutput": "bool"},
    "ToolExample": {"description": "string", "input": "JsonObject", "expectedOutput": "JsonObject"},
    "ToolCategory": {"id": "string", "name": "string", "description": "string", "icon": "string",
                     "displayOrder": "int32"},
    "JsonObject": {"fields": "{JsonValue}"},
    "JsonList": {"values": "[JsonValue]"},
    "JsonValue": {"boolValue": "bool", "intValue": "int64", "doubleValue": "double", "stringValue": "string",
                  "objectValue": "JsonObject", "listValue": "JsonList", "nullValue": "NullValue",
                  "bytesValue": "bytes"},
}
ONEOFS = {"JsonValue"}  # every field of these messages is in one oneof: exactly one is set
DATA = {"JsonValue", "JsonObject", "JsonList"}  # values, not documents: empty maps and lists are fine
RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def parse_strict(text: str):
    """JSON as Go reads it: ``NaN``/``Infinity`` are not JSON."""
    def refuse(token):
        raise AssertionError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def check_scalar(kind, v, where):
    if kind == "string":
        assert isinstance(v, str), where
    elif kind == "bool":
        assert isinstance(v, bool), where
    elif kind in RANGES:  # a JSON number or a decimal string (int64 is written as a string)
        assert not isinstance(v, bool) and isinstance(v, (int, str)), where
        assert isinstance(v, int) or re.fullmatch(r"-?\d+", v), where
        low, high = RANGES[kind]
        assert low <= int(v) <= high, f"{where}: {v} out of {kind} range"
    elif kind == "double":
        assert not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v), where
    elif kind == "timestamp":
        assert isinstance(v, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", v), where
    elif kind == "NullValue":
        assert v == "NULL_VALUE", where
    elif kind == "bytes":
        assert isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9+/_-]*=*", v), where
    else:
        raise AssertionError(f"{where}: unknown kind {kind}")


def check_message(msg, name, where):
    """Walk ``msg`` as protojson message ``name``: closed keys, shapes, ranges; zero values left
    out (a convention here, not a parsing rule) except in JSON values and ``optional`` fields,
    where an explicit 0 is a value and is kept."""
    assert isinstance(msg, dict), f"{where}: {name} must be a JSON object"
    fields = PROTO[name]
    assert set(msg) <= set(fields), f"{where}: unknown keys {set(msg) - set(fields)} in {name}"
    if name in ONEOFS:
        assert len(msg) == 1, f"{where}: {name} needs exactly one of {sorted(fields)}"
    for key, value in msg.items():
        kind, at = fields[key], f"{where}.{key}"
        optional, kind = kind.startswith("?"), kind.lstrip("?")
        if name not in DATA and not optional:
            assert value not in (None, False, "", 0, [], {}), f"zero value at {at}"
        check_field(kind, value, at)


def check_field(kind, value, where):
    if kind.startswith("["):
        assert isinstance(value, list), where
        for i, v in enumerate(value):
            check_field(kind[1:-1], v, f"{where}[{i}]")
    elif kind.startswith("{"):
        assert isinstance(value, dict), where
        for k, v in value.items():
            check_field(kind[1:-1], v, f"{where}.{k}")
    elif kind in PROTO:
        check_message(value, kind, where)
    else:
        check_scalar(kind, value, where)


def protojson_manifest(app):
    r = app.test_client().get("/api/v1/tools")
    assert r.status_code == 200
    doc = parse_strict(r.get_data(as_text=True))
    check_message(doc, "ToolManifest", "manifest")
    return doc


def test_protojson_form(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_TDP_WIRE="protojson",
                   TOOLDISCOVERY_SERVER_DESCRIPTION="Manages agents")
    doc = protojson_manifest(app)
    assert doc["protocolVersion"] == "1.0"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["generatedAt"])
    assert doc["categories"][0]["displayOrder"] == 2
    tools = {t["name"]: t for t in doc["tools"]}
    spawn = tools["spawn_coding_agent"]
    props = spawn["parameters"]["properties"]
    assert props["runner_type"]["default"] == {"stringValue": "claude-code"}
    assert props["retries"]["default"] == {"intValue": "0"}
    assert props["ratio"]["default"] == {"doubleValue": 0.5}
    assert props["dry"]["default"] == {"boolValue": False}
    assert props["labels"]["default"] == {"nullValue": "NULL_VALUE"}
    assert spawn["metadata"]["enabledByDefault"] is True
    assert "requiresApproval" not in spawn["metadata"]  # false is a zero value
    assert spawn["metadata"]["examples"][0]["input"]["fields"] == {
        "task": {"stringValue": "Fix login"}, "retries": {"intValue": "2"},
        "ratio": {"doubleValue": 0.5}, "dry": {"boolValue": False},
        "labels": {"listValue": {"values": [{"stringValue": "a"}]}},
        "opts": {"objectValue": {"fields": {"x": {"nullValue": "NULL_VALUE"}}}}}
    assert "enabledByDefault" not in tools["odd"]["metadata"]
    assert tools["odd"]["metadata"]["requiresApproval"] is True
    assert "additionalProperties" not in spawn["parameters"]  # false is omitted
    one = parse_strict(app.test_client().get("/api/v1/tools/spawn_coding_agent").get_data(as_text=True))
    check_message(one, "ToolDefinition", "spawn_coding_agent")
    assert one == spawn


def test_single_tool_and_errors(app) -> None:
    c = app.test_client()
    r = c.get("/api/v1/tools/odd")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "public, max-age=60"
    _validate(TOOL_SCHEMA, r.get_json())
    r = c.get("/api/v1/tools/nope")
    assert r.status_code == 404
    assert r.get_json() == {"error": "Not Found", "message": "tool not found: nope"}
    r = c.get("/api/v1/tools/")
    assert r.status_code == 400
    assert r.get_json() == {"error": "Bad Request", "message": "tool name is required"}
    for path in ("/api/v1/tools", "/api/v1/tools/odd"):
        r = c.options(path)
        assert r.status_code == 204 and r.data == b""
    assert c.options("/api/v1/tools/execute").status_code == 200
    r = c.delete("/api/v1/tools")
    assert r.status_code == 405 and r.mimetype == "application/json"


def test_failing_provider_is_503(make_app) -> None:
    def broken():
        raise RuntimeError("secret")

    app = make_app(ToolDiscovery(tools=broken), TOOLDISCOVERY_DIALECTS=["tdp"])
    r = app.test_client().get("/api/v1/tools")
    assert r.status_code == 503 and r.mimetype == "application/json"
    assert "secret" not in r.get_data(as_text=True)


def test_execute(app) -> None:
    c = app.test_client()
    r = c.post("/api/v1/tools/execute", json={"tool_name": "spawn_coding_agent",
                                              "arguments": {"task": "x", "retries": "3"}})
    assert r.status_code == 200
    assert r.get_json() == {"success": True, "is_async": False,
                            "result": {"task": "x", "runner": "claude-code", "retries": 3}}
    # A non-object return value is wrapped; string-typed enums map back to the declared type.
    # ``odd`` requires approval: refused first, run once the sealed state comes back.
    app.secret_key = "test-secret"
    body = {"tool_name": "odd", "arguments": {"level": "2"}}
    r = c.post("/api/v1/tools/execute", json=body)
    assert r.status_code == 428 and r.get_json()["code"] == "approval_required"
    r = c.post("/api/v1/tools/execute", json=body, headers={"X-Tool-Approval": r.get_json()["approval_state"]})
    assert r.get_json()["result"] == {"value": 2}
    r = c.post("/api/v1/tools/execute", json={"tool_name": "typed",
                                              "arguments": {"color": "blue", "box": {"width": 2}}})
    assert r.get_json()["result"] == {"value": ["blue", 2.0]}


@pytest.mark.parametrize("body, status, code", [
    ({"tool_name": "spawn_coding_agent", "arguments": {}}, 400, "invalid_args"),
    ({"tool_name": "spawn_coding_agent", "arguments": {"task": 1}}, 400, "invalid_args"),
    ({"tool_name": "spawn_coding_agent", "arguments": [1]}, 400, "invalid_args"),
    ({"arguments": {}}, 400, "invalid_args"),
    ([1, 2], 400, "invalid_args"),
    ({"tool_name": "nope", "arguments": {}}, 404, "unknown_tool"),
    ({"tool_name": "fail", "arguments": {}}, 500, "internal_error"),
])
def test_execute_errors(app, body, status, code) -> None:
    r = app.test_client().post("/api/v1/tools/execute", json=body)
    assert r.status_code == status
    doc = r.get_json()
    assert doc["success"] is False and doc["is_async"] is False and doc["code"] == code
    assert isinstance(doc["error"], str) and doc["error"]


def test_execute_malformed_json(app) -> None:
    r = app.test_client().post("/api/v1/tools/execute", data="{x", content_type="application/json")
    assert r.status_code == 400 and r.get_json()["code"] == "invalid_args"


def test_categories_from_the_setting_and_the_api(make_app) -> None:
    d = ToolDiscovery()
    d.category("math", "Math", icon="calculator")

    @d.tool(category="text")
    def upper(s: str) -> str:
        """Upper-case."""
        return s.upper()

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_CATEGORIES=[
        {"id": "text", "name": "Text", "description": "String tools"},
        {"id": "math", "name": "Ignored: declared through the API first"}])
    doc = app.test_client().get("/api/v1/tools").get_json()
    assert doc["categories"] == [{"id": "math", "name": "Math", "icon": "calculator"},
                                 {"id": "text", "name": "Text", "description": "String tools"}]
    assert doc["tools"][0]["category"] == "text"
    _validate(MANIFEST, doc)


# -- Vrooli interoperability: what the agent-inbox consumer sends and parses -------------------


def test_execute_strips_context_attachments_into_the_context(make_app) -> None:
    """agent-inbox adds ``_context_attachments`` to every call's arguments when skills are attached."""
    d = ToolDiscovery()

    @d.tool
    def run(task: str, ctx: ToolContext) -> dict:
        """Run a task."""
        return {"task": task, "attachments": ctx.extra.get("context_attachments")}

    @d.tool(input_schema={"type": "object", "additionalProperties": False,
                          "properties": {"_context_attachments": {"type": "array"}}})
    def declares(ctx: ToolContext, **arguments) -> dict:
        """Declares the key itself: it is passed on as an argument too."""
        return {"arguments": arguments, "extra": ctx.extra.get("context_attachments")}

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"])
    skills = [{"type": "skill", "key": "style", "label": "Style", "content": "Be brief.", "tags": ["x"]}]
    c = app.test_client()
    r = c.post("/api/v1/tools/execute", json={"tool_name": "run",
                                              "arguments": {"task": "t", "_context_attachments": skills}})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["result"] == {"task": "t", "attachments": skills}
    r = c.post("/api/v1/tools/execute", json={"tool_name": "run", "arguments": {"task": "t"}})
    assert r.get_json()["result"] == {"task": "t", "attachments": None}
    # Only that key is forgiven: other unexpected parameters are still refused.
    r = c.post("/api/v1/tools/execute", json={"tool_name": "run", "arguments": {"task": "t", "_other": 1}})
    assert r.status_code == 400 and r.get_json()["code"] == "invalid_args"
    r = c.post("/api/v1/tools/execute", json={"tool_name": "declares",
                                              "arguments": {"_context_attachments": skills}})
    assert r.get_json()["result"] == {"arguments": {"_context_attachments": skills}, "extra": skills}


def _examples_tool(d: ToolDiscovery) -> None:
    @d.tool(examples=[
        {"description": "object", "input": {"x": 1}, "expected_output": {"value": 2, "ok": True}},
        {"description": "scalar", "input": {"x": 2}, "expected_output": 3},
        {"description": "list", "input": {"x": 3}, "expected_output": [1, "a"]},
        {"description": "none given", "input": {"x": 4}},
    ])
    def double(x: int) -> int:
        """Double x."""
        return 2 * x


def test_protojson_expected_output_is_a_json_object(make_app) -> None:
    d = ToolDiscovery()
    _examples_tool(d)
    app = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_TDP_WIRE="protojson")
    examples = protojson_manifest(app)["tools"][0]["metadata"]["examples"]
    assert examples[0]["expectedOutput"] == {"fields": {"value": {"intValue": "2"}, "ok": {"boolValue": True}}}
    # A non-object output is wrapped the way /api/v1/tools/execute wraps such a result.
    assert examples[1]["expectedOutput"] == {"fields": {"value": {"intValue": "3"}}}
    assert examples[2]["expectedOutput"] == {"fields": {"value": {"listValue": {"values": [
        {"intValue": "1"}, {"stringValue": "a"}]}}}}
    assert "expectedOutput" not in examples[3]
    r = app.test_client().post("/api/v1/tools/execute", json={"tool_name": "double", "arguments": {"x": 2}})
    assert r.get_json()["result"] == {"value": 4}
    # The spec form keeps the value as it was given.
    spec = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"]).test_client().get("/api/v1/tools").get_json()
    assert [e.get("expected_output") for e in spec["tools"][0]["metadata"]["examples"]] == [
        {"value": 2, "ok": True}, 3, [1, "a"], None]


def test_protojson_keeps_explicit_zeros(make_app) -> None:
    d = ToolDiscovery()

    @d.tool(input_schema={"type": "object", "properties": {
        "n": {"type": "number", "minimum": 0, "maximum": 0.0},
        "s": {"type": "string", "minLength": 0, "maxLength": 0},
        "m": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10}},
        "k": {"type": "integer", "minimum": -5, "default": 0}}})
    def zeros(**arguments) -> None:
        """Zero bounds."""

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_TDP_WIRE="protojson")
    props = protojson_manifest(app)["tools"][0]["parameters"]["properties"]
    assert props["n"] == {"type": "number", "minimum": 0, "maximum": 0.0}
    assert props["s"] == {"type": "string", "minLength": 0, "maxLength": 0}
    assert props["m"]["items"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert props["k"] == {"type": "integer", "minimum": -5, "default": {"intValue": "0"}}


def test_modifies_state_and_sensitive_output_in_both_forms(make_app) -> None:
    d = ToolDiscovery()

    @d.tool(modifies_state=True, sensitive_output=True)
    def write(path: str) -> None:
        """Write a file."""

    @d.tool(modifies_state=False, sensitive_output=False)
    def read(path: str) -> str:
        """Read a file."""
        return ""

    @d.tool
    def plain() -> None:
        """Says nothing about either."""

    spec = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"]).test_client().get("/api/v1/tools").get_json()
    _validate(MANIFEST, spec)
    meta = {t["name"]: t["metadata"] for t in spec["tools"]}
    assert meta["write"]["modifies_state"] is True and meta["write"]["sensitive_output"] is True
    assert meta["read"]["modifies_state"] is False and meta["read"]["sensitive_output"] is False
    assert "modifies_state" not in meta["plain"] and "sensitive_output" not in meta["plain"]
    app = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_TDP_WIRE="protojson")
    meta = {t["name"]: t["metadata"] for t in protojson_manifest(app)["tools"]}
    assert meta["write"]["modifiesState"] is True and meta["write"]["sensitiveOutput"] is True
    assert "modifiesState" not in meta["read"] and "sensitiveOutput" not in meta["read"]  # false: zero value


@dataclass
class Limits:
    ceiling: float = float("inf")


def _huge(n: int = 2**70) -> None:
    """Huge default."""


def _negative_huge(n: int = -(2**63) - 1) -> None:
    """Below int64."""


def _infinite(x: float = float("inf")) -> None:
    """Infinite default."""


def _nan(x: float = float("nan")) -> None:
    """NaN default."""


def _nested(xs: list[float] = (1.0, float("-inf"))) -> None:
    """Infinity inside a list default."""


def _in_dataclass(limits: Limits | None = None) -> None:
    """Infinity in a dataclass field's default."""


def _explicit(**arguments) -> None:
    """Explicit schema."""


@pytest.mark.parametrize("func, options, where", [
    (_huge, {}, "'n'"),
    (_negative_huge, {}, "'n'"),
    (_infinite, {}, "'x'"),
    (_nan, {}, "'x'"),
    (_nested, {}, "'xs'"),
    (_in_dataclass, {}, "ceiling"),
    (_explicit, {"input_schema": {"type": "object", "properties": {
        "opts": {"type": "object", "properties": {"depth": {"type": "integer", "default": 2**64}}}}}},
     "'opts'"),
    (_explicit, {"input_schema": {"type": "object", "properties": {
        "r": {"anyOf": [{"type": "number", "default": float("inf")}, {"type": "null"}]}}}}, "'r'"),
])
def test_unrepresentable_defaults_are_refused_when_registered(func, options, where) -> None:
    d = ToolDiscovery()
    with pytest.raises(RegistrationError) as info:
        d.tool(name="bad_default", **options)(func)
    message = str(info.value)
    assert "'bad_default'" in message and where in message, message
    assert not list(d.registry.resolve())


def test_int64_bounds_are_accepted_and_emitted_as_int64(make_app) -> None:
    d = ToolDiscovery()

    @d.tool
    def bounds(low: int = -(2**63), high: int = 2**63 - 1, big: float = 1e308) -> None:
        """The extremes that still fit."""

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["tdp"], TOOLDISCOVERY_TDP_WIRE="protojson")
    props = protojson_manifest(app)["tools"][0]["parameters"]["properties"]
    assert props["low"]["default"] == {"intValue": str(-(2**63))}
    assert props["high"]["default"] == {"intValue": str(2**63 - 1)}
    assert props["big"]["default"] == {"doubleValue": 1e308}
