"""Tools per user: ``scopes=`` and ``visible=`` decide what each caller lists and may call, in every
dialect; a hidden tool is an unknown tool; the CLI shows a given caller's view."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import Identity, ToolDiscovery

from .conformance.drivers import DRIVERS

FIVE = ["explorer", "opal", "oxp", "tdp", "mcp"]


def discovery() -> ToolDiscovery:
    d = ToolDiscovery()
    d.add_tool(lambda: "hello", name="public_hello", description="Anyone.")
    d.add_tool(lambda: "report", name="admin_report", description="Admins.", scopes=["admin"])
    d.add_tool(lambda: "blue", name="blue_board", description="Team blue.",
               visible=lambda who: who is not None and who.claims.get("team") == "blue")

    @d.identity
    def from_headers(request) -> Identity | None:
        if "X-User" not in request.headers:
            return None
        scopes = tuple(s for s in request.headers.get("X-Scopes", "").split() if s)
        return Identity(subject=request.headers["X-User"], scopes=scopes,
                        claims={"team": request.headers.get("X-Team", "")})

    return d


def build(dialect: str, **config: Any) -> Flask:
    app = Flask("conformance")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[dialect], TOOLDISCOVERY_ALLOW_EXECUTE=True, **config)
    discovery().init_app(app)
    return app


ALICE = {"X-User": "alice"}
ADMIN = {"X-User": "root", "X-Scopes": "admin other"}
BLUE = {"X-User": "bob", "X-Team": "blue"}


@pytest.mark.parametrize("dialect", FIVE)
def test_each_caller_lists_and_calls_only_its_tools(dialect: str) -> None:
    driver = DRIVERS[dialect]
    client = build(dialect).test_client()
    for headers, expected in ((ALICE, ["public_hello"]), (ADMIN, ["admin_report", "public_hello"]),
                              (BLUE, ["blue_board", "public_hello"])):
        listed = driver.discover(client, headers=headers)
        assert sorted(driver.names(listed)) == expected, (headers, dialect)
        for name in ("public_hello", "admin_report", "blue_board"):
            result = driver.result(driver.call(client, name, {}, headers=headers))
            assert result.kind == ("ok" if name in expected else "unknown"), (name, headers, result)


@pytest.mark.parametrize("dialect", ["opal", "tdp", "explorer"])
def test_anonymous_discovery_shows_only_tools_for_everyone(dialect: str) -> None:
    driver = DRIVERS[dialect]
    client = build(dialect).test_client()
    assert driver.names(driver.discover(client)) == ["public_hello"]


def test_cached_discovery_bytes_follow_the_visible_set() -> None:
    client = build("opal").test_client()
    first = client.get("/opal/discovery", headers=ALICE)
    admin = client.get("/opal/discovery", headers=ADMIN)
    assert first.headers["ETag"] != admin.headers["ETag"]
    again = client.get("/opal/discovery", headers={**ALICE, "If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    other_user = client.get("/opal/discovery", headers={"X-User": "carol"})  # same visible set, same bytes
    assert other_user.headers["ETag"] == first.headers["ETag"]


def test_the_cli_shows_a_callers_view() -> None:
    app = build("opal")
    runner = app.test_cli_runner()
    everything = runner.invoke(args=["tools", "list"]).output
    assert {"public_hello", "admin_report", "blue_board"} <= {line.split("@")[0] for line in everything.splitlines()}
    as_admin = runner.invoke(args=["tools", "--as", "root", "--scope", "admin", "list"]).output
    assert [line.split("@")[0] for line in as_admin.splitlines()] == ["public_hello", "admin_report"]
    as_alice = runner.invoke(args=["tools", "--as", "alice", "export", "opal"]).output
    assert [f["name"] for f in json.loads(as_alice)["functions"]] == ["public_hello"]
    hidden = runner.invoke(args=["tools", "--as", "alice", "call", "admin_report"])
    assert hidden.exit_code == 1 and "Tool not found: admin_report" in hidden.output


def test_scopes_must_be_strings_and_visible_callable() -> None:
    from flask_tooldiscovery import RegistrationError

    with pytest.raises(RegistrationError, match="scopes must be a list of strings"):
        ToolDiscovery().add_tool(lambda: 1, name="x", scopes="admin")
    with pytest.raises(RegistrationError, match="visible must be a callable"):
        ToolDiscovery().add_tool(lambda: 1, name="y", visible=True)
