"""Results POSTed to a URL a client named (asynchronous tool calls): which URLs may be reached,
and delivery retried with exponential backoff.

A callback URL comes from a request, so it could point the server at itself or its private
network. :func:`refused` allows a listed host over http or https; with no list, https only, to a
host whose every address is public (no loopback, private, link-local, reserved or multicast
address). It is checked when the call arrives and again before each attempt; redirects are not
followed. Log lines name the URL without its query (which may hold a signature), never headers.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..observe.logs import log

#: The longest wait between two attempts, in seconds.
MAX_BACKOFF = 60.0


def refused(url: str, hosts: tuple[str, ...], setting: str) -> str | None:
    """Why no callback may go to ``url`` (``None``: it may). ``hosts``: the allow-list (``.example.com``
    also allows its subdomains), named ``setting`` in the reasons."""
    try:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").rstrip("."), parts.port
    except ValueError:
        return "it is not a valid URL"
    if parts.scheme not in ("http", "https") or not host or parts.username is not None:
        return "it is not an absolute http(s) URL without credentials"
    if hosts:
        if any(host == h or (h.startswith(".") and (host.endswith(h) or host == h[1:]))
               for h in (h.lower().strip("[]") for h in hosts)):
            return None
        return f"host {host!r} is not in {setting}"
    if parts.scheme != "https":
        return f"only https callbacks are allowed unless the host is in {setting}"
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return f"host {host!r} cannot be resolved"
    ips = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if any(not ip.is_global or ip.is_multicast for ip in ips):
        return f"host {host!r} has a loopback, private or reserved address"
    return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is an answer, not a new destination


_OPENER = urllib.request.build_opener(_NoRedirect)


def deliver(url: str, body: Any, headers: Mapping[str, str], *, attempts: int, timeout: float,
            hosts: tuple[str, ...], setting: str, ids: str, backoff: float = 0.5) -> bool:
    """POST ``body`` as JSON to ``url``, at most ``attempts`` times: a connection error, a timeout,
    a 5xx or a 429 is tried again after ``backoff`` seconds, doubling (up to :data:`MAX_BACKOFF`).
    Each failed attempt is logged at WARNING, giving up at ERROR, both naming ``ids``."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.netloc}{parts.path}"
    data = json.dumps(body).encode()
    for attempt in range(1, attempts + 1):
        reason, retry = refused(url, hosts, setting), False  # its addresses may have changed
        if reason is None:
            try:
                with _OPENER.open(urllib.request.Request(url, data, dict(headers), method="POST"), timeout=timeout):
                    return True
            except urllib.error.HTTPError as exc:
                exc.close()
                reason, retry = f"HTTP {exc.code}", exc.code >= 500 or exc.code == 429
            except (OSError, ValueError) as exc:  # refused connections, timeouts, URLError
                reason, retry = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}", True
        log.warning("flask-tooldiscovery: callback to %s failed, attempt %d of %d: %s (%s)",
                    where, attempt, attempts, reason, ids)
        if not retry or attempt == attempts:
            break
        time.sleep(min(backoff * 2 ** (attempt - 1), MAX_BACKOFF))
    log.error("flask-tooldiscovery: gave up delivering a result to %s after %d attempt(s) (%s)", where, attempt, ids)
    return False


__all__ = ["MAX_BACKOFF", "deliver", "refused"]
