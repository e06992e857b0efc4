"""Client ID Metadata Documents: a ``client_id`` that is an https URL names a JSON document, at
that URL, describing the client (the MCP authorization spec's preferred way in, since 2025-11-25).

The document is fetched on the client's word, so it goes by the core's callback rules
(:mod:`~flask_tooldiscovery.calls.outbound`): https only, to a host whose every address is public
(no loopback, private, link-local or reserved address, nor an IPv6 form of one), resolved once and
connected to as checked (no DNS rebinding), no proxy; no redirect followed; at most
``OAUTH_CIMD_MAX_BYTES`` read within ``OAUTH_CIMD_TIMEOUT`` seconds in all. Its ``client_id`` must
be its URL exactly. A good document is kept ``OAUTH_CIMD_CACHE_TTL`` seconds in the state store.
``OAUTH_CIMD_ALLOW_LOOPBACK`` (tests) lets loopback hosts in, over http too.
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749.errors import InvalidClientError, OAuth2Error

from ...calls.outbound import checked, pinned, resolve
from ...errors import ToolDiscoveryError
from ...observe.logs import log
from .client_metadata import client_from_metadata, shown
from .models import Client
from .storage import Store, digest

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
SETTING = "TOOLDISCOVERY_OAUTH_CIMD_ALLOW_LOOPBACK"


class _DocumentError(ToolDiscoveryError):
    """The document cannot describe the client; the message says why (for the log and the client)."""


def is_document_url(client_id: str, *, allow_http: bool = False) -> bool:
    """``client_id`` names a metadata document (an https URL; http too when loopback is allowed)."""
    return client_id.startswith("https://") or (allow_http and client_id.startswith("http://"))


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a client_id URL (the CIMD rules: a path, no fragment, no credentials,
    no dot segments), or ``None``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        return "it is not a valid URL"
    if "#" in url or parts.username is not None or parts.password is not None:
        return "it may not hold a fragment or credentials"
    segments = parts.path.split("/")
    if not parts.path.strip("/") or "." in segments or ".." in segments:
        return "it must have a path, without . or .. segments"
    return None


@dataclass(frozen=True)
class Documents:
    """Fetch, check and cache metadata documents."""

    store: Store
    max_bytes: int
    timeout: float
    cache_ttl: int
    allow_loopback: bool
    supported_scopes: tuple[str, ...]

    def client(self, url: str) -> Client:
        """The client ``url`` describes; :class:`InvalidClientError` saying why not (logged)."""
        key = "cimd:" + digest(url)
        cached = self.store.get(key)
        if cached is not None:
            return Client.from_record(cached)
        try:
            document = self.fetch(url)
            if not isinstance(document, dict) or document.get("client_id") != url:
                raise _DocumentError("its client_id is not its URL")
            if "client_secret" in document or "client_secret_expires_at" in document:
                raise _DocumentError("it holds a client_secret")
            found = client_from_metadata(url, document, supported_scopes=self.supported_scopes, document=True)
        except _DocumentError as exc:
            log.warning("flask-tooldiscovery: oauth: client metadata document %s refused: %s", _shown(url), exc)
            what = f"The client metadata document cannot be used: {exc}."
            raise InvalidClientError(description=shown(what)) from None
        except OAuth2Error as exc:
            log.warning("flask-tooldiscovery: oauth: client metadata document %s refused: %s", _shown(url),
                        exc.description)
            what = f"The client metadata document is invalid: {exc.description}"
            raise InvalidClientError(description=shown(what)) from None
        if self.cache_ttl:
            self.store.put(key, found.record(), self.cache_ttl)
        return found

    def fetch(self, url: str) -> object:
        """The JSON at ``url``; :class:`_DocumentError` saying why not."""
        if problem := url_problem(url):
            raise _DocumentError(problem)
        hosts = LOOPBACK_NAMES if self.allow_loopback else ()
        reason, addresses = checked(url, hosts, SETTING)
        if reason is not None:
            raise _DocumentError(reason)
        deadline = time.monotonic() + self.timeout
        parts = urlsplit(url)
        try:
            if addresses is None:
                addresses = resolve(url)
            conn = pinned(url, addresses, self.timeout)
            try:
                conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""),
                             headers={"Accept": "application/json", "User-Agent": "flask-tooldiscovery"})
                response = conn.getresponse()
                if response.status != 200:
                    raise _DocumentError(f"it answered HTTP {response.status}"
                                        + (" (redirects are not followed)" if 300 <= response.status < 400 else ""))
                declared = response.getheader("Content-Length")
                if declared and declared.isdigit() and int(declared) > self.max_bytes:
                    raise _DocumentError(f"it is larger than {self.max_bytes} bytes")
                body = b""
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _DocumentError(f"it took longer than {self.timeout:g} s")
                    if conn.sock is not None:
                        conn.sock.settimeout(left)
                    chunk = response.read1(min(self.max_bytes + 1 - len(body), 65536))
                    if not chunk:
                        break
                    body += chunk
                    if len(body) > self.max_bytes:
                        raise _DocumentError(f"it is larger than {self.max_bytes} bytes")
            finally:
                conn.close()
        except TimeoutError:
            raise _DocumentError(f"it took longer than {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise _DocumentError(f"it could not be fetched ({type(exc).__name__})") from None
        try:
            return json.loads(body)
        except ValueError:
            raise _DocumentError("it is not JSON") from None


def _shown(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"[:300]


__all__ = ["Documents", "is_document_url", "url_problem"]
