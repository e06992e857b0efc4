"""``listChanged`` per toolset: a client that sees a part of the tools (a toolset's URL, a
``/readonly`` one, or ``X-MCP-Toolsets`` on its requests) hears ``notifications/tools/list_changed``
only when its part changed, never for a change of tools it does not see; a client of the full
mount hears every change, as before. Shown with the official MCP client over real HTTP, in both
eras: the 2026-07-28 ``subscriptions/listen`` stream and the handshake era's session stream."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.state import changes

from .conftest import live_server

pytestmark = pytest.mark.slow

#: How long a client waits to be sure nothing more is coming.
QUIET = 1.5


def build() -> tuple[Flask, ToolDiscovery]:
    discovery = ToolDiscovery()

    @discovery.tool(tags=["issues"], annotations={"readOnlyHint": True})
    def issues_list(repo: str) -> list[str]:
        """List the issues of a repository."""
        return []

    @discovery.tool(tags=["repos"], annotations={"readOnlyHint": True})
    def repos_get(repo: str) -> dict[str, str]:
        """Get a repository."""
        return {"repo": repo}

    app = Flask("changes")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_TOOLSETS={
        "issues": {"tags": ["issues"]}, "repos": {"tags": ["repos"]}}, TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True,
        TOOLDISCOVERY_MCP_SUBSCRIPTION_SECONDS=20, TOOLDISCOVERY_STREAM_KEEPALIVE=0.2)
    discovery.init_app(app)
    return app, discovery


def when_listening(count: int, then: Callable[[], None]) -> threading.Thread:
    """Run ``then`` once ``count`` more streams than now listen in this process."""
    before = changes.LOCAL.listening

    def wait() -> None:
        deadline = time.monotonic() + 20
        while changes.LOCAL.listening < before + count and time.monotonic() < deadline:
            time.sleep(0.01)
        then()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def add(discovery: ToolDiscovery, name: str, tag: str, read_only: bool = True) -> None:
    discovery.add_tool(lambda: "ok", name=name, tags=[tag], description=f"Tool {name}.",
                       annotations={"readOnlyHint": read_only})


async def heard_all(sub: Any) -> list[Any]:
    """Every notification a subscription hears until it has been quiet for :data:`QUIET` seconds."""
    out = []
    while True:
        try:
            out.append(await asyncio.wait_for(sub.__anext__(), QUIET if out else 15))
        except TimeoutError:
            return out


def test_a_2026_listener_at_a_toolset_url_hears_only_changes_of_its_toolset() -> None:
    from mcp import Client
    from mcp.client.subscriptions import ToolsListChanged

    app, discovery = build()

    def changes_made() -> None:
        add(discovery, "repos_fork", "repos")  # not the issues toolset's: nothing to tell /mcp/x/issues
        time.sleep(0.3)
        add(discovery, "issues_close", "issues", read_only=False)  # the toolset's, but not read-only
        time.sleep(0.3)
        add(discovery, "issues_search", "issues")  # the read-only listener's too

    async def listen(base: str) -> dict[str, list[Any]]:
        thread = when_listening(3, changes_made)
        async with Client(f"{base}/mcp/x/issues") as part, Client(f"{base}/mcp") as full, \
                Client(f"{base}/mcp/x/issues/readonly") as read_only:
            async with part.listen(tools_list_changed=True) as a, full.listen(tools_list_changed=True) as b, \
                    read_only.listen(tools_list_changed=True) as c:
                heard = await asyncio.gather(heard_all(a), heard_all(b), heard_all(c))
                thread.join()
            names = [t.name for t in (await part.list_tools()).tools]
        return {"part": heard[0], "full": heard[1], "read_only": heard[2], "names": names}

    with live_server(app) as base:
        out = asyncio.run(listen(base))
    assert out["full"] == [ToolsListChanged()] * 3  # the full mount: every change, as before
    assert out["part"] == [ToolsListChanged()] * 2  # /mcp/x/issues: not the repos tool's
    assert out["read_only"] == [ToolsListChanged()]  # /mcp/x/issues/readonly: only the read-only issues tool's
    assert out["names"] == ["issues_list", "issues_close", "issues_search"]


def test_a_handshake_era_session_narrowed_by_header_hears_only_changes_it_can_see() -> None:
    import httpx2 as httpx  # the SDK's own HTTP client
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import ToolListChangedNotification

    app, discovery = build()
    heard: dict[str, int] = {"narrowed": 0, "full": 0}

    def counter(key: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, ToolListChangedNotification):
                heard[key] += 1
        return on_message

    def changes_made() -> None:
        add(discovery, "issues_close", "issues")  # another toolset's: nothing to tell the repos session
        time.sleep(0.3)
        add(discovery, "repos_fork", "repos")

    async def run(base: str) -> list[str]:
        thread = when_listening(2, changes_made)  # once both sessions' GET streams are open
        async with httpx.AsyncClient(headers={"X-MCP-Toolsets": "repos"}) as http:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy",
                              message_handler=counter("narrowed")) as narrowed, \
                    Client(f"{base}/mcp", mode="legacy", message_handler=counter("full")):
                deadline = time.monotonic() + 20
                while heard["full"] < 2 and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(QUIET)
                thread.join()
                return [t.name for t in (await narrowed.list_tools()).tools]

    with live_server(app) as base:
        names = asyncio.run(run(base))
    assert heard == {"narrowed": 1, "full": 2}
    assert names == ["repos_get", "repos_fork"]
