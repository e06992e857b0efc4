"""The authorization server and the app around it: Flask-Login's login and current_user, the
scopes a token holds deciding which tools it sees, every dialect taking its tokens, the grants
page where a user revokes a client, and the settings (off by default, the extra, the login)."""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from flask import Flask, request
from flask_login import LoginManager, UserMixin, login_user

from flask_tooldiscovery import SettingsError, ToolContext, ToolDiscovery

from .oauth_helpers import (
    MCP_HEADERS,
    Consent,
    authorize_params,
    call,
    consent,
    consent_form,
    decide,
    exchange,
    oauth_app,
    pkce,
    register,
    sign_in,
    tokens,
)


class Account(UserMixin):  # type: ignore[misc]
    def __init__(self, name: str) -> None:
        self.id = name


def flask_login_app(**config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    def whoami(ctx: ToolContext = None) -> str:  # type: ignore[assignment]
        """Who calls."""
        return str(ctx.user_id)

    app = Flask("flasklogin")
    app.secret_key = "another-test-key"
    app.config.update({"TESTING": True, "TOOLDISCOVERY_OAUTH_SERVER": True, "TOOLDISCOVERY_ALLOW_EXECUTE": True,
                       **config})
    manager = LoginManager(app)
    manager.login_view = "signin"
    manager.user_loader(Account)

    @app.route("/signin", methods=["GET", "POST"])
    def signin() -> str:
        if request.method == "POST":
            login_user(Account(request.form["name"]))
            return "ok"
        return "<form>...</form>"

    discovery.init_app(app)
    return app


def test_flask_login_decides_who_signs_in() -> None:
    client = flask_login_app().test_client()
    registered = register(client)
    verifier, challenge = pkce()
    query = urlencode(authorize_params(registered["client_id"], challenge))
    first = client.get("/oauth/authorize?" + query)
    assert first.status_code == 302 and urlsplit(first.headers["Location"]).path == "/signin"
    back = parse_qs(urlsplit(first.headers["Location"]).query)["next"][0]
    assert back.startswith("/oauth/authorize?")
    client.post("/signin", data={"name": "carol"})
    page = client.get(back, headers={"Accept": "text/html"})
    assert page.status_code == 200
    form = Consent(consent_form(page.get_data(as_text=True)), page.get_data(as_text=True))
    assert "carol" in form.html
    code = decide(client, form)["code"]
    token = exchange(client, registered["client_id"], code, verifier).get_json()["access_token"]
    assert call(client, token).get_json()["result"]["content"][0]["text"] == "carol"


def test_the_token_scopes_decide_which_tools_are_seen() -> None:
    client = oauth_app().test_client()
    _, narrow = tokens(client, scope="tools")
    _, wide = tokens(client, scope="tools admin")

    def names(token: str) -> list[str]:
        listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}).get_json()
        return sorted(t["name"] for t in listed["result"]["tools"])

    assert names(narrow["access_token"]) == ["whoami"]
    assert names(wide["access_token"]) == ["secret", "whoami"]
    assert call(client, wide["access_token"], "secret").get_json()["result"]["content"][0]["text"] == "the secret"


def test_unknown_scopes_such_as_offline_access_are_left_out() -> None:
    client = oauth_app().test_client()
    _, answer = tokens(client, scope="tools offline_access")
    assert answer["scope"] == "tools"


def test_no_scope_asked_grants_every_scope_the_client_may_have() -> None:
    client = oauth_app().test_client()
    registered = register(client, scope="tools")
    sign_in(client)
    verifier, challenge = pkce()
    params = authorize_params(registered["client_id"], challenge)
    del params["scope"]
    code = decide(client, consent(client, params))["code"]
    assert exchange(client, registered["client_id"], code, verifier).get_json()["scope"] == "tools"


def test_mcp_scopes_are_required_of_this_servers_tokens_too() -> None:
    client = oauth_app(TOOLDISCOVERY_MCP_SCOPES=["admin"]).test_client()
    _, narrow = tokens(client, scope="tools")
    refused = call(client, narrow["access_token"])
    assert refused.status_code == 403 and 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]


@pytest.mark.parametrize("path, body", [
    ("/api/v1/tools/execute", {"tool_name": "whoami", "arguments": {}}),
    ("/opal/tools/whoami", {"parameters": {}}),
])
def test_every_dialect_takes_these_tokens(path: str, body: dict[str, Any]) -> None:
    client = oauth_app().test_client()
    _, answer = tokens(client, "dave")
    refused = client.post(path, json=body)
    assert refused.status_code == 401
    accepted = client.post(path, json=body, headers={"Authorization": f"Bearer {answer['access_token']}"})
    assert accepted.status_code == 200, accepted.get_data(as_text=True)
    assert "user=dave" in accepted.get_data(as_text=True)


def test_the_grants_page_lists_and_revokes_a_client() -> None:
    client = oauth_app().test_client()
    client_id, answer = tokens(client, "erin")
    listed = client.get("/oauth/grants", headers={"Accept": "application/json"}).get_json()
    assert [g["client_id"] for g in listed["grants"]] == [client_id]
    assert listed["grants"][0]["client_name"] == "Test client" and listed["grants"][0]["scope"] == "tools"
    page = client.get("/oauth/grants", headers={"Accept": "text/html"})
    assert "Test client" in page.get_data(as_text=True) and ">Revoke</button>" in page.get_data(as_text=True)
    forged = client.post(f"/oauth/grants/{client_id}/revoke", headers={"Accept": "application/json"})
    assert forged.status_code == 403 and call(client, answer["access_token"]).status_code == 200
    revoked = client.post(f"/oauth/grants/{client_id}/revoke", data={"csrf_token": listed["csrf_token"]},
                          headers={"Accept": "application/json"})
    assert revoked.get_json() == {"revoked": 1}
    assert call(client, answer["access_token"]).status_code == 401
    refreshed = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                  "refresh_token": answer["refresh_token"]})
    assert refreshed.status_code == 400
    assert client.get("/oauth/grants", headers={"Accept": "application/json"}).get_json()["grants"] == []


