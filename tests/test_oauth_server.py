"""The app as its own users' OAuth 2.1 authorization server, in process: metadata, registration,
the code flow with PKCE and consent, tokens every dialect accepts, refresh and revocation."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

from .oauth_helpers import (
    REDIRECT,
    authorize_params,
    call,
    code_for,
    consent,
    decide,
    exchange,
    oauth_app,
    pkce,
    register,
    sign_in,
    tokens,
)


def test_metadata_names_the_app_as_issuer() -> None:
    client = oauth_app().test_client()
    document = client.get("/.well-known/oauth-authorization-server").get_json()
    assert document["issuer"] == "http://localhost"
    assert document["authorization_endpoint"] == "http://localhost/oauth/authorize"
    assert document["token_endpoint"] == "http://localhost/oauth/token"
    assert document["registration_endpoint"] == "http://localhost/oauth/register"
    assert document["revocation_endpoint"] == "http://localhost/oauth/revoke"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["client_id_metadata_document_supported"] is True
    assert document["scopes_supported"] == ["tools", "admin"]


def test_protected_resource_metadata_names_this_server() -> None:
    client = oauth_app().test_client()
    document = client.get("/.well-known/oauth-protected-resource/mcp").get_json()
    assert document["resource"] == "http://localhost/mcp"
    assert document["authorization_servers"] == ["http://localhost"]
    assert document["scopes_supported"] == ["tools", "admin"]
    refused = call(client, None)
    assert refused.status_code == 401
    assert 'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"' in \
        refused.headers["WWW-Authenticate"]


def test_the_whole_flow_gives_a_token_the_mcp_endpoint_takes() -> None:
    client = oauth_app().test_client()
    _, answer = tokens(client, "alice", resource="http://localhost/mcp")
    assert answer["token_type"] == "Bearer" and answer["refresh_token"] and answer["expires_in"] == 3600
    assert answer["scope"] == "tools"
    result = call(client, answer["access_token"]).get_json()
    assert result["result"]["content"][0]["text"] == "user=alice scopes=tools"


def test_consent_page_names_client_redirect_host_and_scopes() -> None:
    client = oauth_app().test_client()
    registered = register(client, client_name="<b>Evil & Co</b>")
    sign_in(client)
    _, challenge = pkce()
    page = consent(client, authorize_params(registered["client_id"], challenge, scope="tools admin"))
    assert "&lt;b&gt;Evil &amp; Co&lt;/b&gt;" in page.html and "<b>Evil" not in page.html
    assert "127.0.0.1" in page.html
    assert "Use the tools of oauthapp" in page.html  # TITLE unset: the server name and "Administer" in page.html
    assert ">Allow</button>" in page.html and ">Deny</button>" in page.html


def test_not_signed_in_is_sent_to_the_login_view_with_next() -> None:
    client = oauth_app().test_client()
    registered = register(client)
    _, challenge = pkce()
    query = urlencode(authorize_params(registered["client_id"], challenge))
    response = client.get("/oauth/authorize?" + query)
    assert response.status_code == 302
    location = response.headers["Location"]
    assert location.startswith("/login?next=")
    (back,) = parse_qs(urlsplit(location).query)["next"]
    assert back.startswith("/oauth/authorize?")  # a path of this site, as Flask-Login sends it
    assert parse_qs(urlsplit(back).query) == parse_qs(query)


def test_deny_redirects_with_access_denied_state_and_iss() -> None:
    client = oauth_app().test_client()
    registered = register(client)
    sign_in(client)
    _, challenge = pkce()
    answer = decide(client, consent(client, authorize_params(registered["client_id"], challenge)), "deny")
    assert answer["error"] == "access_denied" and answer["state"] == "st-1" and answer["iss"] == "http://localhost"
    assert "code" not in answer


def test_allow_redirects_with_code_state_and_iss() -> None:
    client = oauth_app().test_client()
    registered = register(client)
    sign_in(client)
    _, challenge = pkce()
    answer = decide(client, consent(client, authorize_params(registered["client_id"], challenge)))
    assert set(answer) == {"code", "state", "iss"} and answer["state"] == "st-1"
    assert answer["iss"] == "http://localhost"


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant() -> None:
    client = oauth_app().test_client()
    client_id, first = tokens(client)
    refreshed = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                  "refresh_token": first["refresh_token"]})
    assert refreshed.status_code == 200, refreshed.get_json()
    second = refreshed.get_json()
    assert second["refresh_token"] != first["refresh_token"]
    assert call(client, second["access_token"]).status_code == 200
    replay = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                               "refresh_token": first["refresh_token"]})
    assert replay.status_code == 400 and replay.get_json()["error"] == "invalid_grant"
    # the whole grant is gone: the newest tokens too
    assert call(client, second["access_token"]).status_code == 401
    again = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                              "refresh_token": second["refresh_token"]})
    assert again.status_code == 400


def test_a_code_is_single_use_and_its_replay_revokes_its_tokens() -> None:
    client = oauth_app().test_client()
    registered = register(client)
    sign_in(client)
    verifier, challenge = pkce()
    code = code_for(client, registered["client_id"], challenge)
    first = exchange(client, registered["client_id"], code, verifier)
    assert first.status_code == 200
    second = exchange(client, registered["client_id"], code, verifier)
    assert second.status_code == 400 and second.get_json()["error"] == "invalid_grant"
    assert call(client, first.get_json()["access_token"]).status_code == 401


def test_revocation_of_an_access_token() -> None:
    client = oauth_app().test_client()
    client_id, answer = tokens(client)
    revoked = client.post("/oauth/revoke", data={"token": answer["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    assert call(client, answer["access_token"]).status_code == 401


def test_the_redirect_uri_must_be_registered() -> None:
    client = oauth_app().test_client()
    registered = register(client)
    sign_in(client)
    _, challenge = pkce()
    params = authorize_params(registered["client_id"], challenge, redirect_uri="https://attacker.example/cb")
    response = client.get("/oauth/authorize?" + urlencode(params))
    assert response.status_code == 400 and "Location" not in response.headers
    assert response.get_json()["error"] == "invalid_request"


def test_loopback_redirect_may_change_port() -> None:
    client = oauth_app().test_client()
    registered = register(client)
    sign_in(client)
    _, challenge = pkce()
    other = REDIRECT.replace("5173", "61234")
    page = consent(client, authorize_params(registered["client_id"], challenge, redirect_uri=other))
    assert page.fields["redirect_uri"] == other


def test_token_revocation_and_registration_answer_any_origin() -> None:
    """A browser-based client on another origin may call the token, revocation and registration
    endpoints: each preflight is answered 204, and each answer (refusals included) allows any origin."""
    client = oauth_app().test_client()
    for path in ("/oauth/token", "/oauth/revoke", "/oauth/register"):
        preflight = client.options(path, headers={"Origin": "https://app.example",
                                                  "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204 and preflight.get_data() == b"", path
        assert preflight.headers["Access-Control-Allow-Origin"] == "*", path
        assert preflight.headers["Access-Control-Allow-Methods"] == "GET, POST, OPTIONS", path
    refused = client.post("/oauth/token", data={"grant_type": "authorization_code", "code": "nope"})
    assert refused.status_code in (400, 401) and refused.headers["Access-Control-Allow-Origin"] == "*"
    not_json = client.post("/oauth/register", data="[1]", content_type="application/json")
    assert not_json.status_code == 400 and not_json.get_json()["error"] == "invalid_client_metadata"
    assert not_json.headers["Access-Control-Allow-Origin"] == "*" and not_json.headers["Cache-Control"] == "no-store"
    client_id, answer = tokens(client)
    revoked = client.post("/oauth/revoke", data={"token": answer["access_token"], "client_id": client_id})
    assert revoked.status_code == 200 and revoked.headers["Access-Control-Allow-Origin"] == "*"
