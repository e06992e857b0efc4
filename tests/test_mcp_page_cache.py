"""MCP ``tools/list`` pages are encoded once per (visible tool set, page, protocol era) and spliced
into each response's envelope (issue #14). These tests show each caller still gets the right
bytes, over real HTTP (gunicorn, one sync worker, so every request meets the same cache): a
registry change, a per-user visible set (scopes and a ``visible`` predicate), a protocol version,
a cursor, a request id and a batch each get their own answer, byte for byte what encoding the
whole response would give."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from flask_tooldiscovery.serving.cache import WireCache

from .test_deploy import stop
from .test_operating_server import start

MODERN = "2026-07-28"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    base, proc = start("tests.apps.mcp_pages_app:create_app()", worker_class="sync", threads=1)
    try:
        yield base
    finally:
        stop(proc)


def tools_list(base: str, *, id_: Any = 1, cursor: str | None = None, user: str | None = None,
               version: str | None = None) -> tuple[bytes, dict[str, Any]]:
    """One ``tools/list``: the raw body and the parsed result (checked to be the whole response
    encoded as ``json.dumps`` encodes it, the id echoed)."""
    params: dict[str, Any] = {"cursor": cursor} if cursor else {}
    headers = {"Accept": "application/json, text/event-stream"}
    if user:
        headers["X-User"] = user
    if version == MODERN:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {}}
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    elif version:
        headers["MCP-Protocol-Version"] = version
    message = {"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": params}
    response = requests.post(f"{base}/mcp", json=message, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body["id"] == id_ and "error" not in body
    assert response.content == json.dumps(body).encode()  # the envelope and the page as one encoding
    return response.content, body["result"]


def walk(base: str, **kwargs: Any) -> list[list[str]]:
    pages, cursor = [], None
    for _ in range(10):
        _, result = tools_list(base, cursor=cursor, **kwargs)
        pages.append([t["name"] for t in result["tools"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return pages
    raise AssertionError(f"no last page: {pages}")


def test_each_cursor_and_id_gets_its_own_page(server: str) -> None:
    first = walk(server)
    assert first == [[f"tool_{i:02d}" for i in range(5)], [f"tool_{i:02d}" for i in range(5, 10)]]
    for id_ in (2, "req-é-\u2603", 0, -7):  # any id is spliced into the same cached page
        assert walk(server, id_=id_) == first
    _, page_two = tools_list(server, cursor=tools_list(server)[1]["nextCursor"], id_="x")
    assert [t["name"] for t in page_two["tools"]] == first[1]


def test_protocol_versions_get_their_own_bytes(server: str) -> None:
    for _ in range(2):  # interleaved: neither era's page is served to the other
        _, old = tools_list(server, version="2025-06-18")
        _, modern = tools_list(server, version=MODERN)
        _, plain = tools_list(server)
        assert set(old) == {"tools", "nextCursor"} and plain == old
        assert modern["resultType"] == "complete" and modern["ttlMs"] == 0 and modern["cacheScope"] == "private"
        assert modern["_meta"][SERVER_INFO]["name"]
        assert modern["tools"] == old["tools"] and list(modern)[:2] == ["tools", "nextCursor"]
        _, modern_two = tools_list(server, version=MODERN, cursor=modern["nextCursor"])
        _, old_two = tools_list(server, version="2025-06-18", cursor=old["nextCursor"])
        assert "resultType" in modern_two and "resultType" not in old_two
        assert modern_two["tools"] == old_two["tools"]


def test_each_visible_set_gets_its_own_pages(server: str) -> None:
    for _ in range(2):
        anonymous = walk(server)  # the guest
        alice = walk(server, user="alice")
        root = walk(server, user="root")
        bob = walk(server, user="bob")
        everyone = [name for page in anonymous for name in page]
        assert "report" not in everyone and "bobs" not in everyone
        assert alice == anonymous
        assert [name for page in root for name in page] == [*everyone, "report"]
        assert [name for page in bob for name in page] == [*everyone, "bobs"]
        assert [len(page) for page in root] == [5, 5, 1]


def test_a_registry_change_shows_on_the_next_list(server: str) -> None:
    before = walk(server)
    before_modern = walk(server, version=MODERN)
    assert requests.post(f"{server}/add/late_tool", timeout=10).status_code == 200
    after = walk(server)
    assert [name for page in after for name in page] == [*(n for page in before for n in page), "late_tool"]
    assert walk(server, version=MODERN) == after != before_modern
    root = [name for page in walk(server, user="root") for name in page]
    assert root[-2:] == ["report", "late_tool"]


def test_a_batch_holds_the_same_pages(server: str) -> None:
    _, first = tools_list(server, version="2025-03-26")
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": first["nextCursor"]}},
             {"jsonrpc": "2.0", "id": 3, "method": "ping"}]
    response = requests.post(f"{server}/mcp", json=batch, headers={"MCP-Protocol-Version": "2025-03-26"}, timeout=10)
    assert response.status_code == 200
    answers = response.json()
    assert response.content == json.dumps(answers).encode()
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"] == first
    assert answers[1]["result"] == tools_list(server, cursor=first["nextCursor"])[1]
    assert answers[2]["result"] == {}


def test_a_page_is_encoded_once_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: the page's bytes come from the pipeline's cache, built once per key."""
    from tests.apps.mcp_pages_app import create_app

    built: list[Any] = []
    original = WireCache.document

    def counting(self: WireCache, key: Any, toolset: Any, build: Any) -> Any:
        return original(self, key, toolset, lambda: built.append((key, toolset.fingerprint)) or build())

    monkeypatch.setattr(WireCache, "document", counting)
    client = create_app().test_client()
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    bodies = {client.post("/mcp", json={**message, "id": i}).get_data() for i in range(5)}
    assert len(bodies) == 5 and len(built) == 1  # five ids, one page
    client.post("/mcp", json=message, headers={"X-User": "root"})
    client.post("/mcp", json=message, headers={"X-User": "root"})
    assert len(built) == 2 and built[0][1] != built[1][1]  # the admin's visible set: its own page
