"""Rich tool results: images, audio, files and resource links, in every dialect.

JSON dialects (opal, oxp, tdp, utcp) send the canonical form ``{"type", "mimeType", "data"}`` (and
``{"type": "resource_link", ...}``) and advertise an output schema those values validate against;
the explorer and MCP send content blocks, MCP in the form the caller's protocol version knows and
without ``structuredContent`` or ``outputSchema``. The official ``mcp`` client, against gunicorn,
gets an ImageContent holding the very bytes, reads a linked resource back, lists resources and
templates, and sees an unknown URI refused; resources are off unless TOOLDISCOVERY_MCP_RESOURCES.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from flask.testing import FlaskClient
from mcp import Client, MCPError

from flask_tooldiscovery import Image, RegistrationError, ToolDiscovery
from tests.apps.rich_app import PDF, PNG, WAV, build
from tests.conformance.drivers import DRIVERS

from .conftest import free_port
from .test_deploy import ROOT, stop, wait_until_up

B64 = {name: base64.b64encode(data).decode() for name, data in (("png", PNG), ("wav", WAV), ("pdf", PDF))}
IMAGE = {"type": "image", "mimeType": "image/png", "data": B64["png"]}
EXPECTED = {
    "chart": IMAGE,
    "snapshot": IMAGE,
    "voice": {"type": "audio", "mimeType": "audio/wav", "data": B64["wav"]},
    "export": {"type": "file", "mimeType": "application/pdf", "data": B64["pdf"], "name": "q3.pdf"},
    "gallery": ["Two pictures:", IMAGE,
                {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG[:20]).decode()}],
    "raw": B64["pdf"],  # bytes without a declared type: base64 text, as before
}
LINK = {"type": "resource_link", "uri": "reports://42", "name": "Report 42", "mimeType": "application/pdf"}
JSON_DIALECTS = ["opal", "oxp", "tdp", "utcp"]


def rpc(client: FlaskClient, method: str, params: dict[str, Any] | None = None, version: str | None = None,
        **headers: str) -> dict[str, Any]:
    if version:
        headers["MCP-Protocol-Version"] = version
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    reply = client.post("/mcp", json=body, headers=headers).get_json()
    assert isinstance(reply, dict)
    return reply


def call(client: FlaskClient, name: str, args: dict[str, Any] | None = None, version: str | None = None) -> Any:
    return rpc(client, "tools/call", {"name": name, "arguments": args or {}}, version)["result"]


@pytest.fixture
def client() -> FlaskClient:
    return build(TOOLDISCOVERY_MCP_RESOURCES=True)[1].test_client()


# -- JSON dialects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", JSON_DIALECTS)
@pytest.mark.parametrize("tool", sorted(EXPECTED))
def test_json_dialects_send_the_canonical_form(client: FlaskClient, dialect: str, tool: str) -> None:
    driver = DRIVERS[dialect]
    tool_id = tool
    if dialect == "oxp":  # OXP calls tools by the id its discovery gives them
        ids = [i["id"] for i in driver.discover(client).get_json()["items"]]
        tool_id = next(i for i in ids if i.split(".", 1)[1].startswith(f"{tool}@"))
        body = {"request": {"tool_id": tool_id, "input": {}}}
        result = driver.result(client.post(driver.call_path(tool), json=body))
    else:
        result = driver.result(driver.call(client, tool, {}))
    assert result.kind == "ok", result.message
    assert result.value == EXPECTED[tool]


@pytest.mark.parametrize("dialect", JSON_DIALECTS)
def test_a_link_is_sent_as_is(client: FlaskClient, dialect: str) -> None:
    driver = DRIVERS[dialect]
    if dialect == "oxp":
        ids = [i["id"] for i in driver.discover(client).get_json()["items"]]
        body = {"request": {"tool_id": next(i for i in ids if ".report_link@" in i), "input": {"report_id": "42"}}}
        result = driver.result(client.post(driver.call_path("report_link"), json=body))
    else:
        result = driver.result(driver.call(client, "report_link", {"report_id": "42"}))
    assert (result.kind, result.value) == ("ok", LINK)


def test_the_advertised_output_schemas_validate_what_is_sent(client: FlaskClient) -> None:
    """OXP and UTCP advertise output schemas: each rich tool's value validates against its own,
    and a declared result_mime_type is fixed in it."""
    oxp = {i["id"].split(".", 1)[1].split("@")[0]: i.get("output_schema") for i in
           client.get("/oxp/tools").get_json()["items"]}
    utcp = {t["name"]: t.get("outputs") for t in client.get("/utcp").get_json()["tools"]}
    for name, value in [*EXPECTED.items(), ("report_link", LINK)]:
        assert oxp[name] == utcp[name]
        jsonschema.validate(value, oxp[name])
    assert oxp["chart"]["properties"]["mimeType"] == {"type": "string", "const": "image/png"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "image", "mimeType": "image/jpeg", "data": ""}, oxp["chart"])


# -- MCP and the explorer --------------------------------------------------------------------------


def test_mcp_lists_no_output_schema_for_rich_results(client: FlaskClient) -> None:
    tools = {t["name"]: t for t in rpc(client, "tools/list")["result"]["tools"]}
    for name in ("chart", "snapshot", "voice", "export", "report_link", "gallery"):
        assert "outputSchema" not in tools[name], name
    assert tools["raw"]["outputSchema"]["properties"]["result"]["contentEncoding"] == "base64"


def test_mcp_content_blocks(client: FlaskClient) -> None:
    for name in ("chart", "snapshot"):
        result = call(client, name, version="2025-06-18")
        assert result == {"content": [{"type": "image", "data": B64["png"], "mimeType": "image/png"}],
                          "isError": False}
    assert call(client, "voice", version="2025-03-26")["content"] == [
        {"type": "audio", "data": B64["wav"], "mimeType": "audio/wav"}]
    assert call(client, "export", version="2025-06-18")["content"] == [
        {"type": "resource", "resource": {"uri": "file:///q3.pdf", "mimeType": "application/pdf", "blob": B64["pdf"]}}]
    assert call(client, "report_link", {"report_id": "42"}, version="2025-06-18")["content"] == [LINK]
    gallery = call(client, "gallery", version="2025-11-25")
    assert [b["type"] for b in gallery["content"]] == ["text", "image", "image"]
    assert gallery["content"][0] == {"type": "text", "text": "Two pictures:"}
    assert "structuredContent" not in gallery


def test_mcp_falls_back_for_versions_without_audio_or_links(client: FlaskClient) -> None:
    voice = call(client, "voice", version="2024-11-05")["content"]
    assert voice == [{"type": "resource", "resource": {"uri": "file:///audio.wav", "mimeType": "audio/wav",
                                                       "blob": B64["wav"]}}]
    for version in ("2024-11-05", "2025-03-26"):
        assert call(client, "report_link", {"report_id": "42"}, version=version)["content"] == [
            {"type": "resource", "resource": {"uri": "reports://42", "mimeType": "text/uri-list",
                                              "text": "reports://42"}}]
    # Without a version header a request speaks 2025-03-26: audio, but no resource links yet.
    assert call(client, "voice")["content"][0]["type"] == "audio"
    assert call(client, "report_link", {"report_id": "42"})["content"][0]["type"] == "resource"


def test_a_plain_dict_that_looks_like_an_image_stays_structured() -> None:
    discovery = ToolDiscovery()

    @discovery.tool
    def lookalike() -> dict:
        """A dict shaped like the canonical form."""
        return dict(IMAGE)

    from flask import Flask

    app = Flask("lookalike")
    app.config["TOOLDISCOVERY_WARN_UNAUTHENTICATED"] = False
    discovery.init_app(app)
    result = call(app.test_client(), "lookalike", version="2025-06-18")
    assert result["content"][0]["type"] == "text"
    assert result["structuredContent"] == IMAGE


def test_the_explorer_call_carries_the_same_content_blocks(client: FlaskClient) -> None:
    body = client.post("/explorer/tools/snapshot/call", json={}).get_json()
    assert body["content"] == [{"type": "image", "data": B64["png"], "mimeType": "image/png"}]
    assert body["isError"] is False and "structuredContent" not in body
    body = client.post("/explorer/tools/report_link/call", json={"report_id": "42"}).get_json()
    assert body["content"] == [LINK]  # the explorer speaks no version: the newest blocks
    body = client.post("/explorer/tools/gallery/call", json={}).get_json()
    assert [b["type"] for b in body["content"]] == ["text", "image", "image"]


# -- MCP resources ---------------------------------------------------------------------------------


def test_resources_are_off_by_default() -> None:
    client = build()[1].test_client()
    init = rpc(client, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}})["result"]
    assert "resources" not in init["capabilities"]
    for method in ("resources/list", "resources/templates/list", "resources/read"):
        error = rpc(client, method, {"uri": "reports://42"})["error"]
        assert error["code"] == -32601, method


def test_resources_read_list_and_refuse(client: FlaskClient) -> None:
    init = rpc(client, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}})["result"]
    assert init["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}
    assert rpc(client, "resources/list")["result"] == {"resources": [
        {"uri": "notes://readme", "name": "readme", "title": "Read me", "mimeType": "text/markdown"}]}
    assert rpc(client, "resources/templates/list")["result"] == {"resourceTemplates": [
        {"uriTemplate": "reports://{report_id}", "name": "report", "description": "A quarterly report.",
         "mimeType": "application/pdf"}]}
    read = rpc(client, "resources/read", {"uri": "reports://42"})["result"]
    assert read == {"contents": [{"uri": "reports://42", "mimeType": "application/pdf", "blob": B64["pdf"]}]}
    assert rpc(client, "resources/read", {"uri": "notes://readme"})["result"]["contents"] == [
        {"uri": "notes://readme", "mimeType": "text/markdown", "text": "# Hello\n"}]
    for uri in ("reports://43", "reports://", "reports://42/more", "nothing://here", "secret://x"):
        error = rpc(client, "resources/read", {"uri": uri}, version="2025-06-18")["error"]
        assert error == {"code": -32002, "message": "Resource not found", "data": {"uri": uri}}, uri
    for params in ({}, {"uri": 42}, {"uri": ""}):
        assert rpc(client, "resources/read", params)["error"]["code"] == -32602


def test_a_2026_read_names_its_uri_in_mcp_name(client: FlaskClient) -> None:
    """2026-07-28: ``Mcp-Name`` mirrors ``resources/read``'s ``uri`` (as for a tool's or prompt's name); a header
    naming another resource, or none, is a routing mismatch (-32020, 400), as the official SDK answers."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "reports://42", "_meta": meta}}
    routing = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read"}
    read = client.post("/mcp", json=body, headers={**routing, "Mcp-Name": "reports://42"})
    assert read.status_code == 200 and read.get_json()["result"]["contents"][0]["uri"] == "reports://42"
    encoded = "=?base64?cmVwb3J0czovLzQy?="  # the same URI in the header's base64 form
    assert client.post("/mcp", json=body, headers={**routing, "Mcp-Name": encoded}).status_code == 200
    for name in ("reports://43", None):
        headers = {**routing, **({"Mcp-Name": name} if name else {})}
        refused = client.post("/mcp", json=body, headers=headers)
        assert refused.status_code == 400, name
        assert refused.get_json()["error"] == {
            "code": -32020, "message": "Mcp-Name header does not match the request body's 'uri' parameter"}


