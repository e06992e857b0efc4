"""Requests the server sends to a URL a client named (a task's callback, an OAuth client's metadata
document): which URLs may be reached, and connections to the addresses checked.

Such a URL comes from a request, so it could point the server at itself or its private
network. :func:`refused` allows a listed host over http or https; with no list, https only, to a
host whose every address is public (:mod:`.addresses`: no loopback, private, link-local, reserved
or multicast address, nor an IPv6 form of one such as NAT64 or 6to4). It is checked when the call
arrives and again before each attempt. An attempt resolves the host once and connects to the
addresses it checked, naming the host only in the Host header and to TLS (SNI and the certificate
check), so a DNS answer that changes between the check and the connection (rebinding) is never
used; for the same reason no proxy from the environment is used. Redirects are not followed.
Delivering a task's callback (attempts, backoff, limits per host) is :mod:`..tasks.callbacks`.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import sys
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import SplitResult, urlsplit

from .addresses import not_public, parse

#: A resolved address: its family and the socket address to connect to.
Address = tuple[socket.AddressFamily, tuple[Any, ...]]


def _resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` has, in the resolver's order (one lookup; an IP address is its own)."""
    found: list[Address] = []
    for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP):
        if (family, tuple(sockaddr)) not in found:
            found.append((family, tuple(sockaddr)))
    return found


def _endpoint(parts: SplitResult) -> tuple[str, int]:
    """The host (without a final dot) and port a URL names."""
    return (parts.hostname or "").rstrip("."), parts.port or (443 if parts.scheme == "https" else 80)


def _check(url: str, hosts: tuple[str, ...], setting: str) -> tuple[str | None, list[Address] | None]:
    """Why no callback may go to ``url``, else ``None`` and the checked addresses to connect to
    (``None`` too for a listed host, whose addresses are not checked)."""
    try:
        parts = urlsplit(url)
        host, _ = _endpoint(parts)  # the port too: a bad one raises here
    except ValueError:
        return "it is not a valid URL", None
    if parts.scheme not in ("http", "https") or not host or parts.username is not None:
        return "it is not an absolute http(s) URL without credentials", None
    if hosts:
        if any(host == h or (h.startswith(".") and (host.endswith(h) or host == h[1:]))
               for h in (h.lower().strip("[]") for h in hosts)):
            return None, None
        return f"host {host!r} is not in {setting}", None
    if parts.scheme != "https":
        return f"only https callbacks are allowed unless the host is in {setting}", None
    literal = parse(host)
    if literal is not None and (why := not_public(literal)):
        return f"host {host!r} is {why}: only public addresses unless the host is in {setting}", None
    try:
        addresses = _resolve(*_endpoint(parts))
    except (OSError, UnicodeError):
        return f"host {host!r} cannot be resolved", None
    ips = [parse(str(sockaddr[0])) for _, sockaddr in addresses]
    if not ips or any(ip is None or not_public(ip) for ip in ips):
        return f"host {host!r} has a loopback, private or reserved address", None
    return None, addresses


def refused(url: str, hosts: tuple[str, ...], setting: str) -> str | None:
    """Why no callback may go to ``url`` (``None``: it may). ``hosts``: the allow-list (``.example.com``
    also allows its subdomains), named ``setting`` in the reasons."""
    return _check(url, hosts, setting)[0]


def _connect(addresses: Sequence[Address], timeout: float | None,
             connect_timeout: float | None = None) -> socket.socket:
    """A TCP connection to the first of ``addresses`` that answers (within ``connect_timeout``
    each, when given, else ``timeout``); reads and writes then wait ``timeout`` at most."""
    error = OSError("no address to connect to")
    for family, sockaddr in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(connect_timeout if connect_timeout is not None else timeout)
            sock.connect(sockaddr)
            sock.settimeout(timeout)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to ``addresses`` resolved and checked beforehand: ``host`` is never
    resolved again, only named (the Host header; SNI and the certificate check over TLS)."""

    addresses: Sequence[Address] = ()
    connect_timeout: float | None = None

    def connect(self) -> None:
        sys.audit("http.client.connect", self, self.host, self.port)
        self.sock = _connect(self.addresses, self.timeout, self.connect_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPS(http.client.HTTPSConnection, _PinnedHTTP):
    """Over TLS: ``HTTPSConnection.connect`` wraps the socket its ``super().connect()`` opened,
    naming ``host``; in this class's method order that is :meth:`_PinnedHTTP.connect`."""


def post(url: str, addresses: Sequence[Address], data: bytes, headers: Mapping[str, str], *,
         timeout: float, connect_timeout: float | None = None) -> int:
    """POST ``data`` to ``url`` over a connection to ``addresses`` (checked beforehand, see
    :func:`checked`): the answer's status. ``connect_timeout``: seconds to connect, ``timeout``:
    seconds each read or write may wait."""
    parts = urlsplit(url)
    host, port = _endpoint(parts)
    conn = (_PinnedHTTPS(host, port, timeout=timeout, context=ssl.create_default_context())
            if parts.scheme == "https" else _PinnedHTTP(host, port, timeout=timeout))
    conn.addresses = addresses
    conn.connect_timeout = connect_timeout
    try:
        conn.request("POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), data, dict(headers))
        return conn.getresponse().status
    finally:
        conn.close()


def checked(url: str, hosts: tuple[str, ...], setting: str) -> tuple[str | None, list[Address] | None]:
    """Why nothing may be fetched from ``url`` (``None``: it may), and the checked addresses to connect
    to (``None`` for a listed host: resolve it with :func:`resolve`). The callback rules, for other
    fetches a client's word starts (an OAuth client's metadata document)."""
    return _check(url, hosts, setting)


def resolve(url: str) -> list[Address]:
    """Every address the host of ``url`` has (one lookup)."""
    return _resolve(*_endpoint(urlsplit(url)))


def pinned(url: str, addresses: Sequence[Address], timeout: float) -> http.client.HTTPConnection:
    """An HTTP(S) connection for ``url`` that connects to ``addresses`` only (see :func:`checked`)."""
    parts = urlsplit(url)
    host, port = _endpoint(parts)
    conn = (_PinnedHTTPS(host, port, timeout=timeout, context=ssl.create_default_context())
            if parts.scheme == "https" else _PinnedHTTP(host, port, timeout=timeout))
    conn.addresses = addresses
    return conn


__all__ = ["Address", "checked", "pinned", "post", "refused", "resolve"]
