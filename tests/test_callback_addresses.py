"""Where an Opal callback may go, with no TOOLDISCOVERY_OPAL_CALLBACK_HOSTS: public addresses only,
in every IPv6 form that carries an IPv4 address too, and the delivery connects to the very
addresses it checked (a DNS answer that changes after the check, rebinding, is never used).

The rebinding tests resolve names with a fake resolver and route TCP at the socket layer: the one
"public" address is routed to a local HTTPS receiver, loopback stays loopback, and any other
destination fails, so nothing here sends a packet beyond 127.0.0.0/8."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from flask_tooldiscovery.tasks import callbacks

from .loopback import LoopbackServer, QuietHandler

HOSTS = "TOOLDISCOVERY_OPAL_CALLBACK_HOSTS"
PUBLIC = "93.184.215.14"  # a public address: the tests route it to a local receiver, never beyond
NAME = "callback.example"


@pytest.mark.parametrize(("host", "form"), [
    ("[64:ff9b::7f00:1]", "the NAT64 form of 127.0.0.1"),
    ("[64:ff9b::a9fe:a9fe]", "the NAT64 form of 169.254.169.254"),
    ("[64:ff9b::a00:1]", "the NAT64 form of 10.0.0.1"),
    ("[64:ff9b:1::808:808]", "a local-use NAT64 address"),
    ("[2002:7f00:1::]", "the 6to4 form of 127.0.0.1"),
    ("[2002:c0a8:101::1]", "the 6to4 form of 192.168.1.1"),
    ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "the Teredo client form of 127.0.0.1"),
    ("[2001:0:a00:1:8000:63bf:f7f7:f7f7]", "the Teredo server form of 10.0.0.1"),
    ("[::ffff:127.0.0.1]", "the IPv4-mapped form of 127.0.0.1"),
    ("[::ffff:a9fe:a9fe]", "the IPv4-mapped form of 169.254.169.254"),
    ("[::ffff:0:7f00:1]", "the IPv4-translated form of 127.0.0.1"),
    ("[::7f00:1]", "the IPv4-compatible form of 127.0.0.1"),
    ("[::a00:1]", "the IPv4-compatible form of 10.0.0.1"),
    ("[::1]", "a loopback, private"),
    ("[fe80::1%25eth0]", "a loopback, private"),
    ("[ff0e::1]", "a loopback, private"),
    ("127.0.0.1", "a loopback, private"),
    ("224.0.0.1", "a loopback, private"),
])
def test_every_form_of_a_non_public_address_is_refused(host: str, form: str) -> None:
    reason = callbacks.refused(f"https://{host}/cb", (), HOSTS)
    assert reason is not None and form in reason and HOSTS in reason, reason


@pytest.mark.parametrize("host", ["8.8.8.8", "[2606:4700::1111]", "[64:ff9b::808:808]"])
def test_public_addresses_in_any_form_are_allowed(host: str) -> None:
    assert callbacks.refused(f"https://{host}/cb", (), HOSTS) is None


def test_the_allow_list_still_decides_alone() -> None:
    """A listed host is allowed over http or https whatever its addresses (the way to reach an
    internal receiver); with a list, an unlisted host is refused however public."""
    for url in ("http://[64:ff9b::7f00:1]/cb", "https://[2002:7f00:1::]:8443/cb"):
        assert callbacks.refused(url, ("64:ff9b::7f00:1", "[2002:7f00:1::]"), HOSTS) is None
    assert "not in" in (callbacks.refused("https://8.8.8.8/cb", ("cb.example.com",), HOSTS) or "")


class FakeResolver:
    """``socket.getaddrinfo`` for the names in ``answers``: each lookup of a name takes its next
    answer (the last one repeats) and is counted in ``lookups``; an IP address resolves to itself
    (through the real function, which asks no server for one); any other name is unknown."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {}
        self.lookups: list[str] = []
        self.real: Callable[..., list[tuple[Any, ...]]] = socket.getaddrinfo

    def __call__(self, host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        try:
            ipaddress.ip_address(host)
            return self.real(host, port, *args, **kwargs)
        except ValueError:
            pass
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        self.lookups.append(host)
        queue = self.answers[host]
        return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, int(port), 0, 0)) if ":" in ip
                else (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, int(port)))
                for ip in (queue.pop(0) if len(queue) > 1 else queue[0])]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> FakeResolver:
    fake = FakeResolver()
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return fake


