"""What the end-to-end OAuth tests need around the app and the clients: a person who signs in and
decides in Chromium (Playwright, Debian's chromium), the loopback listener a desktop client takes
its authorization redirect on (RFC 8252), an HTTPS server on loopback for Client ID Metadata
Documents (with its own test CA, which the app under test is told to trust, as a module fixture), and
the token storage the official Python client asks for. (PKCE pairs: :func:`tests.oauth_helpers.pkce`.)

Nothing here knows the authorization server's internals: every step is what a browser, a client or
an attacker does over HTTP."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import queue
import shutil
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from .loopback import LoopbackServer, QuietHandler

CHROMIUM = os.environ.get("TOOLDISCOVERY_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HTML = "text/html; charset=utf-8"
#: The MCP eras the official clients speak: (the Python SDK's ``mode``, the version it settles on).
ERAS = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


def unavailable(why: str) -> None:
    """Skip locally; in CI a missing prerequisite is a failure, never a silent skip."""
    if os.environ.get("CI"):
        pytest.fail(f"cannot run in CI: {why}")
    pytest.skip(why)


def require_chromium() -> None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        unavailable("playwright is not installed")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        unavailable(f"no Chromium at {CHROMIUM}")


def require_oauth_server() -> None:
    """The authorization server (``TOOLDISCOVERY_OAUTH_SERVER``, issue #38) is in this tree and its
    extra is installed: its RFC 8414 metadata is served by the test app."""
    from .apps.oauth_login_app import create_app

    try:
        served = create_app().test_client().get("/.well-known/oauth-authorization-server").status_code == 200
    except Exception as exc:  # the oauth extra missing: init_app says which pip line to run
        unavailable(f"the authorization server cannot start: {exc}")
    if not served:
        unavailable("the authorization server (TOOLDISCOVERY_OAUTH_SERVER, issue #38) is not in this tree")


# --- the loopback listener a desktop client takes its redirect on ---


class CallbackListener(LoopbackServer):
    """An HTTP server on 127.0.0.1 that takes authorization responses at ``/callback`` (as a desktop
    client does, RFC 8252 §7.3) and hands each one's query to ``wait``."""

    def __init__(self) -> None:
        self.answers: queue.Queue[dict[str, str]] = queue.Queue()
        answers = self.answers

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/callback":
                    self.send_error(404)
                    return
                answers.put({k: v[0] for k, v in parse_qs(parts.query).items()})
                self.reply(200, b"<!doctype html><title>Signed in</title><p>You may close this window.", HTML)

        super().__init__(Handler)
        self.url = f"http://127.0.0.1:{self.port}/callback"

    def wait(self, timeout: float = 60) -> dict[str, str]:
        """The next authorization response's query parameters (``code``, ``state``, ``iss`` or ``error``)."""
        return self.answers.get(timeout=timeout)


@contextlib.contextmanager
def callback_listener() -> Iterator[CallbackListener]:
    listener = CallbackListener()
    try:
        yield listener
    finally:
        listener.close()


class HTMLServer(LoopbackServer):
    """A page of another site (another origin: its own port on 127.0.0.1) at ``url``."""

    def __init__(self, page: str) -> None:
        body = page.encode()

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self.reply(200, body, HTML)

        super().__init__(Handler)
        self.url = f"http://127.0.0.1:{self.port}/"


# --- Client ID Metadata Documents over HTTPS on loopback ---


def _test_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a certificate it signed for 127.0.0.1 and localhost: (CA file, cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flask-tooldiscovery test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca_file.write_bytes(ca.public_bytes(pem))
    cert_file.write_bytes(cert.public_bytes(pem))
    key_file.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return ca_file, cert_file, key_file


class MetadataServer(LoopbackServer):
    """An HTTPS server on 127.0.0.1 serving Client ID Metadata Documents: ``put(path, document)``
    serves ``document`` (a dict) at ``https://127.0.0.1:PORT/path``; ``fetches`` counts the GETs.
    ``ca_file`` is the CA a fetcher must trust (``env`` names it for Python's ssl, requests and httpx)."""

    def __init__(self, folder: Path) -> None:
        self.ca_file, cert, key = _test_ca(folder)
        self.documents: dict[str, dict[str, Any]] = {}
        self.fetches: dict[str, int] = {}
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                server.fetches[path] = server.fetches.get(path, 0) + 1
                document = server.documents.get(path)
                if document is None:
                    self.send_error(404)
                    return
                self.reply(200, json.dumps(document).encode(), "application/json")

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        super().__init__(Handler, tls=context)
        self.base = f"https://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """Environment variables that make a server process trust this server's certificate."""
        ca = str(self.ca_file)
        return {"SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca, "CURL_CA_BUNDLE": ca}

    def put(self, path: str, document: dict[str, Any]) -> str:
        """Serve ``document`` at ``path``; its URL."""
        self.documents[path] = document
        return self.base + path

    def document_for(self, path: str, redirect_uri: str, **metadata: Any) -> str:
        """A public client's metadata document at ``path`` whose ``client_id`` is its own URL; the URL."""
        url = self.base + path
        return self.put(path, {"client_id": url, "client_name": "CIMD test client", "redirect_uris": [redirect_uri],
                               "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                               "token_endpoint_auth_method": "none", **metadata})


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetadataServer]:
    """Client ID Metadata Documents over HTTPS on 127.0.0.1, signed by a test CA the app trusts."""
    server = MetadataServer(tmp_path_factory.mktemp("cimd"))
    try:
        yield server
    finally:
        server.close()


# --- a person in Chromium ---


@dataclass
class Person:
    """A user of the app at a Chromium window: signs in on the app's login form when asked, then
    presses ``decision`` (**Allow** or **Deny**) on the consent page. ``seen`` keeps the address and
    text of each page met on the way (login, consent), for the tests to read."""

    username: str
    password: str
    decision: str = "Allow"
    seen: list[tuple[str, str]] = field(default_factory=list)
    context: Any = None

    async def sign_in(self, page: Any) -> None:
        """Fill in the app's login form ``page`` shows and press **Sign in**."""
        await page.get_by_label("Username").fill(self.username)
        await page.get_by_label("Password").fill(self.password)
        await page.get_by_role("button", name="Sign in").click()

    async def authorize(self, url: str, redirect_prefix: str) -> str:
        """Open the authorization ``url``, sign in and decide; the address the browser was sent back to."""
        page = await self.context.new_page()
        try:
            await page.goto(url)
            if urlsplit(page.url).path == "/login":
                self.seen.append((page.url, await page.inner_text("body")))
                await self.sign_in(page)
            button = page.get_by_role("button", name=self.decision, exact=True)
            await button.wait_for()
            self.seen.append((page.url, await page.inner_text("body")))
            await button.click()
            await page.wait_for_url(lambda address: address.startswith(redirect_prefix))
            return page.url
        finally:
            await page.close()


@contextlib.asynccontextmanager
async def chromium(*people: Person) -> AsyncIterator[None]:
    """Headless Chromium with a browser context (its own cookies) for each person."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            for person in people:
                person.context = await browser.new_context()
                person.context.set_default_timeout(30_000)
            yield
        finally:
            await browser.close()


# --- the official Python client's token storage ---


class MemoryStorage:
    """The official Python client's ``TokenStorage``, in memory; ``saved`` keeps every token set."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None
        self.saved: list[Any] = []

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


# --- the app under gunicorn ---


@contextlib.contextmanager
def app_server(redis_url: str, *, env: dict[str, str] | None = None, **settings: Any) -> Iterator[str]:
    """:mod:`tests.apps.oauth_login_app` under gunicorn, two gthread workers sharing ``redis_url``, with
    ``settings`` (``TOOLDISCOVERY_`` keys without the prefix); its base URL. Every connection is
    closed after its response (``--keep-alive 0``), so a client's requests land on both workers."""
    from .test_deploy import stop
    from .test_operating_server import start

    require_oauth_server()
    spec = f"tests.apps.oauth_login_app:create_app(storage={redis_url!r}, settings={settings!r})"
    base, proc = start(spec, workers=2, threads=4, ready="/.well-known/oauth-authorization-server",
                       env={**(env or {}), "GUNICORN_CMD_ARGS": "--keep-alive 0"})
    try:
        yield base
    finally:
        stop(proc)


@contextlib.contextmanager
def app_trusting(documents: MetadataServer, redis_url: str) -> Iterator[str]:
    """:func:`app_server` (with Chromium at hand) trusting ``documents``' CA and fetching Client ID
    Metadata Documents from loopback; its base URL."""
    require_chromium()
    with app_server(redis_url, env=documents.env, OAUTH_CIMD_ALLOW_LOOPBACK=True) as url:
        yield url