def test_resources_follow_the_identity_layer() -> None:
    client = build(TOOLDISCOVERY_MCP_RESOURCES=True, identity=True)[1].test_client()
    assert client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                                     "params": {"uri": "notes://readme"}}).status_code == 401
    alice = {"X-User": "alice"}
    assert rpc(client, "resources/read", {"uri": "secret://key"}, **alice)["error"]["code"] == -32002
    assert [t["name"] for t in rpc(client, "resources/templates/list", **alice)["result"]["resourceTemplates"]] \
        == ["report"]
    allowed = {"X-User": "alice", "X-Scopes": "secrets:read"}
    assert [t["name"] for t in rpc(client, "resources/templates/list", **allowed)["result"]["resourceTemplates"]] \
        == ["report", "secret"]
    assert rpc(client, "resources/read", {"uri": "secret://key"}, **allowed)["result"]["contents"] == [
        {"uri": "secret://key", "mimeType": "text/plain", "text": "key for alice"}]


# -- registration ----------------------------------------------------------------------------------


def test_registration_refuses_what_cannot_work() -> None:
    discovery = ToolDiscovery()
    with pytest.raises(RegistrationError, match="result_mime_type"):
        discovery.tool(result_mime_type="png")(lambda: b"")
    with pytest.raises(RegistrationError, match="not in the URI"):
        discovery.resource("reports://{report_id}")(lambda report_id, other: b"")
    with pytest.raises(RegistrationError, match="no parameter for report_id"):
        discovery.resource("reports://{report_id}")(lambda: b"")
    with pytest.raises(RegistrationError, match="absolute"):
        discovery.resource("reports")(lambda: b"")
    with pytest.raises(RegistrationError, match="mime_type"):
        discovery.resource("a://b", mime_type="pdf")(lambda: b"")
    discovery.resource("a://b")(lambda: b"")
    with pytest.raises(RegistrationError, match="already registered"):
        discovery.resource("a://b")(lambda: b"")
    with pytest.raises(ValueError, match="image/"):
        Image(PNG, "application/pdf")
    with pytest.raises(TypeError):
        Image("not bytes", "image/png")  # type: ignore[arg-type]


