"""Dialect utcp and the OpenAPI document: the real UTCP client (PyPI utcp + utcp-http) reads
``/utcp`` and ``/tools/openapi.json`` from a live server, finds each tool once and calls it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from flask_tooldiscovery import ToolDiscovery, ToolError
from flask_tooldiscovery.settings import SettingsError

from .conftest import live_server

utcp_http = pytest.importorskip("utcp_http")  # importing it registers the http call template
from utcp.utcp_client import UtcpClient  # noqa: E402

TOOLS = ["add", "billing.refund", "boom", "fail", "pick"]
#: What the TypeScript client (@utcp/sdk 1.1) accepts on a tool; one key more refuses the manual.
TS_TOOL_KEYS = {"name", "description", "inputs", "outputs", "tags", "average_response_size", "tool_call_template"}


def build(identity: Any = None, **config: Any) -> Flask:
    d = ToolDiscovery(identity=identity)

    @d.tool(tags=["math"], category="arithmetic")
    def add(a: float, b: float) -> float:
        """Add two numbers.

        Args:
            a: First addend.
            b: Second addend.
        """
        return a + b

    @d.tool
    async def pick(limit: int, pair: tuple[int, str] = (1, "one")) -> dict:
        """Pick some.

        Args:
            limit: How many.
            pair: A number and its name.
        """
        return {"limit": limit, "pair": list(pair)}

    @d.tool
    def fail(reason: str) -> None:
        """Fail on purpose.

        Args:
            reason: Why.
        """
        raise ToolError(f"Cannot: {reason}", can_retry=True, retry_after_ms=1500,
                        additional_prompt_content="Try another day.")

    @d.tool
    def boom() -> None:
        """Fail unexpectedly."""
        raise RuntimeError("db password hunter2")

    d.add_tool(lambda: "refunded", name="billing.refund", description="A dotted name.")
    app = Flask("utcp_tests")
    app.config.update(TESTING=True, TOOLDISCOVERY_SERVER_NAME="Acme tools", **config)
    d.init_app(app)
    return app


async def register(url: str, **variables: str) -> tuple[Any, list[str]]:
    client = await UtcpClient.create(config={"variables": variables, "manual_call_templates": [
        {"name": "acme", "call_template_type": "http", "url": url, "http_method": "GET"}]})
    tools = await client.config.tool_repository.get_tools()
    return client, [tool.name for tool in tools]


async def call(client: Any, name: str, args: dict[str, Any]) -> Any:
    try:
        return await client.call_tool(f"acme.{name}", args)
    except aiohttp.ClientResponseError as exc:
        return exc


def test_the_real_client_reads_the_manual_and_calls_every_kind_of_tool() -> None:
    async def scenario(base: str) -> None:
        client, names = await register(f"{base}/utcp")
        assert sorted(names) == [f"acme.{name}" for name in TOOLS]  # each tool exactly once
        assert await call(client, "add", {"body": {"a": 2, "b": 3}}) == 5
        picked = await call(client, "pick", {"body": {"limit": 4, "pair": [2, "two"]}})  # async, a tuple
        assert picked == {"limit": 4, "pair": [2, "two"]}
        assert await call(client, "billing.refund", {"body": {}}) == "refunded"
        own = await call(client, "fail", {"body": {"reason": "closed"}})
        assert isinstance(own, aiohttp.ClientResponseError) and own.status == 422
        assert "Cannot: closed" in own.message and "Try another day." in own.message
        crash = await call(client, "boom", {})  # no body at all: the template's header still says JSON
        assert isinstance(crash, aiohttp.ClientResponseError) and crash.status == 500
        assert "unexpected error" in crash.message and "hunter2" not in crash.message
        invalid = await call(client, "add", {"body": {"a": "x", "b": 1}})
        assert isinstance(invalid, aiohttp.ClientResponseError) and invalid.status == 400
        assert "a:" in invalid.message
        await client.close()

    with live_server(build()) as base:
        asyncio.run(scenario(base))


def test_the_real_client_reads_the_openapi_document_each_tool_once() -> None:
    async def scenario(base: str) -> None:
        client, names = await register(f"{base}/tools/openapi.json")
        assert sorted(names) == [f"acme.{name}" for name in TOOLS]
        tool = await client.config.tool_repository.get_tool("acme.add")
        assert tool.inputs.properties["body"].properties["a"].type == "number"  # typed, as in the manual
        assert tool.tags == ["math", "arithmetic"]
        assert await call(client, "add", {"body": {"a": 2, "b": 3}}) == 5
        assert await call(client, "pick", {"body": {"limit": 1}}) == {"limit": 1, "pair": [1, "one"]}
        own = await call(client, "fail", {"body": {"reason": "closed"}})
        assert isinstance(own, aiohttp.ClientResponseError) and own.status == 422
        crash = await call(client, "boom", {"body": {}})
        assert isinstance(crash, aiohttp.ClientResponseError) and crash.status == 500
        assert "hunter2" not in crash.message
        await client.close()

    with live_server(build()) as base:
        asyncio.run(scenario(base))


def test_the_manual_has_only_the_keys_the_strict_clients_accept() -> None:
    manual = build().test_client().get("/utcp").get_json()
    assert set(manual) == {"utcp_version", "manual_version", "tools"}
    for tool in manual["tools"]:
        assert set(tool) <= TS_TOOL_KEYS
        assert tool["inputs"]["required"] == ["body"] and list(tool["inputs"]["properties"]) == ["body"]
        template = tool["tool_call_template"]
        assert template["call_template_type"] == "http" and template["http_method"] == "POST"
        assert template["body_field"] == "body"
    add = next(t for t in manual["tools"] if t["name"] == "add")
    assert add["outputs"] == {"type": "number"} and add["tags"] == ["math", "arithmetic"]
    assert add["inputs"]["properties"]["body"]["required"] == ["a", "b"]
    pick = next(t for t in manual["tools"] if t["name"] == "pick")
    assert pick["inputs"]["properties"]["body"]["properties"]["pair"]["items"] == {"not": {}}  # was items: false
    dotted = next(t for t in manual["tools"] if t["name"] == "billing.refund")
    assert dotted["tool_call_template"]["url"] == "http://localhost/utcp/tools/billing.refund"


def test_call_urls_come_from_the_request_behind_a_proxy() -> None:
    app = build(TOOLDISCOVERY_ALLOWED_HOSTS=["tools.example.com"])
    app.wsgi_app = ProxyFix(app.wsgi_app, x_proto=1, x_host=1, x_prefix=1)  # type: ignore[method-assign]
    client = app.test_client()
    proxied = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "tools.example.com", "X-Forwarded-Prefix": "/api"}
    manual = client.get("/utcp", headers=proxied).get_json()
    urls = {t["name"]: t["tool_call_template"]["url"] for t in manual["tools"]}
    assert urls["add"] == "https://tools.example.com/api/utcp/tools/add"
    document = client.get("/tools/openapi.json", headers=proxied).get_json()
    assert document["servers"] == [{"url": "https://tools.example.com/api"}]


def test_tool_errors_are_http_errors_with_the_message_and_failures_say_nothing() -> None:
    client = build().test_client()
    own = client.post("/utcp/tools/fail", json={"reason": "closed"})
    assert own.status_code == 422
    assert own.get_json() == {"error": "Cannot: closed\nTry another day.", "can_retry": True, "retry_after_ms": 1500}
    crash = client.post("/utcp/tools/boom", json={})
    assert crash.status_code == 500 and crash.get_json() == {"error": "The tool failed with an unexpected error."}
    invalid = client.post("/utcp/tools/add", json={"a": 1})
    assert invalid.status_code == 400 and invalid.get_json()["parameter_errors"] == {"b": "Missing required parameter."}
    assert client.post("/utcp/tools/add", json=[1]).status_code == 400
    assert client.post("/utcp/tools/nope", json={}).get_json() == {"error": "Tool not found: nope"}
    assert client.get("/utcp/tools/add").status_code == 405


def test_the_manual_is_cached_per_root_url() -> None:
    client = build(TOOLDISCOVERY_ALLOWED_HOSTS=["a.example", "b.example"]).test_client()
    first = client.get("/utcp", base_url="https://a.example")
    assert client.get("/utcp", base_url="https://a.example", headers={"If-None-Match": first.headers["ETag"]}
                      ).status_code == 304
    other = client.get("/utcp", base_url="https://b.example", headers={"If-None-Match": first.headers["ETag"]})
    assert other.status_code == 200 and "https://b.example/utcp/tools/add" in other.get_data(as_text=True)


def test_the_openapi_document_is_valid_with_one_operation_per_tool() -> None:
    from openapi_spec_validator import validate

    document = build().test_client().get("/tools/openapi.json").get_json()
    validate(document)
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert sorted(op["operationId"] for op in operations) == TOOLS
    assert document["servers"] == [{"url": "http://localhost"}]
    assert "security" not in document  # utcp has no credentials yet
    add = document["paths"]["/utcp/tools/add"]["post"]
    assert add["requestBody"]["content"]["application/json"]["schema"]["required"] == ["a", "b"]
    assert add["responses"]["200"]["content"]["application/json"]["schema"] == {"type": "number"}


def test_the_openapi_document_names_the_auth_scheme_in_force() -> None:
    app = build(TOOLDISCOVERY_DIALECTS=["opal", "openapi"], TOOLDISCOVERY_OPENAPI_DIALECT="opal",
                TOOLDISCOVERY_OPAL_BEARER_TOKEN="secret", TOOLDISCOVERY_OPENAPI_URL_PREFIX="/openapi.json")
    document = app.test_client().get("/openapi.json").get_json()
    assert document["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert document["security"] == [{"bearer": []}]
    assert "/opal/tools/add" in document["paths"] and "secret" not in json.dumps(document)


def test_behind_the_identity_layer_the_manual_says_how_to_send_the_token() -> None:
    def identify(request: Any) -> str | None:
        return "agent-7" if request.headers.get("Authorization") == "Bearer good-token" else None

    app = build(identity=identify)
    client = app.test_client()
    template = client.get("/utcp").get_json()["tools"][0]["tool_call_template"]
    assert template["auth"] == {"auth_type": "api_key", "api_key": "Bearer ${TOKEN}", "var_name": "Authorization",
                                "location": "header"}
    assert client.post("/utcp/tools/add", json={"a": 1, "b": 2}).status_code == 401
    document = client.get("/tools/openapi.json").get_json()
    assert document["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}

    async def scenario(base: str) -> None:
        agent, _ = await register(f"{base}/utcp", acme_TOKEN="good-token")  # the client's own variable
        assert await call(agent, "add", {"body": {"a": 2, "b": 3}}) == 5
        await agent.close()
        stranger, _ = await register(f"{base}/utcp", acme_TOKEN="wrong")
        refused = await call(stranger, "add", {"body": {"a": 2, "b": 3}})
        assert isinstance(refused, aiohttp.ClientResponseError) and refused.status == 401
        await stranger.close()

    with live_server(app) as base:
        asyncio.run(scenario(base))


def test_the_openapi_dialect_needs_the_dialect_it_describes() -> None:
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_OPENAPI_DIALECT"):
        build(TOOLDISCOVERY_DIALECTS=["openapi"])
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_OPENAPI_DIALECT"):
        build(TOOLDISCOVERY_OPENAPI_DIALECT="no such thing")


def test_cli_exports_the_manual_and_the_openapi_document_at_a_base_url() -> None:
    runner = build().test_cli_runner()
    manual = json.loads(runner.invoke(args=["tools", "export", "utcp", "--base-url", "https://t.example"]).output)
    assert manual["tools"][0]["tool_call_template"]["url"] == "https://t.example/utcp/tools/add"
    served = build(TOOLDISCOVERY_ALLOWED_HOSTS=["t.example"]).test_client().get(
        "/tools/openapi.json", base_url="https://t.example").get_json()
    exported = runner.invoke(args=["tools", "export", "openapi", "--base-url", "https://t.example"])
    assert json.loads(exported.output) == served
    unmounted = build(TOOLDISCOVERY_DIALECTS=["mcp"]).test_cli_runner().invoke(args=["tools", "export", "openapi"])
    assert unmounted.exit_code == 1 and "TOOLDISCOVERY_OPENAPI_DIALECT" in unmounted.output
