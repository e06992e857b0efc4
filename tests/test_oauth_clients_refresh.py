"""Both official MCP clients, Python and TypeScript, keep working after their access token expired:
the app's access tokens live one minute here (``OAUTH_ACCESS_TOKEN_TTL``, its shortest), each client
signs its user in once (Flask-Login form and **Allow** in Chromium) and calls the tool, then calls
again once the minute has passed. The Python SDK refreshes before the call (it reads
``expires_in``), the TypeScript SDK when the call is refused; each gets a new access token and a new
refresh token (rotation) without the person, the calls run as the same user on both gunicorn
workers, and the expired access token is refused. The two clients wait out the same minute, side
by side."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from .oauth_harness import MemoryStorage, Person, app_server, callback_listener, chromium, require_chromium
from .test_mcp_tasks_servers import conformance  # noqa: F401  (conformance: Node 22)
from .test_mcp_ts_client_servers import ts_client  # noqa: F401  (the TypeScript client, from npm)
from .test_oauth_clients import ALICE, ALICE_ID, provider, whoami
from .test_oauth_clients_ts import node_client, run_client  # noqa: F401  (node_client: the desktop client)
from .test_operating_server import redis_url  # noqa: F401  (a redis-server of our own)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

LIFETIME = 60  # seconds: the server's shortest access-token lifetime
WAIT = LIFETIME + 2


@pytest.fixture(scope="module")
def base(redis_url: str) -> Iterator[str]:  # noqa: F811
    require_chromium()
    with app_server(redis_url + "/4", OAUTH_ACCESS_TOKEN_TTL=LIFETIME) as url:
        yield url


def refused(base: str, token: str) -> requests.Response:
    return requests.post(f"{base}/mcp", timeout=10, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})


def python_client(base: str) -> dict[str, Any]:
    """The Python SDK: a session, the wait, another session with the same provider and storage."""
    server_url = f"{base}/mcp"
    person, storage = Person(**ALICE), MemoryStorage()
    with callback_listener() as listener:
        auth = provider(server_url, storage, person, listener)

        async def run() -> dict[str, Any]:
            async with chromium(person):
                first = await whoami(server_url, auth, "auto", calls=1)
            await asyncio.sleep(WAIT)
            second = await whoami(server_url, auth, "auto")
            return {"first": first["answers"], "second": second["answers"]}

        out = asyncio.run(run())
    return {**out, "authorizations": auth.visits, "tokens": storage.saved}  # type: ignore[attr-defined]


def test_both_official_clients_refresh_once_their_token_expired(node_client: tuple[Path, Path],  # noqa: F811
                                                                base: str) -> None:
    started = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        ts = pool.submit(run_client, node_client, base, "auto", Person(**ALICE), pause=WAIT)
        py = python_client(base)
        ts_out = ts.result()
    assert time.monotonic() - started < 2 * WAIT  # the two waited side by side

    # Python: signed in once; a refresh gave a new pair; every call ran as alice, on both workers.
    assert len(py["authorizations"]) == 1
    assert {a["user_id"] for a in py["first"] + py["second"]} == {ALICE_ID}
    assert len({a["worker"] for a in py["second"]}) == 2, [a["worker"] for a in py["second"]]
    old, new = py["tokens"]
    assert new.access_token != old.access_token and new.refresh_token != old.refresh_token
    assert refused(base, old.access_token).status_code == 401  # expired
    assert refused(base, new.access_token).status_code == 200

    # TypeScript: the same, its expired token refused first (it refreshes on the 401).
    assert len(ts_out["authorizations"]) == 1
    assert {a["user_id"] for a in ts_out["first"] + ts_out["second"]} == {ALICE_ID}
    old, new = ts_out["tokens"]
    assert new["access_token"] != old["access_token"] and new["refresh_token"] != old["refresh_token"]
    assert refused(base, old["access_token"]).status_code == 401
    assert refused(base, new["access_token"]).status_code == 200
