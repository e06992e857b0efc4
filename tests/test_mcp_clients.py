"""Dialect mcp against the real clients people use today, each in its own fresh environment (they pin
incompatible ``mcp`` releases): the official Python SDK 1.9, 1.12, 1.30 and 2.x, fastmcp 2 and 4,
pydantic-ai, openai-agents, langchain-mcp-adapters, mcp-use, and the TypeScript SDK v1 and v2. Each
lists the tools of a live server and calls a sync tool (a number), an async tool (a dict) and one that
raises ``ToolError``, which the client must see as an error result. Only the frameworks' MCP-client
layers run: no model, and no traffic beyond 127.0.0.1.

Every environment is built once per session under pytest's tmp area, all of them in parallel, and
each client runs once there; its tests share that run. An install that fails (a registry error)
skips locally and fails when ``CI`` is set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery, ToolError
from flask_tooldiscovery.dialects.mcp.revisions import SUPPORTED as ALL_VERSIONS

from .conftest import live_server

pytestmark = pytest.mark.slow

MARKER = "@@result "
INSTALL_TIMEOUT = 900
RUN_TIMEOUT = 180

# What every Python client script starts with: the URL, a CallToolResult of either SDK generation
# reduced to {error, text, value}, the three calls, and one marked line of JSON on stdout.
PRELUDE = '''
import asyncio
import json
import sys
from importlib import metadata

URL = sys.argv[1]
VERSIONS = {dist: metadata.version(dist) for dist in sys.argv[2:]}


def attr(obj, *names):
    for name in names:
        if obj is not None and hasattr(obj, name):
            return getattr(obj, name)
    return None


def parse(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def shape(result):
    text = "\\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    structured = attr(result, "structured_content", "structuredContent")
    return {"error": bool(attr(result, "is_error", "isError")), "text": text,
            "value": structured if structured is not None else parse(text)}


def failure(exc, text=None):
    return {"error": True, "raised": type(exc).__name__, "text": str(exc) if text is None else text}


async def calls(call):
    return {"add": await call("add", {"a": 2, "b": 3}),
            "forecast": await call("forecast", {"city": "Oslo"}),
            "failed": await call("forecast", {"city": "Atlantis"})}


def emit(out):
    print("@@result " + json.dumps({**out, "versions": VERSIONS}), flush=True)
'''

SDK_V1 = '''
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main():
    async with streamablehttp_client(URL) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            listed = await session.list_tools()

            async def call(name, args):
                return shape(await session.call_tool(name, args))

            return {"protocol": init.protocolVersion, "server": init.serverInfo.name,
                    "tools": [t.name for t in listed.tools], **await calls(call)}


emit(asyncio.run(main()))
'''

SDK_V2 = '''
from mcp import Client


async def session(mode):
    async with Client(URL, mode=mode) as client:
        listed = await client.list_tools()

        async def call(name, args):
            return shape(await client.call_tool(name, args))

        info = client.server_info
        return {"protocol": client.protocol_version, "server": info.name if info else None,
                "tools": [t.name for t in listed.tools], **await calls(call)}


async def main():
    return {**await session("auto"), "legacy": await session("legacy")}


emit(asyncio.run(main()))
'''

FASTMCP = '''
import inspect

from fastmcp import Client
from fastmcp.exceptions import ToolError


async def session(**options):
    async with Client(URL, **options) as client:
        tools = await client.list_tools()

        async def call(name, args):
            try:
                result = await client.call_tool(name, args)
            except ToolError as exc:  # fastmcp raises on isError unless raise_on_error=False
                return failure(exc)
            return {**shape(result), "data": repr(result.data)}

        init = attr(client, "initialize_result")
        return {"protocol": attr(client, "protocol_version") or attr(init, "protocolVersion"),
                "tools": [t.name for t in tools], **await calls(call)}


async def main():
    out = await session()
    if "mode" in inspect.signature(Client).parameters:  # fastmcp 4: "auto" by default, and the handshake era
        out["legacy"] = await session(mode="legacy")
    return out


emit(asyncio.run(main()))
'''

PYDANTIC_AI = '''
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset


async def main():
    toolset = MCPToolset(URL)
    async with toolset:
        tools = await toolset.list_tools()

        async def call(name, args):
            try:  # what the agent hands the model: the mapped value, or ModelRetry for isError
                return {"error": False, "value": await toolset.direct_call_tool(name, args)}
            except ModelRetry as exc:
                return failure(exc, exc.message)

        return {"protocol": attr(toolset.client, "protocol_version"),
                "tools": [t.name for t in tools], **await calls(call)}


emit(asyncio.run(main()))
'''

OPENAI_AGENTS = '''
from agents.mcp import MCPServerStreamableHttp


async def main():
    async with MCPServerStreamableHttp(params={"url": URL}, name="ours") as server:
        tools = await server.list_tools()

        async def call(name, args):
            return shape(await server.call_tool(name, args))

        protocol = attr(server.session, "protocol_version") or attr(server.server_initialize_result,
                                                                       "protocol_version", "protocolVersion")
        return {"protocol": protocol, "tools": [t.name for t in tools], **await calls(call)}


emit(asyncio.run(main()))
'''

LANGCHAIN = '''
from langchain_mcp_adapters.client import MultiServerMCPClient


async def main():
    client = MultiServerMCPClient({"ours": {"url": URL, "transport": "streamable_http"}})
    tools = {t.name: t for t in await client.get_tools()}

    async def call(name, args):  # a model's tool call, answered with a ToolMessage
        message = await tools[name].ainvoke({"type": "tool_call", "id": "1", "name": name, "args": args})
        content = message.content
        text = content if isinstance(content, str) else "\\n".join(b["text"] for b in content if b["type"] == "text")
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        structured = artifact.get("structured_content")
        return {"error": message.status == "error", "text": text,
                "value": structured if structured is not None else parse(text)}

    return {"protocol": None, "tools": list(tools), **await calls(call)}


emit(asyncio.run(main()))
'''

MCP_USE = '''
from mcp_use import MCPClient


async def main():
    client = MCPClient.from_dict({"mcpServers": {"ours": {"url": URL}}})
    try:
        session = await client.create_session("ours")
        tools = await session.list_tools()

        async def call(name, args):
            return shape(await session.call_tool(name, args))

        return {"protocol": None, "tools": [t.name for t in tools], **await calls(call)}
    finally:
        await client.close_all_sessions()


emit(asyncio.run(main()))
'''

TS_PRELUDE = '''
import { readFileSync } from "node:fs";

const url = new URL(process.argv[2]);
const pkg = process.argv[3];
const installed = JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url)));
const shape = (result) => {
  const text = result.content.filter((c) => c.type === "text").map((c) => c.text).join("\\n");
  let value = result.structuredContent;
  if (value === undefined) { try { value = JSON.parse(text); } catch { value = text; } }
  return { error: Boolean(result.isError), text, value };
};
const calls = async (client) => ({
  add: shape(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })),
  forecast: shape(await client.callTool({ name: "forecast", arguments: { city: "Oslo" } })),
  failed: shape(await client.callTool({ name: "forecast", arguments: { city: "Atlantis" } })),
});
const emit = (out) => console.log("@@result " + JSON.stringify({ ...out, versions: { [pkg]: installed.version } }));
'''

TS_V1 = TS_PRELUDE + '''
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "flask-tooldiscovery-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(url);
await client.connect(transport);
const listed = await client.listTools();
const out = { protocol: transport.protocolVersion, server: client.getServerVersion()?.name,
              tools: listed.tools.map((t) => t.name), ...(await calls(client)) };
await client.close();
emit(out);
'''

TS_V2 = TS_PRELUDE + '''
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

async function session(mode) {
  const client = new Client({ name: "flask-tooldiscovery-test", version: "1.0.0" },
                            { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(url));
  const listed = await client.listTools();
  const out = { protocol: client.getNegotiatedProtocolVersion(), server: client.getServerVersion()?.name,
                tools: listed.tools.map((t) => t.name), ...(await calls(client)) };
  await client.close();
  return out;
}
emit({ ...(await session("auto")), legacy: await session("legacy") });
'''


@dataclass(frozen=True)
class Spec:
    """One client: what to install (pip requirements, or npm packages), what to report the version
    of, its script, and the protocol version(s) it must settle on (``None``: not reported)."""

    install: tuple[str, ...]
    report: tuple[str, ...]
    script: str
    protocols: tuple[str | None, ...]
    node: bool = False


# Exact pins, checked on the registries. Notes on the choices:
# - mcp 1.9.4 and 1.12.4 (the newest patches of 1.9 and 1.12) import a private pydantic helper that
#   pydantic 2.14 removed, so they get the newest pydantic they import with, 2.13.5 (a user's lockfile
#   from their era has an older one still). 1.30.0 exists and is the newest 1.x.
# - fastmcp 4.1.6 (the newest) cannot install: its server extra wants certifi>=2026.10.19, which is
#   not published. Its client is fastmcp-slim[client] at the same version, tested here as fastmcp 4;
#   fastmcp 2.14.7 (the newest 2.x, on mcp 1.x) installs whole.
# - The frameworks are pinned; the mcp release they pull in floats, as it does for their users.
CLIENTS: dict[str, Spec] = {
    "mcp-1.9": Spec(("mcp==1.9.4", "pydantic==2.13.5"), ("mcp", "pydantic"), SDK_V1, ("2025-03-26",)),
    "mcp-1.12": Spec(("mcp==1.12.4", "pydantic==2.13.5"), ("mcp", "pydantic"), SDK_V1, ("2025-06-18",)),
    "mcp-1.30": Spec(("mcp==1.30.0",), ("mcp",), SDK_V1, ("2025-11-25",)),
    "mcp-2": Spec(("mcp==2.3.0",), ("mcp",), SDK_V2, ("2026-07-28", "2025-11-25")),
    "fastmcp-2": Spec(("fastmcp==2.14.7",), ("fastmcp", "mcp"), FASTMCP, ("2025-11-25",)),
    "fastmcp-4": Spec(("fastmcp-slim[client]==4.1.6",), ("fastmcp-slim", "mcp"), FASTMCP,
                      ("2026-07-28", "2025-11-25")),
    "pydantic-ai": Spec(("pydantic-ai-slim[mcp]==2.68.0",), ("pydantic-ai-slim", "fastmcp-slim", "mcp"),
                        PYDANTIC_AI, (None,)),
    "openai-agents": Spec(("openai-agents==0.24.0",), ("openai-agents", "mcp"), OPENAI_AGENTS, (None,)),
    "langchain-mcp-adapters": Spec(("langchain-mcp-adapters==0.3.2",), ("langchain-mcp-adapters", "mcp"),
                                   LANGCHAIN, (None,)),
    "mcp-use": Spec(("mcp-use==1.7.1",), ("mcp-use", "mcp"), MCP_USE, (None,)),
    "typescript-sdk": Spec(("@modelcontextprotocol/sdk@1.32.2",), ("@modelcontextprotocol/sdk",), TS_V1,
                           ("2025-11-25",), node=True),
    "typescript-sdk-2": Spec(("@modelcontextprotocol/client@2.4.0",), ("@modelcontextprotocol/client",), TS_V2,
                             ("2026-07-28", "2025-11-25"), node=True),
}

#: The clients' environment: no telemetry, and any request not to 127.0.0.1 goes to a dead proxy.
CLIENT_ENV = {"MCP_USE_ANONYMIZED_TELEMETRY": "false", "OPENAI_AGENTS_DISABLE_TRACING": "1",
              "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false", "FASTMCP_CHECK_FOR_UPDATES": "off",
              "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
              "NO_PROXY": "127.0.0.1,localhost", "PYTHONUNBUFFERED": "1"}


class InstallFailed(Exception):
    """pip or npm could not install a client (a registry error, an unresolvable pin)."""


@dataclass
class Run:
    """One client's run: its parsed output, or why it gave none."""

    out: dict[str, Any] | None
    log: str


