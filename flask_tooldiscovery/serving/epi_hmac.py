"""Signed requests (epi-hmac), an identity source of :mod:`~flask_tooldiscovery.identity.sources`:
what Optimizely Opal sends a tool provider that holds an HMAC credential
(``TOOLDISCOVERY_OPAL_HMAC_APP_KEY`` and ``TOOLDISCOVERY_OPAL_HMAC_SECRET``).

The scheme, as the official Opal tools SDK (``opal_tools_sdk/auth/epi_hmac.py``, 0.2.3.dev0)
signs and checks it::

    Authorization: epi-hmac <app_key>:<timestamp_ms>:<nonce>:<signature>
    signature = base64(HMAC-SHA256(base64decode(secret),
                       app_key + METHOD + path[?query] + timestamp_ms + nonce + base64(md5(body))))

accepted from 5 minutes in the past to 1 minute in the future. Beyond the SDK, which tracks no
nonce (a captured request replays for 5 minutes), each nonce is accepted once within that window:
it is spent in the state store's ledger (:mod:`~flask_tooldiscovery.state.single_use`: Redis
when ``TOOLDISCOVERY_STATE_STORAGE_URI`` is set, every worker and host; else this process's).
A ledger that cannot decide refuses the request as unavailable (503), never lets it in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from urllib.parse import quote

from flask import Request

from ..errors import SpendError, Unavailable
from ..identity.sources import AuthError, Verifier
from ..state.single_use import Ledger
from ..tools.model import Identity
from . import request_state
from .body import read_body

SCHEME = "epi-hmac"
#: How old (ms) a signature's timestamp may be, and how far ahead of this clock it may run.
PAST_MS, FUTURE_MS = 300_000, 60_000


def decode_secret(secret: str) -> bytes:
    """The HMAC key of a base64 secret; :class:`ValueError` when it is not valid base64 (or empty)."""
    try:
        key = base64.b64decode(secret.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not valid base64") from None
    if not key:
        raise ValueError("empty")
    return key


def signature(key: bytes, app_key: str, method: str, target: str, timestamp: str, nonce: str, body: bytes) -> str:
    """The base64 HMAC-SHA256 a request's ``Authorization`` header carries."""
    digest = base64.b64encode(hashlib.md5(body).digest()).decode()  # the scheme's, not a safeguard
    message = f"{app_key}{method}{target}{timestamp}{nonce}{digest}".encode()
    return base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode()


def sign(key: bytes, app_key: str, method: str, target: str, body: bytes = b"", *, nonce: str,
         timestamp_ms: int | None = None) -> str:
    """An ``Authorization`` value for a request (tests and clients of ours)."""
    stamp = str(int(time.time() * 1000) if timestamp_ms is None else timestamp_ms)
    return f"{SCHEME} {app_key}:{stamp}:{nonce}:{signature(key, app_key, method, target, stamp, nonce, body)}"


def signed_target(request: Request) -> str:
    """The path and query the client signed: as sent (``RAW_URI``/``REQUEST_URI``), else rebuilt."""
    environ = request.environ
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if isinstance(raw, str) and raw.startswith("/"):
        return raw
    query = environ.get("QUERY_STRING", "")
    path = quote(request.script_root + request.path, safe="/:@!$&'()*+,;=-._~")
    return f"{path}?{query}" if query else path


class EpiHmacVerifier(Verifier):
    """Requests signed with the epi-hmac credential ``app_key``/``key``; each nonce once."""

    scheme = SCHEME
    reads = ("HTTP_AUTHORIZATION",)

    def __init__(self, app_key: str, key: bytes, realm: str, *, ledger: Ledger, max_body: int) -> None:
        super().__init__(realm)
        self.app_key = app_key
        self._key = key
        self.ledger = ledger
        self.max_body = max_body

    def verify(self, request: Request) -> Identity | None:
        header = request.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != SCHEME:
            return None
        parts = credential.strip().split(":")
        if len(parts) != 4 or not all(parts):
            raise AuthError("malformed epi-hmac credential")
        app_key, stamp, nonce, given = parts
        if not hmac.compare_digest(app_key.encode(), self.app_key.encode()):
            raise AuthError("epi-hmac app key not accepted")
        if not stamp.isdigit():
            raise AuthError("epi-hmac timestamp is not a number")
        age = int(time.time() * 1000) - int(stamp)
        if age > PAST_MS:
            raise AuthError("epi-hmac signature is stale")
        if -age > FUTURE_MS:
            raise AuthError("epi-hmac timestamp is in the future")
        state = request_state.current()
        if state.raw is None:
            state.raw = read_body(self.max_body)  # kept: the body is parsed from these very bytes
        expected = signature(self._key, app_key, request.method, signed_target(request), stamp, nonce, state.raw)
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise AuthError("epi-hmac signature does not match")
        try:
            fresh = self.ledger.spend(f"epi-hmac:{app_key}:{nonce}", (PAST_MS + FUTURE_MS) / 1000)
        except SpendError as exc:
            raise Unavailable("Signed requests cannot be checked right now.", reason=str(exc)) from None
        if not fresh:
            raise AuthError("epi-hmac nonce was used before")
        return Identity(method=SCHEME, claims={"app_key": app_key})


__all__ = ["EpiHmacVerifier", "decode_secret", "sign", "signature", "signed_target"]
