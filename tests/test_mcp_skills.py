"""The Skills extension (SEP-2640) over MCP: skills from a folder (TOOLDISCOVERY_SKILLS_DIR) and from
``@discovery.skill``, listed and got as the extension's ``Skill`` entries, their files read with
``resources/read`` and verified by digest and size as a host does, with the official client."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from pathlib import Path
from typing import Any, Literal

import pytest
from flask import Flask

from flask_tooldiscovery import RegistrationError, SettingsError, ToolDiscovery

from .conftest import live_server

MODERN = "2026-07-28"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
                       "rkJggg==")
GIT = "---\nname: git-workflow\ndescription: Follow this team's Git conventions\n---\n\n# Git\n\nRebase, then merge.\n"
REFUNDS = ("---\nname: refunds\ndescription: Process customer refund requests per company policy\nlicense: Apache-2.0\n"
           "metadata:\n  version: '2.1'\n  owners: [billing]\n---\n\nRead `examples/email.md` first.\n")


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    (tmp_path / "git-workflow").mkdir()
    (tmp_path / "git-workflow" / "SKILL.md").write_text(GIT)
    refunds = tmp_path / "acme" / "billing" / "refunds"
    (refunds / "examples").mkdir(parents=True)
    (refunds / "SKILL.md").write_text(REFUNDS)
    (refunds / "examples" / "email.md").write_text("Dear customer, ...\n")
    (refunds / "logo.png").write_bytes(PNG)
    (refunds / ".cache").mkdir()
    (refunds / ".cache" / "junk").write_text("not a file of the skill")
    return tmp_path


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @d.skill(path="reports/daily", frontmatter={"license": "MIT"})
    def daily() -> str:
        """Assemble today's operational report from live data.

        More words that stay out of the description."""
        return "# Daily report\n\nCall `add` for the totals.\n"

    return d


@pytest.fixture
def app(discovery: ToolDiscovery, skills_dir: Path, make_app: Any) -> Flask:
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                    TOOLDISCOVERY_SKILLS_DIR=str(skills_dir), TOOLDISCOVERY_MCP_PAGE_SIZE=2)


def rpc(app: Flask, method: str, params: dict[str, Any] | None = None, modern: bool = True) -> Any:
    params = dict(params or {})
    headers = {"Accept": "application/json, text/event-stream"}
    if modern:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {}}
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
        if method == "resources/read":  # the official SDK mirrors the URI as Mcp-Name
            headers["Mcp-Name"] = params["uri"]
    return app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                                  headers=headers)


def digest(data: bytes) -> dict[str, Any]:
    return {"digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def test_skills_list_pages_through_complete_entries(app) -> None:
    first = rpc(app, "skills/list").json["result"]
    second = rpc(app, "skills/list", {"cursor": first["nextCursor"]}).json["result"]
    assert first["resultType"] == "complete" and first["ttlMs"] == 0 and first["cacheScope"] == "private"
    assert "nextCursor" not in second
    skills = first["skills"] + second["skills"]
    assert [s["uri"] for s in skills] == ["skill://reports/daily/SKILL.md", "skill://acme/billing/refunds/SKILL.md",
                                          "skill://git-workflow/SKILL.md"]
    daily, refunds, git = skills
    assert daily == {"uri": "skill://reports/daily/SKILL.md", "resources": "dynamic", "frontmatter": {
        "license": "MIT", "name": "daily", "description": "Assemble today's operational report from live data."}}
    assert refunds["frontmatter"] == {"name": "refunds", "description": "Process customer refund requests per "
                                      "company policy", "license": "Apache-2.0",
                                      "metadata": {"version": "2.1", "owners": ["billing"]}}
    base = "skill://acme/billing/refunds/"
    assert refunds["resources"] == [
        {"uri": base + "SKILL.md", **digest(REFUNDS.encode())},
        {"uri": base + "examples/email.md", **digest(b"Dear customer, ...\n")},
        {"uri": base + "logo.png", **digest(PNG)}]
    assert git["resources"] == [{"uri": "skill://git-workflow/SKILL.md", **digest(GIT.encode())}]


def test_files_read_as_the_bytes_their_digest_covers(app) -> None:
    def read(uri: str, modern: bool = True) -> dict[str, Any]:
        return rpc(app, "resources/read", {"uri": uri}, modern).json["result"]["contents"][0]

    assert read("skill://git-workflow/SKILL.md") == {"uri": "skill://git-workflow/SKILL.md",
                                                     "mimeType": "text/markdown", "text": GIT}
    logo = read("skill://acme/billing/refunds/logo.png", modern=False)
    assert logo["mimeType"] == "image/png" and base64.b64decode(logo["blob"]) == PNG
    daily = read("skill://reports/daily/SKILL.md")["text"]
    assert daily.startswith('---\nlicense: "MIT"\nname: "daily"\ndescription: "Assemble today')
    assert daily.endswith("---\n\n# Daily report\n\nCall `add` for the totals.\n")
    import yaml

    assert yaml.safe_load(daily.split("---")[1]) == rpc(app, "skills/get", {
        "uri": "skill://reports/daily/SKILL.md"}).json["result"]["skill"]["frontmatter"]


def test_the_extension_is_declared_with_the_resources_capability(app) -> None:
    discovered = rpc(app, "server/discover").json["result"]["capabilities"]
    assert discovered["extensions"]["io.modelcontextprotocol/skills"] == {}
    assert "io.modelcontextprotocol/tasks" in discovered["extensions"]
    assert "resources" in discovered
    listed = rpc(app, "resources/list").json["result"]["resources"]
    assert {"uri": "skill://git-workflow/SKILL.md", "name": "git-workflow", "mimeType": "text/markdown",
            "description": "Follow this team's Git conventions"} in listed
    assert rpc(app, "resources/templates/list").json["result"]["resourceTemplates"] == []


@pytest.mark.parametrize(("method", "params", "code", "words"), [
    ("skills/get", {"uri": "skill://acme/billing/chargebacks/SKILL.md"}, -32602,
     "No skill is served at skill://acme/billing/chargebacks/SKILL.md"),
    ("skills/get", {"uri": "skill://acme/billing/refunds/examples/email.md"}, -32602, "No skill is served"),
    ("skills/get", {}, -32602, "params.uri"),
    ("skills/list", {"cursor": "nope"}, -32602, "Invalid cursor"),
    ("resources/read", {"uri": "skill://acme/billing/refunds/.cache/junk"}, -32602, "Resource not found"),
    ("resources/read", {"uri": "skill://acme/billing/refunds/../../../etc/passwd"}, -32602, "Resource not found"),
])
def test_what_is_not_served_is_a_clear_error(app, method, params, code, words) -> None:
    response = rpc(app, method, params)
    assert response.status_code == 400
    assert response.json["error"]["code"] == code and words in response.json["error"]["message"]


def test_without_skills_nothing_is_declared(make_app) -> None:
    app = make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    assert "extensions" not in rpc(app, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                       "clientInfo": {"name": "t", "version": "1"}},
                                   modern=False).json["result"]["capabilities"]
    assert rpc(app, "skills/list").json["error"]["code"] == -32601


@pytest.mark.parametrize(("files", "words"), [
    ({"x/SKILL.md": "# no frontmatter\n"}, "does not begin with YAML frontmatter"),
    ({"x/SKILL.md": "---\nname: x\n---\n"}, "needs 'description'"),
    ({"x/SKILL.md": "---\nname: y\ndescription: d\n---\n"}, "last path segment must be its name 'y'"),
    ({"Bad_Name/SKILL.md": "---\nname: Bad_Name\ndescription: d\n---\n"}, "breaks the Agent Skills rule"),
    ({"x/SKILL.md": "---\nname: [x\ndescription: d\n---\n"}, "not valid YAML"),
])
def test_a_broken_skill_folder_fails_at_start_naming_the_file(tmp_path, make_app, files, words) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_SKILLS_DIR") as caught:
        make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_SKILLS_DIR=str(tmp_path))
    assert words in str(caught.value)
    with pytest.raises(SettingsError, match="is not a directory"):
        make_app(ToolDiscovery(), TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_SKILLS_DIR=str(tmp_path / "nope"))


def test_a_skill_function_needs_a_good_name_and_a_description() -> None:
    d = ToolDiscovery()
    with pytest.raises(RegistrationError, match="needs a description"):
        d.skill(lambda: "body")
    with pytest.raises(RegistrationError, match="Agent Skills rule"):
        d.skill(name="Not OK", description="d")(lambda: "body")


def test_the_official_client_lists_gets_reads_and_verifies_like_a_host(app) -> None:
    from mcp import Client
    from mcp_types import Request, RequestParams, Result

    class SkillsListRequest(Request[RequestParams | None, Literal["skills/list"]]):
        method: Literal["skills/list"] = "skills/list"
        params: RequestParams | None = None

    class GetParams(RequestParams):
        uri: str

    class SkillsGetRequest(Request[GetParams, Literal["skills/get"]]):
        method: Literal["skills/get"] = "skills/get"

    class Listed(Result):
        skills: list[dict[str, Any]]
        next_cursor: str | None = None

    class Got(Result):
        skill: dict[str, Any]

    async def run(url: str) -> dict[str, Any]:
        async with Client(url) as client:
            caps = client.server_capabilities
            listed = await client.session.send_request(SkillsListRequest(), Listed)
            entry = (await client.session.send_request(
                SkillsGetRequest(params=GetParams(uri="skill://acme/billing/refunds/SKILL.md")), Got)).skill
            verified = []
            for resource in entry["resources"]:  # what a host does with each file it loads
                content = (await client.read_resource(resource["uri"])).contents[0]
                data = content.text.encode() if hasattr(content, "text") else base64.b64decode(content.blob)
                verified.append(digest(data) == {"digest": resource["digest"], "size": resource["size"]})
            return {"version": client.protocol_version, "extensions": caps.extensions,
                    "first_page": [s["uri"] for s in listed.skills], "verified": verified}

    with live_server(app) as url:
        out = asyncio.run(run(url + "/mcp"))
    assert out["version"] == MODERN
    assert "io.modelcontextprotocol/skills" in (out["extensions"] or {})
    assert out["first_page"] == ["skill://reports/daily/SKILL.md", "skill://acme/billing/refunds/SKILL.md"]
    assert out["verified"] == [True, True, True]