def sh(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        return -1, f"timed out after {timeout} s\n{exc.output or ''}"
    except OSError as exc:  # no such program
        return 127, str(exc)
    return proc.returncode, proc.stdout


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def install(name: str, spec: Spec, root: Path) -> list[str]:
    """A fresh environment for one client; the command that runs its script."""
    home = root / name
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    if spec.node:
        (home / "package.json").write_text('{"private": true, "type": "module"}\n')
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(home), *spec.install]
        script, runner = home / "client.mjs", ["node"]
    else:
        venv.create(home, clear=True)  # no pip of its own: this pip installs into it (--python)
        python = str(home / "bin" / "python")
        cmd = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile",
               "--disable-pip-version-check", *spec.install]
        script, runner = home / "client.py", [python]
    code, log = sh(cmd, home, INSTALL_TIMEOUT, base_env())
    if code != 0:
        errors = [line for line in log.splitlines() if "ERR" in line[:10]] or log.splitlines()[-5:]
        raise InstallFailed(f"{' '.join(spec.install)}: exit {code}: " + "\n".join(errors)[-1500:])
    script.write_text(spec.script if spec.node else PRELUDE + spec.script)
    return [*runner, str(script)]


def run_client(name: str, spec: Spec, root: Path, url: str) -> Run:
    command = install(name, spec, root)
    code, log = sh([*command, url, *spec.report], root / name, RUN_TIMEOUT, {**base_env(), **CLIENT_ENV})
    lines = [line[len(MARKER):] for line in log.splitlines() if line.startswith(MARKER)]
    if code != 0 or not lines:
        return Run(None, f"exit {code}\n{log[-6000:]}")  # its environment stays, to look into
    shutil.rmtree(root / name, ignore_errors=True)
    return Run(json.loads(lines[-1]), log)