# -- the official client against gunicorn ----------------------------------------------------------


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[bool, str]]:
    """Two gunicorn servers of the app: resources on (True) and left at their default (False)."""
    procs, urls = [], {}
    log_dir = tmp_path_factory.mktemp("rich")
    try:
        for resources in (True, False):
            port = free_port()
            log = open(log_dir / f"gunicorn-{resources}.log", "w")  # noqa: SIM115 (closed with the process)
            procs.append((subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "--workers", "2", "--worker-class", "gthread", "--threads", "2",
                 "--bind", f"127.0.0.1:{port}", f"tests.apps.rich_app:create_app(resources={resources})"],
                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=log, stderr=subprocess.STDOUT), log))
            urls[resources] = f"http://127.0.0.1:{port}"
        for (proc, _), url in zip(procs, urls.values(), strict=True):
            wait_until_up(url + "/oxp/health", proc)
        yield urls
    finally:
        for proc, log in procs:
            stop(proc)
            log.close()


async def _session(url: str, mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(f"{url}/mcp", mode=mode) as client:  # type: ignore[arg-type]
        out["version"] = client.protocol_version
        for name, args in (("chart", {}), ("snapshot", {}), ("voice", {}), ("export", {}), ("gallery", {}),
                           ("raw", {}), ("report_link", {"report_id": "42"})):
            out[name] = await client.call_tool(name, args)
        link = out["report_link"].content[0]
        out["read"] = await client.read_resource(str(link.uri))
        out["resources"] = await client.list_resources()
        out["templates"] = await client.list_resource_templates()
        try:
            await client.read_resource("reports://404")
        except MCPError as exc:
            out["unknown"] = exc
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_gets_rich_content_and_reads_links(servers: dict[bool, str], mode: str) -> None:
    out = asyncio.run(_session(servers[True], mode))
    assert out["version"] == {"legacy": "2025-11-25", "auto": "2026-07-28"}[mode]
    for name in ("chart", "snapshot"):
        result = out[name]
        assert result.is_error is False and result.structured_content is None
        (block,) = result.content
        assert block.type == "image" and block.mime_type == "image/png"
        assert base64.b64decode(block.data) == PNG
    (audio,) = out["voice"].content
    assert (audio.type, audio.mime_type, base64.b64decode(audio.data)) == ("audio", "audio/wav", WAV)
    (file,) = out["export"].content
    assert file.type == "resource" and file.resource.mime_type == "application/pdf"
    assert base64.b64decode(file.resource.blob) == PDF and str(file.resource.uri) == "file:///q3.pdf"
    assert [b.type for b in out["gallery"].content] == ["text", "image", "image"]
    assert out["raw"].is_error is False and out["raw"].structured_content == {"result": B64["pdf"]}
    (link,) = out["report_link"].content
    assert (link.type, str(link.uri), link.name, link.mime_type) == \
        ("resource_link", "reports://42", "Report 42", "application/pdf")
    (contents,) = out["read"].contents
    assert base64.b64decode(contents.blob) == PDF and contents.mime_type == "application/pdf"
    assert [str(r.uri) for r in out["resources"].resources] == ["notes://readme"]
    assert [t.uri_template for t in out["templates"].resource_templates] == ["reports://{report_id}"]
    unknown = out["unknown"]
    # 2026-07-28 (SEP-2164) answers -32602; the handshake versions the spec's -32002.
    assert unknown.error.code == (-32602 if out["version"] == "2026-07-28" else -32002)
    assert unknown.error.data == {"uri": "reports://404"}


async def _without_resources(url: str) -> tuple[Any, MCPError | None]:
    async with Client(f"{url}/mcp", mode="legacy") as client:
        capabilities = client.server_capabilities
        try:
            await client.list_resources()
        except MCPError as exc:
            return capabilities, exc
    return capabilities, None


@pytest.mark.slow
def test_the_official_client_finds_resources_off_by_default(servers: dict[bool, str]) -> None:
    capabilities, error = asyncio.run(_without_resources(servers[False]))
    assert capabilities is not None and capabilities.resources is None
    assert error is not None and error.error.code == -32601


def test_the_manifest_shows_the_resources_capability_when_on() -> None:
    for on in (True, False):
        client = build(TOOLDISCOVERY_MCP_RESOURCES=on)[1].test_client()
        capabilities = client.get("/.well-known/tool-discovery").get_json()["mcp"]["capabilities"]
        assert ("resources" in capabilities) is on


def test_resource_templates_async_functions_and_failures(caplog: pytest.LogCaptureFixture) -> None:
    from flask import Flask

    from flask_tooldiscovery import ToolError

    discovery = ToolDiscovery()

    @discovery.resource("files://{+path}", mime_type="text/plain")
    async def file(path: str) -> str:
        return f"contents of {path}"

    @discovery.resource("users://{user}/avatar")
    def avatar(user: str) -> Image:
        if user == "ghost":
            raise ToolError("That user has no avatar.")
        if user == "boom":
            raise RuntimeError("secret database password in this message")
        return Image(PNG, "image/png")

    app = Flask("templates")
    app.config.update(TOOLDISCOVERY_MCP_RESOURCES=True, TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    discovery.init_app(app)
    client = app.test_client()
    assert rpc(client, "resources/read", {"uri": "files://a/b%20c.txt"})["result"]["contents"] == [
        {"uri": "files://a/b%20c.txt", "mimeType": "text/plain", "text": "contents of a/b c.txt"}]
    assert rpc(client, "resources/read", {"uri": "users://ann%2Fbob/avatar"})["result"]["contents"] == [
        {"uri": "users://ann%2Fbob/avatar", "mimeType": "image/png", "blob": B64["png"]}]
    assert rpc(client, "resources/read", {"uri": "users://ann/bob/avatar"})["error"]["code"] == -32002
    assert rpc(client, "resources/read", {"uri": "users://ghost/avatar"})["error"] == {
        "code": -32603, "message": "That user has no avatar.", "data": {"uri": "users://ghost/avatar"}}
    error = rpc(client, "resources/read", {"uri": "users://boom/avatar"})["error"]
    assert error["code"] == -32603 and "secret" not in str(error)
    assert "secret database password" in caplog.text  # logged, not sent


def test_replay_reads_rich_results_back_from_content_blocks() -> None:
    """``flask tools check --replay``: MCP and the explorer send blocks, the JSON dialects the
    canonical form; the same value read back from both, so they agree."""
    discovery, app = build()
    for name in ("snapshot", "voice", "export", "gallery", "report_link"):
        tool = next(t for t in discovery.registry.resolve() if t.name == name)
        tool.examples.append({"input": {"report_id": "42"} if name == "report_link" else {}})
    result = app.test_cli_runner().invoke(args=["tools", "check", "--replay"])
    assert "Every replayed example agrees across the dialects" in result.output, result.output
