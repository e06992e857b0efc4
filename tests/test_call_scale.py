"""A call costs the same at any registry size: OXP finds the called tool in an index built once per
tool set (never by asking every tool for its id on each call), the index follows tools registered
at run time and each caller's visible set, and the keys the caches look the index up by stay small.
These tests count work (ids computed, keys hashed), never time: speed is bench/'s business."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.dialects import oxp as oxp_dialect
from flask_tooldiscovery.identity.sources import Identity
from flask_tooldiscovery.serving.cache import WireCache
from flask_tooldiscovery.tools.model import Tool
from flask_tooldiscovery.tools.providers import tool_from_object
from flask_tooldiscovery.tools.registry import ToolSet

#: A registry this large makes a scan per call plain in the counts below.
MANY = 2_000


def forecast(city: str, days: int = 1) -> dict[str, Any]:
    """A forecast.

    Args:
        city: City name.
        days: How many days.
    """
    return {"city": city, "days": days}


def big(**extra: Any) -> ToolDiscovery:
    """``MANY`` tools named ``forecast_<i>`` (``extra``: options of every one but ``forecast_0``;
    with ``scopes``, callers say who they are in ``X-User`` and what they hold in ``X-Scopes``)."""
    d = ToolDiscovery()
    d.add_tool(forecast, name="forecast_0")
    for i in range(1, MANY):
        d.add_tool(forecast, name=f"forecast_{i}", **extra)
    if "scopes" in extra:
        @d.identity
        def from_headers(request: Any) -> Identity | None:
            if "X-User" not in request.headers:
                return None
            return Identity(subject=request.headers["X-User"],
                            scopes=tuple(request.headers.get("X-Scopes", "").split()))

    return d


def app_of(d: ToolDiscovery) -> FlaskClient:
    app = Flask("scale")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["oxp", "opal"], TOOLDISCOVERY_SERVER_NAME="big",
                      TOOLDISCOVERY_WARN_UNAUTHENTICATED=False)
    d.init_app(app)
    return app.test_client()


@pytest.fixture
def ids_computed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Tool]]:
    """Every tool the OXP call path asks for its id (the key its index is built with)."""
    asked: list[Tool] = []
    real = oxp_dialect.id_parts

    def counting(settings: Any) -> Callable[[Tool], Hashable]:
        key = real(settings)

        def counted(tool: Tool) -> Hashable:
            asked.append(tool)
            return key(tool)

        return counted

    monkeypatch.setattr(oxp_dialect, "id_parts", counting)
    yield asked


def call(client: FlaskClient, name: str, city: str = "Oslo", **headers: str) -> Any:
    response = client.post("/oxp/tools/call", json={"request": {"tool_id": f"Big.{name}", "input": {"city": city}}},
                           headers=headers)
    return response.status_code, response.get_json()


def test_calls_at_a_large_registry_build_the_index_once(ids_computed: list[Tool]) -> None:
    client = app_of(big())
    for i in range(0, MANY, 10):  # 200 calls, spread over the registry
        status, body = call(client, f"forecast_{i}", city=f"c{i}")
        assert status == 200 and body["result"]["value"] == {"city": f"c{i}", "days": 1}
    assert len(ids_computed) == MANY  # one index, built by the first call; no call scanned
    status, body = call(client, "forecast_nope")
    assert status == 400 and body["message"] == "Tool not found: Big.forecast_nope"
    assert len(ids_computed) == MANY


def test_a_tool_registered_at_run_time_is_found_by_the_next_call(ids_computed: list[Tool]) -> None:
    d = big()
    client = app_of(d)
    assert call(client, "forecast_7")[0] == 200
    assert call(client, "late")[0] == 400
    d.add_tool(lambda city: {"late": city}, name="late", description="Registered while serving.")
    status, body = call(client, "late")
    assert status == 200 and body["result"]["value"] == {"late": "Oslo"}
    for _ in range(50):
        assert call(client, "late")[0] == 200 and call(client, "forecast_7")[0] == 200
    assert len(ids_computed) == MANY + (MANY + 1)  # one index per tool set, the new set's once


def test_each_visible_set_gets_its_index_once(ids_computed: list[Tool]) -> None:
    client = app_of(big(scopes=["admin"]))  # everything but forecast_0 needs the admin scope
    plain, admin = {"X-User": "bo"}, {"X-User": "ada", "X-Scopes": "admin"}
    for _ in range(30):  # a caller without scopes and an admin take turns
        assert call(client, "forecast_0", **plain)[0] == 200
        assert call(client, "forecast_5", **plain)[0] == 400  # hidden: an unknown tool
        assert call(client, "forecast_5", **admin)[0] == 200
    assert len(ids_computed) == 1 + MANY  # the plain caller's view of one tool, the admin's whole set


def test_the_same_tool_set_is_not_hashed_again() -> None:
    """A view's or a provider's fingerprint may be long: the cache finds the set it was last asked
    for by identity, and hashes a fingerprint only for a set it has not seen last."""

    class Fingerprint:
        hashes = 0

        def __hash__(self) -> int:
            Fingerprint.hashes += 1
            return 7

    tools = [tool_from_object({"name": f"t{i}", "inputSchema": {"type": "object"}}) for i in range(50)]
    cache, built = WireCache(), []

    def key(tool: Tool) -> Hashable:
        built.append(tool)
        return tool.name

    first = ToolSet(tools, fingerprint=Fingerprint())
    for _ in range(100):
        assert cache.index("id", first, key)["t3"] == [tools[3]]
    assert Fingerprint.hashes <= 2 and len(built) == 50  # one look-up and one store
    again = ToolSet(tools, fingerprint=first.fingerprint)  # another object, the same fingerprint
    assert cache.index("id", again, key) is cache.index("id", first, key)
    assert len(built) == 50
    other = ToolSet(tools[:10], fingerprint=("other",))
    assert set(cache.index("id", other, key)) == {f"t{i}" for i in range(10)}
    assert cache.index("id", first, key)["t3"] == [tools[3]]


def test_view_fingerprints_are_small_and_tell_hidden_sets_apart() -> None:
    d = big(scopes=["admin"])
    everything = d.registry.resolve()
    anonymous, admin = everything.visible_to(None), everything.visible_to(Identity("ada", scopes=("admin",)))
    assert [t.name for t in anonymous] == ["forecast_0"] and len(admin) == MANY
    assert admin is everything  # nothing hidden from the admin: the set itself
    assert len(repr(anonymous.fingerprint)) < 200  # not one entry per hidden tool
    assert anonymous.fingerprint == everything.visible_to(Identity("bob")).fingerprint
    picky = everything.visible_to(Identity("cy", scopes=("other",)))
    assert picky.fingerprint == anonymous.fingerprint  # the same tools hidden: the same key
    d.add_tool(forecast, name="forecast_extra", scopes=["admin"])
    grown = d.registry.resolve().visible_to(None)
    assert [t.name for t in grown] == ["forecast_0"] and grown.fingerprint != anonymous.fingerprint


def test_provided_tools_are_given_their_ids_once() -> None:
    """With OXP mounted, every provided tool's OXP id is checked against the others' on each
    request; the sanitized names are remembered, so a provider's same list costs no new work."""
    provided = [{"name": f"remote-{i}", "description": "Remote.", "inputSchema": {"type": "object"}}
                for i in range(300)]
    d = ToolDiscovery(tools=lambda: provided, call_handler=lambda name, arguments: {"ran": name})
    client = app_of(d)
    oxp_dialect.sanitize.cache_clear()
    for _ in range(20):
        response = client.post("/oxp/tools/call", json={"request": {"tool_id": "Big.remote_7", "input": {}}})
        assert response.status_code == 200 and response.get_json()["result"]["value"] == {"ran": "remote-7"}
    info = oxp_dialect.sanitize.cache_info()
    assert info.misses <= len(provided) + 5  # each name once, then remembered