def make_app() -> Flask:
    """The server under test: a sync tool, an async tool, and a ToolError."""
    discovery = ToolDiscovery()

    @discovery.tool(annotations={"readOnlyHint": True, "title": "Adder"})
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @discovery.tool
    async def forecast(city: str) -> dict:
        """Forecast for a city."""
        if city == "Atlantis":
            raise ToolError("Unknown city: Atlantis", additional_prompt_content="Try a real city.")
        return {"city": city, "temp": 12.5}

    app = Flask("clients")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_SERVER_NAME="acme-mcp")
    discovery.init_app(app)
    return app


@pytest.fixture(scope="session")
def client_runs(request, tmp_path_factory) -> Iterator[dict[str, Future[Run]]]:
    """Every selected client installed and run once, all in parallel, against one live server
    (an environment that ran its client is removed; one that failed stays, to look into)."""
    here = Path(__file__)
    wanted = [name for name in CLIENTS if any(
        getattr(item, "path", None) == here and getattr(item, "callspec", None) is not None
        and item.callspec.params.get("client") == name for item in request.session.items)]
    root = tmp_path_factory.mktemp("mcp-clients")
    with live_server(make_app()) as base:
        with ThreadPoolExecutor(max_workers=max(1, min(len(wanted), 12))) as pool:
            runs = {name: pool.submit(run_client, name, CLIENTS[name], root, f"{base}/mcp") for name in wanted}
            yield runs
            for future in runs.values():
                future.cancel()


