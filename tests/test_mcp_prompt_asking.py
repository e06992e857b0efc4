"""A prompt (and a resource reader) that asks its caller, in one process: its round state is sealed
for ``prompts/get`` (a tool's state of the same name, arguments and caller does not open it; a
prompt's does not open a resource's round), and where nobody can
answer (a handshake-era request that does not accept a stream) the prompt's error says so.
With the official client over two workers: test_mcp_prompt_asking_servers.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolContext, ToolDiscovery

MODERN = "2026-07-28"
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ANSWER = {"name": {"action": "accept", "content": {"name": "Ada"}}}


@pytest.fixture
def app(make_app: Callable[..., Flask]) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(name="greet")
    def greet_tool(ctx: ToolContext) -> str:
        """Greet whoever answers."""
        return f"Hello, {ctx.elicit('Who are you?', FORM, key='name').content['name']}!"

    @discovery.prompt(name="greet")
    def greet_prompt(ctx: ToolContext) -> str:
        """Greet whoever answers."""
        return f"Say hello to {ctx.elicit('Who are you?', FORM, key='name').content['name']}."

    @discovery.resource("greetings://{who}")
    def greeting(ctx: ToolContext, who: str) -> str:
        """A greeting, for whoever answers."""
        return f"{who} greets {ctx.elicit('Who are you?', FORM, key='name').content['name']}."

    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                    SECRET_KEY="prompt-asking-test", TOOLDISCOVERY_MCP_RESOURCES=True)


def modern(app: Flask, method: str, params: dict[str, Any]) -> Any:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    return app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                "params": {**params, "_meta": meta}},
                                  headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": method,
                                           "Mcp-Name": params.get("uri", params.get("name", ""))})


def test_a_tools_round_state_does_not_open_a_prompts_round(app: Flask) -> None:
    asked = modern(app, "tools/call", {"name": "greet", "arguments": {}}).json["result"]
    assert asked["resultType"] == "input_required"
    refused = modern(app, "prompts/get", {"name": "greet", "requestState": asked["requestState"],
                                          "inputResponses": ANSWER})
    assert refused.status_code == 400
    assert refused.json["error"] == {"code": -32602, "message": "Invalid or expired requestState",
                                     "data": {"reason": "invalid_request_state"}}
    own = modern(app, "prompts/get", {"name": "greet"}).json["result"]
    done = modern(app, "prompts/get", {"name": "greet", "requestState": own["requestState"], "inputResponses": ANSWER})
    said = {"type": "text", "text": "Say hello to Ada."}
    assert done.json["result"]["messages"] == [{"role": "user", "content": said}]


def test_a_resource_reader_asks_in_rounds_of_its_own(app: Flask) -> None:
    uri = {"uri": "greetings://Bo"}
    prompts = modern(app, "prompts/get", {"name": "greet"}).json["result"]
    refused = modern(app, "resources/read", {**uri, "requestState": prompts["requestState"], "inputResponses": ANSWER})
    assert refused.json["error"]["code"] == -32602
    asked = modern(app, "resources/read", uri).json["result"]
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["name"]["params"]["message"] == "Who are you?"
    done = modern(app, "resources/read", {**uri, "requestState": asked["requestState"], "inputResponses": ANSWER})
    assert done.json["result"]["contents"][0]["text"] == "Bo greets Ada."


def test_a_handshake_era_request_without_a_stream_gets_an_error_saying_the_prompt_could_not_ask(app: Flask) -> None:
    response = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
                                                    "params": {"name": "greet"}},
                                      headers={"MCP-Protocol-Version": "2025-11-25", "Accept": "application/json"})
    assert response.status_code == 200
    error = response.json["error"]
    assert error["code"] == -32603 and error["data"] == {"name": "greet", "reason": "cannot_ask"}
    assert error["message"].startswith("Prompt 'greet' could not ask its caller: ")
