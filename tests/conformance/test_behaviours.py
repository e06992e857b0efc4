"""The same behaviours, asked of every dialect through its own wire format."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery, ToolError

from .drivers import DRIVERS, Driver

TOOLS = ["add", "boom", "fail", "pick"]


def build(driver: Driver, *, tools: Any = None, **config: Any) -> Flask:
    d = ToolDiscovery(tools=tools, dialects=[driver.dialect])  # a dialect of one's own is in the table too
    if tools is None:
        @d.tool
        def add(a: float, b: float) -> float:
            """Add two numbers.

            Args:
                a: First.
                b: Second.
            """
            return a + b

        @d.tool
        def boom() -> None:
            """Fail unexpectedly."""
            raise RuntimeError("db password hunter2")

        @d.tool
        def fail(reason: str) -> None:
            """Fail on purpose.

            Args:
                reason: Why.
            """
            raise ToolError(f"Cannot: {reason}", can_retry=True)

        @d.tool
        async def pick(limit: int) -> int:
            """Pick.

            Args:
                limit: How many.
            """
            return limit

    app = Flask("conformance")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[driver.name], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    app.config.update(config)
    d.init_app(app)
    return app


@pytest.fixture(params=sorted(DRIVERS))
def driver(request) -> Driver:
    return DRIVERS[request.param]


@pytest.fixture
def client(driver):
    return build(driver).test_client()


def test_lists_the_same_tools(driver, client) -> None:
    r = driver.discover(client)
    assert r.status_code == 200
    assert sorted(driver.names(r)) == TOOLS


def test_a_call_succeeds_with_its_value(driver, client) -> None:
    result = driver.result(driver.call(client, "add", {"a": 2, "b": 3}))
    assert (result.kind, result.value) == ("ok", 5)
    assert driver.result(driver.call(client, "pick", {"limit": 4.0})).value == 4  # async, integral float


def test_unknown_tool(driver, client) -> None:
    assert driver.result(driver.call(client, "nope", {})).kind == "unknown"


def test_invalid_arguments_name_the_parameter(driver, client) -> None:
    result = driver.result(driver.call(client, "add", {"a": "x", "b": 1}))
    assert result.kind == "invalid" and "a" in result.message


def test_a_tools_own_error_is_shown_an_unexpected_one_is_not(driver, client) -> None:
    own = driver.result(driver.call(client, "fail", {"reason": "closed"}))
    assert own.kind == "tool_error" and "Cannot: closed" in own.message
    r = driver.call(client, "boom", {})
    assert driver.result(r).kind == "failure"
    assert "hunter2" not in r.get_data(as_text=True) and "Traceback" not in r.get_data(as_text=True)


def test_a_failing_provider_is_unavailable(driver) -> None:
    def broken() -> list[Any]:
        raise RuntimeError("db password hunter2")

    client = build(driver, tools=broken).test_client()
    r = driver.discover(client)
    assert driver.result(r).kind == "unavailable" if driver.name == "mcp" else r.status_code == 503
    assert "hunter2" not in r.get_data(as_text=True)
    assert driver.result(driver.call(client, "add", {})).kind == "unavailable"


def test_a_body_too_large_is_413(driver) -> None:
    client = build(driver, TOOLDISCOVERY_MAX_CONTENT_LENGTH=200).test_client()
    r = driver.call(client, "add", {"a": 1, "b": 2, "pad": "x" * 500})
    assert r.status_code == 413 and r.mimetype == "application/json"


def test_malformed_json_is_400(driver, client) -> None:
    r = client.post(driver.call_path("add"), data=b'{"a": ', content_type="application/json")
    assert r.status_code == 400 and driver.result(r).kind == "malformed"


def test_a_non_json_body_is_415(driver, client) -> None:
    r = client.post(driver.call_path("add"), data=b"a=1", content_type="text/plain")
    assert r.status_code == 415 and driver.result(r).kind == "refused"


def test_execution_can_be_disabled(driver) -> None:
    if driver.execute_setting is None:
        pytest.skip(f"{driver.name} has no setting that turns execution off")
    client = build(driver, **{driver.execute_setting: False}).test_client()
    r = driver.call(client, "add", {"a": 1, "b": 2})
    assert r.status_code == 403 and driver.result(r).kind == "refused"


@pytest.mark.parametrize("layer", [False, True], ids=["own", "layer"])
def test_auth_required_when_configured(driver, layer) -> None:
    """With the dialect's own credentials (where it has some) and with the identity layer's."""
    if not layer and driver.auth_config is None:  # nothing of its own to configure: it stays open
        assert driver.result(driver.call(build(driver).test_client(), "add", {"a": 1, "b": 2})).value == 3
        return
    config = {"TOOLDISCOVERY_BEARER_TOKEN": "tok-layer"} if layer else driver.auth_config
    headers = {"Authorization": "Bearer tok-layer"} if layer else driver.auth_headers
    client = build(driver, **config).test_client()
    r = driver.call(client, "add", {"a": 1, "b": 2})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"]
    wrong = {k: v + "-wrong" for k, v in headers.items()}
    assert driver.call(client, "add", {"a": 1, "b": 2}, headers=wrong).status_code == 401
    ok = driver.call(client, "add", {"a": 1, "b": 2}, headers=headers)
    assert driver.result(ok).value == 3


def test_cors_preflight_grants_allowed_origins_only(driver) -> None:
    client = build(driver, TOOLDISCOVERY_ALLOWED_ORIGINS=["https://app.example"]).test_client()
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    good = client.options(driver.call_path("add"), headers={"Origin": "https://app.example", **ask})
    assert good.status_code in (200, 204)
    assert good.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "POST" in good.headers["Access-Control-Allow-Methods"]
    evil = client.options(driver.call_path("add"), headers={"Origin": "https://evil.example", **ask})
    assert "Access-Control-Allow-Origin" not in evil.headers
    r = driver.call(client, "add", {"a": 1, "b": 2}, headers={"Origin": "https://app.example"})
    assert driver.result(r).kind == "ok" and r.headers["Access-Control-Allow-Origin"] == "https://app.example"


def test_discovery_is_cached_with_an_etag(driver, client) -> None:
    if driver.name == "mcp":
        pytest.skip("MCP lists tools over POST JSON-RPC; HTTP caching does not apply")
    first = driver.discover(client)
    etag = first.headers["ETag"]
    again = driver.discover(client, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert driver.discover(client).get_data() == first.get_data()


def test_a_tool_needing_approval_runs_only_once_approved(driver) -> None:
    """A requires_approval tool does not run on the first call, nor with tampered state; JSON
    dialects run it with the sealed state sent back in X-Tool-Approval (MCP: tests/test_approvals.py)."""
    runs: list[str] = []
    d = ToolDiscovery(dialects=[driver.dialect])

    @d.tool(requires_approval=True)
    def wipe(what: str) -> str:
        """Wipe something.

        Args:
            what: What.
        """
        runs.append(what)
        return what

    app = Flask("conformance")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[driver.name], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      SECRET_KEY="conformance-" + "k" * 32)
    d.init_app(app)
    client = app.test_client()
    first = driver.call(client, "wipe", {"what": "disk"})
    assert driver.result(first).kind == "needs_approval" and runs == []
    tampered = driver.call(client, "wipe", {"what": "disk"}, headers={"X-Tool-Approval": "forged.state.x"})
    assert driver.result(tampered).kind != "ok" and runs == []
    assert tampered.status_code == (200 if driver.name == "mcp" else 400)  # MCP: a JSON-RPC error
    if driver.name != "mcp":
        state = first.get_json()["approval_state"]
        approved = driver.call(client, "wipe", {"what": "disk"}, headers={"X-Tool-Approval": state})
        assert driver.result(approved).value == "disk" and runs == ["disk"]