def test_a_user_sees_only_their_own_grants() -> None:
    app = oauth_app()
    one, two = app.test_client(), app.test_client()
    client_id, _ = tokens(one, "frank")
    sign_in(two, "grace")
    assert two.get("/oauth/grants", headers={"Accept": "application/json"}).get_json()["grants"] == []
    token = two.get("/oauth/grants", headers={"Accept": "application/json"}).get_json()["csrf_token"]
    assert two.post(f"/oauth/grants/{client_id}/revoke", data={"csrf_token": token},
                    headers={"Accept": "application/json"}).get_json() == {"revoked": 0}
    assert one.get("/oauth/grants", headers={"Accept": "application/json"}).get_json()["grants"]


def test_the_grants_page_needs_a_signed_in_user() -> None:
    client = oauth_app().test_client()
    assert client.get("/oauth/grants", headers={"Accept": "application/json"}).status_code == 401
    page = client.get("/oauth/grants", headers={"Accept": "text/html"})
    assert page.status_code == 302 and page.headers["Location"].startswith("/login?next=")


def test_off_by_default() -> None:
    discovery = ToolDiscovery()
    app = Flask("plain")
    discovery.init_app(app)
    client = app.test_client()
    assert client.get("/.well-known/oauth-authorization-server").status_code == 404
    assert client.post("/oauth/register", json={}).status_code == 404


def test_its_keys_are_refused_while_it_is_off() -> None:
    app = Flask("stray")
    app.config["TOOLDISCOVERY_OAUTH_SCOPES"] = {"a": "b"}
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_OAUTH_SCOPES only apply with TOOLDISCOVERY_OAUTH_SERVER"):
        ToolDiscovery().init_app(app)


def test_without_authlib_init_app_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "authlib", None)
    app = Flask("noauthlib")
    app.secret_key = "k"
    app.config["TOOLDISCOVERY_OAUTH_SERVER"] = True
    with pytest.raises(SettingsError, match=r'pip install "flask-tooldiscovery\[oauth\]"'):
        ToolDiscovery().init_app(app)


def test_it_needs_a_way_to_tell_who_is_signed_in() -> None:
    app = Flask("nologin")
    app.secret_key = "k"
    app.config["TOOLDISCOVERY_OAUTH_SERVER"] = True
    with pytest.raises(SettingsError, match="oauth_user"):
        ToolDiscovery().init_app(app)


def test_it_needs_a_secret_key() -> None:
    discovery = ToolDiscovery()
    discovery.oauth_user(lambda: None)
    app = Flask("nokey")
    app.config["TOOLDISCOVERY_OAUTH_SERVER"] = True
    with pytest.raises(SettingsError, match="SECRET_KEY"):
        discovery.init_app(app)


@pytest.mark.parametrize("scopes", [{}, {"bad scope": "x"}, {'q"': "x"}, ["tools"]])
def test_scopes_must_be_a_mapping_of_scope_tokens(scopes: Any) -> None:
    app = Flask("scopes")
    app.config.update(TOOLDISCOVERY_OAUTH_SERVER=True, TOOLDISCOVERY_OAUTH_SCOPES=scopes)
    with pytest.raises(SettingsError, match="TOOLDISCOVERY_OAUTH_SCOPES"):
        ToolDiscovery().init_app(app)


def test_several_workers_without_a_shared_store_are_refused_or_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from flask_tooldiscovery import SettingsError

    with pytest.raises(SettingsError, match="OAuth codes and refresh tokens would be remembered by each process"):
        oauth_app(TOOLDISCOVERY_SERVER_WORKERS=2, TOOLDISCOVERY_SERVER_THREADS=4)
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        oauth_app(TOOLDISCOVERY_SERVER_WORKERS=2, TOOLDISCOVERY_SERVER_THREADS=4, TOOLDISCOVERY_STATE_PER_PROCESS=True)
    assert "an OAuth code or token issued by one worker is unknown to the others" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        oauth_app(TOOLDISCOVERY_SERVER_WORKERS=1, TOOLDISCOVERY_SERVER_THREADS=4)
    assert "OAuth code" not in caplog.text


def test_an_app_may_ship_its_own_consent_page(tmp_path: Any) -> None:
    folder = tmp_path / "tooldiscovery"
    folder.mkdir()
    (folder / "oauth_consent.html").write_text(
        '<h1>Our own page for {{ client_name }}</h1><form method="post" action="{{ action }}">'
        '{% for name, value in params.items() %}<input type="hidden" name="{{ name }}" value="{{ value }}">'
        '{% endfor %}<input type="hidden" name="csrf_token" value="{{ csrf_token }}">'
        '<button name="decision" value="allow">Allow</button></form>')
    app = oauth_app()
    app.template_folder = str(tmp_path)
    client = app.test_client()
    registered = register(client, client_name="<i>x</i>")
    sign_in(client)
    verifier, challenge = pkce()
    form = consent(client, authorize_params(registered["client_id"], challenge))
    assert "<h1>Our own page for &lt;i&gt;x&lt;/i&gt;</h1>" in form.html  # autoescaped
    code = decide(client, form)["code"]
    assert exchange(client, registered["client_id"], code, verifier).status_code == 200
