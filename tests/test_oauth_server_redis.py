"""The authorization server's records in a real redis-server: a call's token check is one round
trip (the token's record and its grant's, read together), and a revoked grant still ends its
access tokens at once. The commands are counted with Redis's own ``MONITOR``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from .oauth_helpers import call, oauth_app, tokens
from .test_operating_server import redis_url  # noqa: F401  (a redis-server of our own)

pytestmark = pytest.mark.slow
PREFIX = "flask-tooldiscovery:oauth:"
END = "end-of-the-counted-call"


def oauth_commands(url: str, action: Callable[[], Any]) -> list[str]:
    """The commands on the authorization server's keys Redis received while ``action`` ran."""
    import redis

    seen: list[str] = []
    ready = threading.Event()

    def listen() -> None:
        with redis.Redis.from_url(url, decode_responses=True).monitor() as monitor:
            ready.set()
            for command in monitor.listen():
                text = str(command["command"])
                if END in text:
                    return
                if PREFIX in text:
                    seen.append(text)

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert ready.wait(10)
    redis.Redis.from_url(url).echo("warm-up")  # MONITOR is on once the server has answered it
    action()
    redis.Redis.from_url(url).echo(END)
    listener.join(10)
    assert not listener.is_alive()
    return seen


def test_a_verified_call_reads_its_token_in_one_round_trip(redis_url: str) -> None:  # noqa: F811
    client = oauth_app(TOOLDISCOVERY_STATE_STORAGE_URI=redis_url).test_client()
    _, answer = tokens(client, "alice")
    responses: list[Any] = []
    commands = oauth_commands(redis_url, lambda: responses.append(call(client, answer["access_token"])))
    assert responses[0].status_code == 200
    assert responses[0].get_json()["result"]["content"][0]["text"] == "user=alice scopes=tools"
    assert len(commands) == 1, commands
    assert commands[0].upper().startswith("MGET ") and f"{PREFIX}access:" in commands[0] \
        and f"{PREFIX}grant:" in commands[0]


def test_a_revoked_grant_still_refuses_its_access_token_at_once(redis_url: str) -> None:  # noqa: F811
    client = oauth_app(TOOLDISCOVERY_STATE_STORAGE_URI=redis_url).test_client()
    client_id, first = tokens(client, "alice")
    refreshed = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                  "refresh_token": first["refresh_token"]}).get_json()
    assert call(client, refreshed["access_token"]).status_code == 200
    replay = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                               "refresh_token": first["refresh_token"]})
    assert replay.status_code == 400
    for token in (first["access_token"], refreshed["access_token"]):
        refused = call(client, token)
        assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]



@pytest.mark.parametrize("storage", ["memory", "redis"])
def test_a_revocation_racing_a_refresh_is_not_undone(storage: str, request: pytest.FixtureRequest,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The user revokes an application (on another worker) while its refresh is between reading
    the grant and keeping the new tokens: the refresh fails, and the grant stays revoked."""
    from flask_tooldiscovery.identity.authorization_server.records import Records

    uri = request.getfixturevalue("redis_url") if storage == "redis" else None
    client = oauth_app(**({"TOOLDISCOVERY_STATE_STORAGE_URI": uri} if uri else {})).test_client()
    client_id, first = tokens(client, f"racer-{storage}")  # a user of its own: the Redis is shared
    read = Records.grant
    armed = [True]

    def read_then_revoked(self: Records, family: str) -> Any:
        found = read(self, family)
        if armed[0] and found is not None:
            armed[0] = False
            self.revoke_grant(family)  # the revocation lands right after the refresh read the grant
        return found

    monkeypatch.setattr(Records, "grant", read_then_revoked)
    refresh = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                 "refresh_token": first["refresh_token"]})
    monkeypatch.undo()
    assert not armed[0]  # the race happened
    assert refresh.status_code == 400 and refresh.get_json()["error"] == "invalid_grant", refresh.get_json()
    refused = call(client, first["access_token"])
    assert refused.status_code == 401  # the grant is still revoked: its tokens stay refused
    assert client.get("/oauth/grants", headers={"Accept": "application/json"}).get_json()["grants"] == []