def test_every_address_a_name_resolves_to_is_checked(resolver: FakeResolver) -> None:
    resolver.answers["mixed.example"] = [[PUBLIC, "64:ff9b::a9fe:a9fe"]]
    resolver.answers["sixtofour.example"] = [["2002:7f00:1::1"]]
    resolver.answers["public.example"] = [[PUBLIC, "2606:4700::1111"]]
    for name in ("mixed.example", "sixtofour.example"):
        reason = callbacks.refused(f"https://{name}/cb", (), HOSTS)
        assert reason is not None and name in reason and "private" in reason, reason
        assert "a9fe" not in reason and "2002" not in reason  # what a name resolves to is not told
    assert callbacks.refused("https://public.example/cb", (), HOSTS) is None


class TlsReceiver(LoopbackServer):
    """An HTTPS server on 127.0.0.1 with the certificate ``cert``: it records each POST and
    the name each client asked for (SNI), and answers 204."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        self.sni: list[str | None] = []
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.posts.append((self.path, dict(self.headers), body))
                self.reply(204)

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)

        def sni(_sock: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
            self.sni.append(name)

        context.sni_callback = sni
        super().__init__(Handler, tls=context)


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a certificate it signed for :data:`NAME`: the CA's file, the certificate's, its key's."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "callback tests CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


@pytest.fixture
def network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Two HTTPS receivers with a certificate for :data:`NAME` (trusted through ``SSL_CERT_FILE``):
    ``public`` is what :data:`PUBLIC` reaches, ``internal`` an internal service on 127.0.0.1.
    ``connected`` lists every address a socket of the test's thread connects to (not those of the
    callback senders that earlier tests' apps left running in this process)."""
    ca, cert, key = _certificates(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    public, internal = TlsReceiver(cert, key), TlsReceiver(cert, key)
    connected: list[tuple[str, int]] = []
    real_connect = socket.socket.connect

    test_thread = threading.get_ident()

    def connect(sock: socket.socket, address: Any) -> None:
        if threading.get_ident() == test_thread:
            connected.append((address[0], address[1]))
        if address[0] == PUBLIC:
            return real_connect(sock, ("127.0.0.1", public.port))
        if ipaddress.ip_address(address[0]).is_loopback:
            return real_connect(sock, address)
        raise ConnectionRefusedError(f"these tests send nothing beyond 127.0.0.0/8, not to {address[0]}")

    def connect_ex(sock: socket.socket, address: Any) -> int:
        raise AssertionError("connect_ex is not routed by these tests")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield {"public": public, "internal": internal, "connected": connected}
    public.close()
    internal.close()


def _deliver(url: str, hosts: tuple[str, ...] = ()) -> bool:
    return callbacks.deliver(url, {"message": "done"}, {"Content-Type": "application/json"}, attempts=1,
                             timeout=10, hosts=hosts, setting=HOSTS, ids="call_id=c1")


def test_the_delivery_connects_to_the_address_it_checked(network: dict[str, Any],
                                                         resolver: FakeResolver) -> None:
    """The name says a public address when checked, then 127.0.0.1 (where an internal service
    listens on the URL's port): the result reaches the checked address, over TLS for the name."""
    public, internal = network["public"], network["internal"]
    resolver.answers[NAME] = [[PUBLIC], ["127.0.0.1"]]
    assert _deliver(f"https://{NAME}:{internal.port}/results/1?sig=abc") is True
    assert internal.posts == [] and network["connected"] == [(PUBLIC, internal.port)]
    assert resolver.lookups == [NAME]  # once: checked, then connected to
    [(path, headers, body)] = public.posts
    assert path == "/results/1?sig=abc" and json.loads(body) == {"message": "done"}
    assert headers["Host"] == f"{NAME}:{internal.port}" and public.sni == [NAME]


def test_the_pinned_connection_still_checks_the_certificate_against_the_name(
        network: dict[str, Any], resolver: FakeResolver) -> None:
    resolver.answers["elsewhere.example"] = [[PUBLIC]]
    assert _deliver("https://elsewhere.example/results/2") is False  # the certificate names callback.example
    assert network["public"].posts == [] and network["connected"] == [(PUBLIC, 443)]


def test_a_listed_name_is_resolved_once_and_tried_address_by_address(
        network: dict[str, Any], resolver: FakeResolver) -> None:
    """A listed host's addresses are not checked, but still connected to as resolved: the first
    that answers gets the result (here the second, the first having nobody listening)."""
    internal = network["internal"]
    resolver.answers[NAME] = [["127.0.0.3", "127.0.0.1"], [PUBLIC]]
    assert _deliver(f"https://{NAME}:{internal.port}/results/3", hosts=(NAME,)) is True
    assert network["connected"] == [("127.0.0.3", internal.port), ("127.0.0.1", internal.port)]
    assert resolver.lookups == [NAME] and len(internal.posts) == 1 and network["public"].posts == []
