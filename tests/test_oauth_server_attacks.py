"""The attacks of RFC 9700 (OAuth 2.0 security best current practice) that apply to this server,
each its own test, and bad input (item 5 of #38): each refused with the RFC's error and status,
the reason logged, no redirect to a URI the client did not register, no 500."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from flask.testing import FlaskClient

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


def authorize(client: FlaskClient, params: dict[str, Any], html: bool = False) -> Any:
    return client.get("/oauth/authorize?" + urlencode(params), headers={"Accept": "text/html"} if html else {})


def redirected_error(response: Any) -> dict[str, str]:
    assert response.status_code == 302, response.get_data(as_text=True)
    location = response.headers["Location"]
    assert location.startswith(REDIRECT)
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


@pytest.fixture
def client() -> FlaskClient:
    return oauth_app(TOOLDISCOVERY_ALLOWED_HOSTS=["localhost", "other.test"]).test_client()


@pytest.fixture
def public(client: FlaskClient) -> str:
    registered = register(client)
    sign_in(client)
    return str(registered["client_id"])


# -- PKCE downgrade (RFC 9700 section 4.8) ------------------------------------------------------

def test_an_authorization_request_without_pkce_is_refused(client: FlaskClient, public: str) -> None:
    params = authorize_params(public, "x")
    del params["code_challenge"], params["code_challenge_method"]
    answer = redirected_error(authorize(client, params))
    assert answer["error"] == "invalid_request" and "PKCE" in answer["error_description"]
    assert answer["state"] == "st-1" and answer["iss"] == "http://localhost"


def test_the_plain_method_is_refused(client: FlaskClient, public: str) -> None:
    verifier, _ = pkce()
    answer = redirected_error(authorize(client, authorize_params(public, verifier, code_challenge_method="plain")))
    assert answer["error"] == "invalid_request" and "S256" in answer["error_description"]


def test_no_method_means_plain_and_is_refused(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    params = authorize_params(public, challenge)
    del params["code_challenge_method"]
    assert redirected_error(authorize(client, params))["error"] == "invalid_request"


def test_a_token_request_without_the_verifier_is_refused(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    code = code_for(client, public, challenge)
    response = client.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                                 "redirect_uri": REDIRECT, "client_id": public})
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_request"


def test_a_wrong_verifier_is_refused_and_spends_the_code(client: FlaskClient, public: str) -> None:
    verifier, challenge = pkce()
    code = code_for(client, public, challenge)
    wrong = exchange(client, public, code, pkce()[0])
    assert wrong.status_code == 400 and wrong.get_json()["error"] == "invalid_grant"
    assert exchange(client, public, code, verifier).status_code == 400


# -- code injection and replay (sections 4.5, 4.2.4) -------------------------------------------

def test_a_code_of_one_client_is_refused_to_another(client: FlaskClient, public: str) -> None:
    verifier, challenge = pkce()
    code = code_for(client, public, challenge)
    other = register(client)["client_id"]
    response = exchange(client, other, code, verifier)
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_grant"


def test_an_unknown_code_is_refused(client: FlaskClient, public: str) -> None:
    response = exchange(client, public, "made-up-code", pkce()[0])
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_grant"


def test_a_code_expires_after_60_seconds(client: FlaskClient, public: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from flask_tooldiscovery.identity.authorization_server import records

    verifier, challenge = pkce()
    code = code_for(client, public, challenge)
    later = time.time() + 61
    monkeypatch.setattr(records.time, "time", lambda: later)
    response = exchange(client, public, code, verifier)
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_grant"


def test_the_redirect_uri_at_the_token_endpoint_must_be_the_authorized_one(client: FlaskClient, public: str) -> None:
    verifier, challenge = pkce()
    code = code_for(client, public, challenge)
    response = exchange(client, public, code, verifier, redirect_uri=REDIRECT.replace("5173", "5174"))
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_grant"


# -- redirect URI manipulation and open redirectors (sections 4.1, 4.11) -----------------------

@pytest.mark.parametrize("uri", ["https://attacker.example/callback", REDIRECT + "/../evil", REDIRECT + "?x=1",
                                 "http://127.0.0.1.attacker.example:5173/callback", "javascript:alert(1)",
                                 'https://x.example/"><script>'])
def test_an_unregistered_redirect_uri_is_never_redirected_to(client: FlaskClient, public: str, uri: str,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    _, challenge = pkce()
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        response = authorize(client, authorize_params(public, challenge, redirect_uri=uri))
        page = authorize(client, authorize_params(public, challenge, redirect_uri=uri), html=True)
    assert response.status_code == 400 and "Location" not in response.headers
    assert response.get_json()["error"] == "invalid_request"
    assert page.status_code == 400 and "Location" not in page.headers and page.mimetype == "text/html"
    assert "<script>" not in page.get_data(as_text=True)
    assert "not redirected" in caplog.text


def test_an_unknown_client_is_never_redirected_to(client: FlaskClient) -> None:
    _, challenge = pkce()
    response = authorize(client, authorize_params("no-such-client", challenge))
    assert response.status_code == 400 and "Location" not in response.headers
    assert response.get_json()["error"] == "invalid_client"


def test_only_loopback_redirects_may_change_port(client: FlaskClient) -> None:
    registered = register(client, redirect_uris=["https://app.example/cb"])
    sign_in(client)
    _, challenge = pkce()
    response = authorize(client, authorize_params(registered["client_id"], challenge,
                                                  redirect_uri="https://app.example:8443/cb"))
    assert response.status_code == 400 and "Location" not in response.headers


# -- mix-up (section 4.4): iss in every authorization response ---------------------------------

def test_every_authorization_response_names_the_issuer(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    allowed = decide(client, consent(client, authorize_params(public, challenge)))
    denied = decide(client, consent(client, authorize_params(public, challenge)), "deny")
    failed = redirected_error(authorize(client, authorize_params(public, challenge, scope="nothing-known")))
    assert allowed["iss"] == denied["iss"] == failed["iss"] == "http://localhost"
    assert failed["error"] == "invalid_scope"


# -- CSRF on the consent page (section 4.7) -----------------------------------------------------

def test_consent_without_its_token_is_refused(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    form = consent(client, authorize_params(public, challenge))
    fields = {k: v for k, v in form.fields.items() if k != "csrf_token"}
    response = client.post("/oauth/authorize", data={**fields, "decision": "allow"})
    assert response.status_code == 403 and "Location" not in response.headers
    assert response.get_json()["error"] == "invalid_request"


def test_consent_from_another_session_is_refused(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    form = consent(client, authorize_params(public, challenge))
    victim = client.application.test_client()
    sign_in(victim, "victim")
    victim.get("/oauth/authorize?" + urlencode(authorize_params(public, challenge)))  # the victim's own nonce
    response = victim.post("/oauth/authorize", data={**form.fields, "decision": "allow"})
    assert response.status_code == 403


@pytest.mark.parametrize("field, value", [("state", "another-state"), ("redirect_uri", REDIRECT.replace("5173", "1")),
                                          ("scope", "tools admin"), ("code_challenge", "a" * 43)])
def test_consent_for_other_parameters_than_shown_is_refused(client: FlaskClient, public: str, field: str,
                                                            value: str) -> None:
    _, challenge = pkce()
    form = consent(client, authorize_params(public, challenge))
    response = client.post("/oauth/authorize", data={**form.fields, field: value, "decision": "allow"})
    assert response.status_code == 403 and "Location" not in response.headers


def test_the_consent_page_cannot_be_framed(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    page = client.get("/oauth/authorize?" + urlencode(authorize_params(public, challenge)))
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]


# -- a token for another resource (RFC 8707; section 4.9 audience restriction) -----------------

def test_a_resource_of_another_server_is_refused(client: FlaskClient, public: str) -> None:
    _, challenge = pkce()
    answer = redirected_error(authorize(client, authorize_params(public, challenge,
                                                                 resource="https://elsewhere.example/mcp")))
    assert answer["error"] == "invalid_target"


def test_a_token_for_one_host_is_refused_at_another(client: FlaskClient) -> None:
    _, answer = tokens(client, resource="http://localhost/mcp")
    assert call(client, answer["access_token"]).status_code == 200
    elsewhere = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                          "params": {"name": "whoami", "arguments": {}}},
                            headers={"Accept": "application/json, text/event-stream", "Host": "other.test",
                                     "MCP-Protocol-Version": "2025-11-25",
                                     "Authorization": f"Bearer {answer['access_token']}"})
    assert elsewhere.status_code == 401
    assert 'error="invalid_token"' in elsewhere.headers["WWW-Authenticate"]


def test_a_token_request_for_another_resource_than_authorized_is_refused(client: FlaskClient, public: str) -> None:
    verifier, challenge = pkce()
    code = code_for(client, public, challenge, resource="http://localhost/mcp")
    response = exchange(client, public, code, verifier, resource="http://localhost/other")
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_target"


def test_a_token_request_may_narrow_a_grant_for_the_whole_app(client: FlaskClient, public: str) -> None:
    verifier, challenge = pkce()
    code = code_for(client, public, challenge)  # no resource: the whole app
    response = exchange(client, public, code, verifier, resource="http://localhost/mcp")
    assert response.status_code == 200
    assert call(client, response.get_json()["access_token"]).status_code == 200
    code = code_for(client, public, challenge)
    elsewhere = exchange(client, public, code, verifier, resource="https://elsewhere.example/mcp")
    assert elsewhere.status_code == 400 and elsewhere.get_json()["error"] == "invalid_target"


# -- refresh token replay (section 4.14) and confidential clients --------------------------------

def test_a_refresh_token_of_another_client_is_refused(client: FlaskClient) -> None:
    _, answer = tokens(client)
    other = register(client)["client_id"]
    response = client.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": other,
                                                 "refresh_token": answer["refresh_token"]})
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_grant"


def test_a_confidential_client_must_authenticate(client: FlaskClient) -> None:
    registered = register(client, token_endpoint_auth_method="client_secret_basic")
    assert registered["client_secret"]
    sign_in(client)
    verifier, challenge = pkce()
    code = code_for(client, registered["client_id"], challenge)
    anonymous = exchange(client, registered["client_id"], code, verifier)
    assert anonymous.status_code in (400, 401) and anonymous.get_json()["error"] == "invalid_client"
    code = code_for(client, registered["client_id"], challenge)
    wrong = client.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                              "redirect_uri": REDIRECT, "code_verifier": verifier},
                        auth=(registered["client_id"], "wrong"))
    assert wrong.status_code == 401 and wrong.get_json()["error"] == "invalid_client"
    code = code_for(client, registered["client_id"], challenge)
    right = client.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                              "redirect_uri": REDIRECT, "code_verifier": verifier},
                        auth=(registered["client_id"], registered["client_secret"]))
    assert right.status_code == 200 and right.get_json()["access_token"]


# -- malformed registrations (RFC 7591 section 3.2.2) --------------------------------------------

@pytest.mark.parametrize("body, error", [
    ({}, "invalid_redirect_uri"),
    ({"redirect_uris": "https://a.example/cb"}, "invalid_redirect_uri"),
    ({"redirect_uris": []}, "invalid_redirect_uri"),
    ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["http://public.example/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://a.example/cb#frag"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ['https://a.example/"cb']}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://a.example/cb"], "grant_types": ["password"]}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"},
     "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example/cb"], "scope": 'tools "evil\\'}, "invalid_client_metadata"),
    ({"redirect_uris": ["https://a.example/cb"], "client_name": ["not", "a", "string"]}, "invalid_client_metadata"),
])
def test_malformed_registration_metadata_is_refused(client: FlaskClient, body: dict[str, Any], error: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        response = client.post("/oauth/register", json=body)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"] == error and response.get_json()["error_description"]
    assert "registration refused" in caplog.text


@pytest.mark.parametrize("data, content_type", [(b"not json", "application/json"), (b"[1, 2]", "application/json"),
                                                (b"redirect_uris=x", "application/x-www-form-urlencoded")])
def test_a_registration_that_is_not_a_json_object_is_refused(client: FlaskClient, data: bytes,
                                                             content_type: str) -> None:
    response = client.post("/oauth/register", data=data, content_type=content_type)
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_client_metadata"


def test_a_public_client_gets_no_secret_and_a_confidential_one_a_secret_stored_hashed(client: FlaskClient) -> None:
    public = register(client)
    confidential = register(client, token_endpoint_auth_method="client_secret_post")
    assert "client_secret" not in public and public["token_endpoint_auth_method"] == "none"
    assert len(confidential["client_secret"]) >= 32
    from flask_tooldiscovery.identity.authorization_server.storage import for_uri

    stored = for_uri(None).get("client:" + confidential["client_id"])
    assert stored is not None and confidential["client_secret"] not in str(stored)


def test_tokens_are_stored_as_hashes_only(client: FlaskClient) -> None:
    from flask_tooldiscovery.identity.authorization_server.storage import digest, for_uri

    _, answer = tokens(client)
    store = for_uri(None)
    assert store.get("access:" + digest(answer["access_token"])) is not None
    assert store.get("access:" + answer["access_token"]) is None
    assert answer["access_token"] not in str(store.get("access:" + digest(answer["access_token"])))


# -- the token endpoint's own errors --------------------------------------------------------------

@pytest.mark.parametrize("data, error", [
    ({}, "unsupported_grant_type"),
    ({"grant_type": "password", "username": "a", "password": "b"}, "unsupported_grant_type"),
    ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
    ({"grant_type": "authorization_code", "client_id": "no-such-client", "code": "x"}, "invalid_client"),
    ({"grant_type": "refresh_token", "client_id": "no-such-client", "refresh_token": "x"}, "invalid_client"),
])
def test_bad_token_requests_get_the_rfc_error(client: FlaskClient, data: dict[str, str], error: str) -> None:
    response = client.post("/oauth/token", data=data)
    assert response.status_code in (400, 401) and response.get_json()["error"] == error
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("method, path, kwargs", [
    ("post", "/oauth/register", {"json": {"redirect_uris": ["https://a.example/cb"], "jwks": "not a key set"}}),
    ("post", "/oauth/register", {"json": {"redirect_uris": ["https://a.example:99999/cb"]}}),
    ("post", "/oauth/register", {"json": {"redirect_uris": ["https://[::1/cb"]}}),
    ("post", "/oauth/register", {"data": b"\xff\xfe", "content_type": "application/json"}),
    ("post", "/oauth/token", {"data": {"grant_type": "authorization_code", "code": "x"},
                              "headers": {"Authorization": "Basic !!!"}}),
    ("post", "/oauth/token", {"data": {"grant_type": ["authorization_code", "refresh_token"]}}),
    ("post", "/oauth/token", {"data": {"grant_type": "authorization_code", "code": "\u2603" * 5000,
                                       "client_id": "https://[::1/c.json"}}),
    ("post", "/oauth/revoke", {"data": {"token": "x", "token_type_hint": "weird"}}),
    ("get", "/oauth/authorize", {"query_string": {"response_type": "code", "client_id": "https://a.example:99999/c"}}),
    ("get", "/oauth/authorize", {"query_string": "client_id=a&client_id=b&response_type=code"}),
])
def test_odd_input_is_a_client_error_never_a_500(client: FlaskClient, method: str, path: str,
                                                 kwargs: dict[str, Any]) -> None:
    response = getattr(client, method)(path, **kwargs)
    assert 400 <= response.status_code < 500, response.get_data(as_text=True)
    assert response.get_json()["error"]
