"""MCP subscriptions across servers: the official ``mcp`` client (2.3) listens on one gunicorn
server and hears what a call on another server (same Redis) changed, in both eras: 2026-07-28's
``subscriptions/listen`` stream, and the handshake era's ``resources/subscribe`` with
``notifications/resources/updated`` on the session's GET stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from .apps.subscriptions_app import NOTE_URI
from .test_operating_server import redis_url, start, two_servers_of  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow

APP = "tests.apps.subscriptions_app:create_app"


@pytest.fixture(scope="module")
def two_servers(redis_url) -> Iterator[tuple[str, str]]:  # noqa: F811
    with two_servers_of(f"{APP}(storage={redis_url + '/6'!r})", threads=8, ready="/mcp") as servers:
        yield servers


def test_a_2026_listener_hears_a_resource_and_the_tool_list_change_on_another_server(two_servers) -> None:
    from mcp import Client
    from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

    first, second = two_servers

    async def run() -> dict[str, Any]:
        async with Client(f"{first}/mcp") as listener, Client(f"{second}/mcp") as editor:
            async with listener.listen(tools_list_changed=True, prompts_list_changed=True,
                                       resource_subscriptions=[NOTE_URI, "notes://nobody"]) as sub:
                honored = sub.honored.model_dump(by_alias=True, exclude_none=True)
                await editor.call_tool("edit_note", {"text": "buy milk"})
                updated = await asyncio.wait_for(sub.__anext__(), 20)
                read = await listener.read_resource(NOTE_URI)
                await editor.call_tool("refresh_tools", {})
                changed = await asyncio.wait_for(sub.__anext__(), 20)
            return {"versions": (listener.protocol_version, editor.protocol_version), "honored": honored,
                    "updated": updated, "text": read.contents[0].text, "changed": changed}

    out = asyncio.run(run())
    assert out["versions"] == ("2026-07-28", "2026-07-28")
    # prompts: none served; an unknown URI: nothing to hear of
    assert out["honored"] == {"toolsListChanged": True, "resourceSubscriptions": [NOTE_URI]}
    assert out["updated"] == ResourceUpdated(uri=NOTE_URI)
    assert out["text"] == "buy milk"
    assert out["changed"] == ToolsListChanged()


def test_a_handshake_era_subscriber_hears_an_update_made_on_another_server_until_it_unsubscribes(two_servers) -> None:
    from mcp import Client
    from mcp_types import ResourceUpdatedNotification

    first, second = two_servers
    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.put_nowait(message.params.uri)

    async def next_update(editor: Any, text: str) -> str | None:
        """Edit on the other server until the subscriber hears of it (its GET stream opens on its
        own after the handshake, so the first edits may come before it listens)."""
        for _ in range(20):
            await editor.call_tool("edit_note", {"text": text})
            try:
                return await asyncio.wait_for(heard.get(), 1)
            except TimeoutError:
                continue
        return None

    async def run() -> dict[str, Any]:
        async with Client(f"{first}/mcp", mode="legacy", message_handler=on_message) as subscriber, \
                Client(f"{second}/mcp", mode="legacy") as editor:
            caps = subscriber.server_capabilities.resources
            await subscriber.subscribe_resource(NOTE_URI)
            first_update = await next_update(editor, "call Ann")
            text = (await subscriber.read_resource(NOTE_URI)).contents[0].text
            await subscriber.unsubscribe_resource(NOTE_URI)
            while not heard.empty():
                heard.get_nowait()
            await editor.call_tool("edit_note", {"text": "call Bob"})
            await asyncio.sleep(2)
            return {"version": subscriber.protocol_version, "subscribe": caps.subscribe if caps else None,
                    "update": first_update, "text": text, "after": heard.qsize()}

    out = asyncio.run(run())
    assert out["version"] == "2025-11-25"
    assert out["subscribe"] is True
    assert out["update"] == NOTE_URI
    assert out["text"] == "call Ann"
    assert out["after"] == 0
