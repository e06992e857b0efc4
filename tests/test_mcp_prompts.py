"""MCP prompts and completion: the official client (both eras) against two gunicorn workers, and
raw JSON-RPC for what a client must see on the wire: capabilities, pages, cache hints, icons,
scopes, the spec's error codes, the 100-value cap of completions, and registration refusals."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from flask import Flask

from flask_tooldiscovery import RegistrationError, SettingsError, ToolDiscovery

from .apps.prompts_app import REVIEW_ICON, create_app
from .test_deploy import stop
from .test_operating_server import start

ALICE = {"Authorization": "Bearer alice"}
ADMIN = {"Authorization": "Bearer root:admin"}
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def app() -> Flask:
    return create_app(TESTING=True)


def rpc(app: Flask, method: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
        version: str = "2025-11-25") -> dict[str, Any]:
    """One handshake-era JSON-RPC request (as alice unless ``headers`` say otherwise); its body."""
    sent = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version, **(headers or ALICE)}
    r = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                               headers=sent)
    body: dict[str, Any] = r.get_json()
    return body


def modern(app: Flask, method: str, params: dict[str, Any] | None = None, name: str | None = None) -> Any:
    """One 2026-07-28 request with the routing headers the official SDK sends."""
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **ALICE}
    if name is not None:
        headers["Mcp-Name"] = name
    return app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                "params": {"_meta": META, **(params or {})}}, headers=headers)


# -- the official client, two workers -------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_workers() -> Iterator[str]:
    base, proc = start("tests.apps.prompts_app:create_app()", workers=2, threads=4, ready="/explorer/tools")
    try:
        yield base
    finally:
        stop(proc)


async def session(url: str, mode: str) -> dict[str, Any]:
    import httpx2
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import PromptReference, ResourceTemplateReference

    out: dict[str, Any] = {}
    async with httpx2.AsyncClient(headers=ALICE, timeout=30) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        out["version"] = client.protocol_version
        out["capabilities"] = client.server_capabilities
        out["server"] = client.server_info
        out["listed"] = [await client.list_prompts() for _ in range(3)]  # each may land on either worker
        out["tools"] = [[t.name for t in (await client.list_tools()).tools] for _ in range(3)]
        out["templates"] = [[t.uri_template for t in (await client.list_resource_templates()).resource_templates]
                            for _ in range(3)]
        out["review"] = await client.get_prompt("code_review", {"code": "print(1)", "language": "rust"})
        out["trip"] = await client.get_prompt("plan_trip", {"country": "Italy", "city": "Parma", "days": "2"})
        out["greeting"] = await client.get_prompt("greeting")
        out["chart"] = await client.get_prompt("describe_chart", {"report_id": "7"})
        out["cities"] = await client.complete(PromptReference(type="ref/prompt", name="plan_trip"),
                                              {"name": "city", "value": "pa"}, {"country": "France"})
        out["languages"] = await client.complete(PromptReference(type="ref/prompt", name="code_review"),
                                                 {"name": "language", "value": "r"})
        out["reports"] = await client.complete(ResourceTemplateReference(type="ref/resource",
                                                                         uri="reports://{report_id}"),
                                               {"name": "report_id", "value": "4"})
        for key, call in (("unknown", client.get_prompt("no_such_prompt")),
                          ("missing", client.get_prompt("plan_trip", {"country": "Italy"})),
                          ("hidden", client.get_prompt("audit"))):
            try:
                await call
            except MCPError as exc:
                out[key] = (exc.error.code, exc.error.message)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_lists_gets_and_completes_prompts_on_two_workers(two_workers, mode) -> None:
    out = asyncio.run(session(f"{two_workers}/mcp", mode))
    assert out["version"] == ("2025-11-25" if mode == "legacy" else MODERN)
    assert out["capabilities"].prompts is not None and out["capabilities"].completions is not None
    assert [icon.src for icon in out["server"].icons] == ["https://example.com/server.png"]
    names = [[p.name for p in listed.prompts] for listed in out["listed"]]
    assert names == [["code_review", "plan_trip", "greeting", "describe_chart"]] * 3  # registration order, every time
    assert out["tools"] == [["add", "count_words"]] * 3
    assert out["templates"] == [["reports://{report_id}", "charts://{kind}/{year}"]] * 3
    review = out["listed"][0].prompts[0]
    assert review.title == "Request Code Review" and review.description == "Ask for a review of some code."
    assert [(a.name, a.description, a.required) for a in review.arguments] == [
        ("code", "The code to review.", True), ("language", "The language it is written in.", False)]
    assert [(i.src, i.mime_type, i.sizes) for i in review.icons] == [
        (REVIEW_ICON["src"], REVIEW_ICON["mimeType"], REVIEW_ICON["sizes"])]
    assert out["review"].messages[0].role == "user"
    assert out["review"].messages[0].content.text == "Please review this rust code:\nprint(1)"
    trip = out["trip"].messages
    assert [(m.role, m.content.text) for m in trip] == [
        ("user", "Plan 2 days in Parma, Italy."), ("assistant", "Happy to. What do you enjoy most?")]
    assert out["greeting"].messages[0].content.text == "Say hello to alice."
    image, embedded, text = (m.content for m in out["chart"].messages)
    assert image.type == "image" and image.mime_type == "image/png" and image.data
    assert embedded.type == "resource" and embedded.resource.text == "Report 7: sales up."
    assert str(embedded.resource.uri) == "reports://7" and text.text.startswith("What does this chart")
    assert out["cities"].completion.values == ["Paris", "Parthenay", "Pau"]  # France's, as chosen before
    assert out["languages"].completion.values == ["rust"]
    reports = out["reports"].completion
    assert len(reports.values) == 100 and reports.values[:3] == ["4", "40", "41"]
    assert reports.total == 111 and reports.has_more is True
    assert out["unknown"] == (-32602, "Unknown prompt: no_such_prompt")
    assert out["missing"][0] == -32602 and "city" in out["missing"][1]
    assert out["hidden"] == (-32602, "Unknown prompt: audit")  # alice lacks the admin scope


# -- raw JSON-RPC ------------------------------------------------------------------------------------------


def test_capabilities_name_prompts_and_completions_only_when_there_are_some(app, make_app) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    offered = rpc(app, "initialize", init)["result"]["capabilities"]
    assert offered["prompts"] == {"listChanged": False} and offered["completions"] == {}
    discovered = modern(app, "server/discover").get_json()["result"]["capabilities"]
    assert discovered["prompts"] == {"listChanged": False} and discovered["completions"] == {}
    bare = ToolDiscovery()
    bare.add_tool(lambda: 1, name="one")
    plain = make_app(bare, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    offered = rpc(plain, "initialize", init, headers={})["result"]["capabilities"]
    assert "prompts" not in offered and "completions" not in offered
    for method in ("prompts/list", "prompts/get", "completion/complete"):
        assert rpc(plain, method, {"name": "x"}, headers={})["error"]["code"] == -32601


def test_prompts_list_pages_in_registration_order_and_hides_what_a_caller_may_not_see(make_app) -> None:
    paged = create_app(TESTING=True, TOOLDISCOVERY_MCP_PAGE_SIZE=2)
    first = rpc(paged, "prompts/list", headers=ADMIN)["result"]
    second = rpc(paged, "prompts/list", {"cursor": first["nextCursor"]}, headers=ADMIN)["result"]
    third = rpc(paged, "prompts/list", {"cursor": second["nextCursor"]}, headers=ADMIN)["result"]
    assert [[p["name"] for p in page["prompts"]] for page in (first, second, third)] == [
        ["code_review", "plan_trip"], ["greeting", "describe_chart"], ["audit"]]
    assert "nextCursor" not in third
    assert rpc(paged, "prompts/list", {"cursor": "garbage"})["error"]["code"] == -32602
    bob = {"Authorization": "Bearer bob"}
    page = rpc(paged, "prompts/list", headers=bob)["result"]
    page = rpc(paged, "prompts/list", {"cursor": page["nextCursor"]}, headers=bob)["result"]
    assert [p["name"] for p in page["prompts"]] == ["greeting", "describe_chart"] and "nextCursor" not in page
    assert rpc(paged, "prompts/get", {"name": "audit"}, headers=ADMIN)["result"]["messages"][0]["content"] == {
        "type": "text", "text": "List every change made today."}


def test_modern_lists_carry_cache_hints_and_prompts_get_checks_its_routing_header(app) -> None:
    listed = modern(app, "prompts/list").get_json()["result"]
    assert listed["resultType"] == "complete" and listed["ttlMs"] == 0 and listed["cacheScope"] == "private"
    assert "ttlMs" not in rpc(app, "prompts/list")["result"]  # the handshake era has no cache hints
    got = modern(app, "prompts/get", {"name": "greeting"}, name="greeting")
    assert got.status_code == 200 and got.get_json()["result"]["resultType"] == "complete"
    wrong = modern(app, "prompts/get", {"name": "greeting"}, name="code_review")
    assert wrong.status_code == 400 and wrong.get_json()["error"]["code"] == -32020
    unknown = modern(app, "prompts/get", {"name": "nope"}, name="nope")
    assert unknown.status_code == 400 and unknown.get_json()["error"]["code"] == -32602


def test_prompts_get_errors_are_the_specs(app) -> None:
    def error(params: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = rpc(app, "prompts/get", params)["error"]
        return found

    assert error({})["code"] == -32602
    assert error({"name": "code_review"}) == {"code": -32602, "message": "Invalid arguments for prompt "
                                              "'code_review': Missing required argument(s): code.",
                                              "data": {"name": "code_review"}}
    assert error({"name": "code_review", "arguments": {"code": "x", "language": "cobol"}})["code"] == -32602
    assert error({"name": "code_review", "arguments": {"code": "x", "colour": "red"}})["code"] == -32602
    assert error({"name": "code_review", "arguments": ["x"]})["code"] == -32602
    assert error({"name": "plan_trip", "arguments": {"country": "Italy", "city": "Rome", "days": "many"}})[
        "code"] == -32602
    # the prompt's own ToolError: an internal error in its words
    assert error({"name": "plan_trip", "arguments": {"country": "Italy", "city": "Rome", "days": "0"}}) == {
        "code": -32603, "message": "A trip lasts at least one day.", "data": {"name": "plan_trip"}}


def test_a_failing_prompt_is_an_internal_error_without_its_details(make_app, caplog) -> None:
    d = ToolDiscovery()

    @d.prompt
    def broken() -> str:
        """Broken."""
        raise RuntimeError("secret connection string")

    @d.prompt
    def odd() -> object:
        """Returns what no message holds."""
        return {"not": "a message"}

    app = make_app(d, TOOLDISCOVERY_DIALECTS=["mcp"])
    for name in ("broken", "odd"):
        body = rpc(app, "prompts/get", {"name": name}, headers={})
        assert body["error"] == {"code": -32603, "message": "Internal error."}
    assert "secret connection string" in caplog.text  # logged, not sent


def test_completion_caps_at_100_and_says_how_many_there_were(app) -> None:
    def complete(ref: dict[str, Any], name: str, value: str, chosen: dict[str, str] | None = None) -> Any:
        params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
        if chosen is not None:
            params["context"] = {"arguments": chosen}
        return rpc(app, "completion/complete", params)

    trip, reports = {"type": "ref/prompt", "name": "plan_trip"}, {"type": "ref/resource", "uri": "reports://{report_id}"}
    assert complete(trip, "city", "p")["result"]["completion"] == {
        "values": ["Paris", "Parthenay", "Pau", "Palermo", "Parma"], "total": 5, "hasMore": False}
    assert complete(trip, "city", "p", {"country": "Italy"})["result"]["completion"]["values"] == ["Palermo", "Parma"]
    assert complete(trip, "country", "")["result"]["completion"] == {"values": [], "total": 0, "hasMore": False}
    everything = complete(reports, "report_id", "")["result"]["completion"]
    assert len(everything["values"]) == 100 and everything["total"] == 1000 and everything["hasMore"] is True
    kinds = complete({"type": "ref/resource", "uri": "charts://{kind}/{year}"}, "kind", "")
    assert kinds["result"]["completion"]["values"] == ["bar", "line", "pie"]  # read off the Literal
    for ref, name in ((trip, "nope"), ({"type": "ref/prompt", "name": "nope"}, "x"), ({"type": "ref/prompt"}, "x"),
                      ({"type": "ref/resource", "uri": "nope://{x}"}, "x"), (reports, "nope"), ({"type": "x"}, "x"),
                      ({"type": "ref/prompt", "name": "audit"}, "x")):
        assert complete(ref, name, "")["error"]["code"] == -32602, (ref, name)
    assert rpc(app, "completion/complete", {"ref": trip, "argument": {"name": "city"}})["error"]["code"] == -32602


def test_icons_are_shown_on_tools_resources_prompts_and_the_server(app) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert rpc(app, "initialize", init)["result"]["serverInfo"]["icons"] == [
        {"src": "https://example.com/server.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}]
    assert rpc(app, "tools/list")["result"]["tools"][0]["icons"] == [{"src": "https://example.com/add.png"}]
    templates = rpc(app, "resources/templates/list")["result"]["resourceTemplates"]
    assert [t.get("icons") for t in templates] == [None, [{"src": "https://example.com/chart.png"}]]
    assert rpc(app, "prompts/list")["result"]["prompts"][0]["icons"] == [REVIEW_ICON]
    meta = modern(app, "server/discover").get_json()["result"]["_meta"]
    assert meta["io.modelcontextprotocol/serverInfo"]["icons"][0]["src"] == "https://example.com/server.png"


def test_registration_refuses_what_cannot_work() -> None:
    d = ToolDiscovery()

    def review(code: str, language: Literal["python", "rust"] = "python") -> str:
        """Review."""
        return code

    refusals = (
        ({"colour": "red"}, "unknown option"), ({"complete": {"lang": len}}, "not among its arguments"),
        ({"complete": {"code": "python"}}, "not callable"), ({"complete": ["code"]}, "a dict"),
        ({"icons": ["ftp://x/y.png"]}, "a data: URI"),
        ({"icons": [{"src": "https://x/y.png", "theme": "pink"}]}, "theme"),
        ({"scopes": "admin"}, "list of strings"), ({"name": "no spaces"}, "prompt name"))
    for options, said in refusals:
        with pytest.raises(RegistrationError, match=said):
            d.add_prompt(review, **options)
    d.add_prompt(review)
    with pytest.raises(RegistrationError, match="already registered"):
        d.add_prompt(review)
    with pytest.raises(RegistrationError, match="sizes"):
        d.add_tool(review, icons=[{"src": "https://x/y.png", "sizes": ["big"]}])
    with pytest.raises(RegistrationError, match="not among its arguments"):
        d.resource("r://{a}", complete={"b": len})(lambda a: a)
    app = Flask("bad")
    app.config["TOOLDISCOVERY_SERVER_ICONS"] = ["javascript:alert(1)"]
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_SERVER_ICONS"):
        ToolDiscovery(app)
