"""Client ID Metadata Documents: a client_id that is a URL, its document fetched over real HTTP
from a local server (allowed by ``TOOLDISCOVERY_OAUTH_CIMD_ALLOW_LOOPBACK``, as tests need), and
the documents refused: huge, slow, redirected, another client_id, a secret, not JSON, or on a
loopback or private address when loopback is not allowed. Each refusal is ``invalid_client``
saying why, logged, never a redirect."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from werkzeug.wrappers import Request, Response

from .conftest import live_server
from .oauth_helpers import REDIRECT, authorize_params, consent, decide, exchange, oauth_app, pkce, sign_in

#: The fetch's limit in these tests: long enough that a good document served on loopback always
#: comes within it on a busy machine (0.5 s did not, once, in a clean-clone run), short enough to
#: show the slow documents are cut before they come.
LIMIT = 2.0
#: How long the slow documents take to come.
SLOW = 6.0


class Documents:
    """A local server of metadata documents, counting the fetches of each path."""

    def __init__(self) -> None:
        self.base = ""
        self.hits: dict[str, int] = {}

    def document(self, path: str, **extra: Any) -> dict[str, Any]:
        return {"client_id": f"{self.base}{path}", "client_name": "Doc Client", "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
                **extra}

    def __call__(self, environ: Any, start_response: Any) -> Any:
        request = Request(environ)
        path = request.path
        self.hits[path] = self.hits.get(path, 0) + 1
        if path == "/slow.json":
            time.sleep(SLOW)
        if path == "/drip.json":
            def drip() -> Iterator[bytes]:
                for _ in range(int(SLOW / 0.2)):
                    yield b" "
                    time.sleep(0.2)
            return Response(drip(), mimetype="application/json")(environ, start_response)
        if path == "/huge-chunked.json":  # no Content-Length: the limit is counted while reading
            text = json.dumps(self.document(path, padding="x" * 100_000)).encode()
            chunks = (text[i:i + 4096] for i in range(0, len(text), 4096))
            return Response(chunks, mimetype="application/json")(environ, start_response)
        bodies: dict[str, Any] = {
            "/good.json": self.document("/good.json"),
            "/slow.json": self.document("/slow.json"),
            "/huge.json": self.document("/huge.json", padding="x" * 100_000),
            "/wrong-id.json": self.document("/other.json"),
            "/secret.json": self.document("/secret.json", client_secret="s3cret"),
            "/confidential.json": self.document("/confidential.json", token_endpoint_auth_method="client_secret_basic"),
            "/evil-redirect.json": self.document("/evil-redirect.json", redirect_uris=["javascript:alert(1)"]),
        }
        if path == "/redirect.json":
            response = Response(status=302, headers={"Location": f"{self.base}/good.json"})
        elif path == "/not-json":
            response = Response("<html>hello</html>", mimetype="text/html")
        elif path in bodies:
            response = Response(json.dumps(bodies[path]), mimetype="application/json")
        else:
            response = Response("not found", status=404)
        return response(environ, start_response)


@pytest.fixture
def documents() -> Iterator[Documents]:
    served = Documents()
    with live_server(served) as base:  # type: ignore[arg-type]
        served.base = base
        yield served


def app(**config: Any) -> Any:
    return oauth_app(TOOLDISCOVERY_OAUTH_CIMD_ALLOW_LOOPBACK=True, TOOLDISCOVERY_OAUTH_CIMD_TIMEOUT=LIMIT, **config)


def test_a_metadata_document_is_a_client(documents: Documents) -> None:
    client = app().test_client()
    sign_in(client)
    client_id = f"{documents.base}/good.json"
    verifier, challenge = pkce()
    form = consent(client, authorize_params(client_id, challenge))
    assert "Doc Client" in form.html and client_id in form.html
    code = decide(client, form)["code"]
    answer = exchange(client, client_id, code, verifier)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["refresh_token"]
    assert documents.hits["/good.json"] == 1  # cached: the consent and the token request read it once


def test_the_cache_expires(documents: Documents) -> None:
    client = app(TOOLDISCOVERY_OAUTH_CIMD_CACHE_TTL=0).test_client()
    sign_in(client)
    client_id = f"{documents.base}/good.json"
    consent(client, authorize_params(client_id, pkce()[1]))
    consent(client, authorize_params(client_id, pkce()[1]))
    assert documents.hits["/good.json"] >= 2


@pytest.mark.parametrize("path, reason", [
    ("/huge.json", "larger than 5120 bytes"),
    ("/huge-chunked.json", "larger than 5120 bytes"),
    ("/slow.json", f"took longer than {LIMIT:g} s"),
    ("/drip.json", f"took longer than {LIMIT:g} s"),
    ("/redirect.json", "HTTP 302 (redirects are not followed)"),
    ("/wrong-id.json", "its client_id is not its URL"),
    ("/secret.json", "it holds a client_secret"),
    ("/confidential.json", "must be none"),
    ("/evil-redirect.json", "javascript"),
    ("/not-json", "it is not JSON"),
    ("/missing.json", "HTTP 404"),
])
def test_a_bad_document_is_refused_saying_why(documents: Documents, path: str, reason: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    client = app().test_client()
    sign_in(client)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        response = client.get("/oauth/authorize?" + urlencode(authorize_params(f"{documents.base}{path}",
                                                                                 pkce()[1])))
    # The slow ones are cut at the limit, well before the document would have come (a loaded
    # machine may take a while to run the request, so the bound is not the limit itself).
    assert time.monotonic() - started < SLOW - 1
    assert response.status_code == 400 and "Location" not in response.headers
    body = response.get_json()
    assert body["error"] == "invalid_client" and reason.split()[0] in body["error_description"]
    assert reason in caplog.text


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "10.0.0.1", "169.254.169.254", "[::1]"])
def test_a_document_on_a_private_address_is_refused(host: str, caplog: pytest.LogCaptureFixture) -> None:
    client = oauth_app().test_client()  # loopback not allowed: the default
    sign_in(client)
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        response = client.get("/oauth/authorize?" + urlencode(authorize_params(f"https://{host}/client.json",
                                                                                 pkce()[1])))
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_client"
    assert "loopback" in caplog.text or "private" in caplog.text


def test_an_http_client_id_is_not_a_document_without_the_test_setting() -> None:
    client = oauth_app().test_client()
    response = client.get("/oauth/authorize?" + urlencode(authorize_params("http://public.example/c.json",
                                                                             pkce()[1])))
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_client"


@pytest.mark.parametrize("client_id", ["https://a.example/", "https://a.example", "https://a.example/x/../c.json",
                                       "https://user:pw@a.example/c.json"])
def test_a_client_id_url_must_be_well_formed(client_id: str) -> None:
    client = oauth_app().test_client()
    response = client.get("/oauth/authorize?" + urlencode(authorize_params(client_id, pkce()[1])))
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_client"


def test_documents_can_be_turned_off(documents: Documents) -> None:
    client = app(TOOLDISCOVERY_OAUTH_CLIENT_METADATA_DOCUMENTS=False).test_client()
    response = client.get("/oauth/authorize?" + urlencode(authorize_params(f"{documents.base}/good.json",
                                                                             pkce()[1])))
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_client"
    assert "/good.json" not in documents.hits
    metadata = client.get("/.well-known/oauth-authorization-server").get_json()
    assert metadata["client_id_metadata_document_supported"] is False