@pytest.fixture(params=list(CLIENTS))
def client(request) -> str:
    return request.param


@pytest.fixture
def sessions(client, client_runs) -> list[tuple[str | None, dict[str, Any]]]:
    """(expected protocol version, output) for each session the client opened."""
    spec = CLIENTS[client]
    missing = next((f"{tool} is not installed" for tool in ("node", "npm") if shutil.which(tool) is None), None)
    if spec.node and missing:
        if os.environ.get("CI"):
            pytest.fail(f"{client} cannot run in CI: {missing}")
        pytest.skip(missing)
    try:
        run = client_runs[client].result()
    except InstallFailed as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{client} did not install: {exc}")
        pytest.skip(f"{client} did not install: {exc}")
    assert run.out is not None, f"{client} failed against our server:\n{run.log}"
    out = run.out
    print(f"{client}: {out['versions']}")
    found = [(spec.protocols[0], out)]
    if "legacy" in out:
        found.append((spec.protocols[1], out["legacy"]))
    assert len(found) == len(spec.protocols), out
    return found


def test_connects_and_lists_tools(client, sessions) -> None:
    for protocol, out in sessions:
        assert out["tools"] == ["add", "forecast"]
        if protocol is not None:
            assert out["protocol"] == protocol
        assert out["protocol"] in (*ALL_VERSIONS, None)
        if "server" in out:
            assert out["server"] == "acme-mcp"


def pinned(requirement: str) -> tuple[str, str]:
    """``name[extra]==1.2`` or ``@scope/name@1.2`` as (name, version)."""
    name, _, version = requirement.rpartition("@") if requirement.startswith("@") else requirement.partition("==")
    return name.split("[")[0], version


def test_installed_the_pinned_version(client, sessions) -> None:
    versions = sessions[0][1]["versions"]
    for requirement in CLIENTS[client].install:
        name, version = pinned(requirement)
        assert versions[name] == version, (requirement, versions)


def test_calls_a_sync_and_an_async_tool(client, sessions) -> None:
    for _, out in sessions:
        assert out["add"]["error"] is False
        assert out["add"]["value"] in (5, {"result": 5}), out["add"]  # pydantic-ai unwraps {"result": ...}
        assert out["forecast"]["error"] is False
        assert out["forecast"]["value"] == {"city": "Oslo", "temp": 12.5}


def test_tool_error_is_an_error_result(client, sessions) -> None:
    for _, out in sessions:
        failed = out["failed"]
        assert failed["error"] is True, failed
        assert "Unknown city: Atlantis" in failed["text"] and "Try a real city." in failed["text"]
