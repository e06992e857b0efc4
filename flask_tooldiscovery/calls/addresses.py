"""Which IP addresses the server may be sent to on a client's word: public ones only.

Python's :mod:`ipaddress` knows the special-purpose ranges (``is_global``), but not every IPv6
address that carries an IPv4 address and is delivered to it: NAT64 ``64:ff9b::7f00:1`` reaches
127.0.0.1 through a translator, 6to4 ``2002:7f00:1::`` through a relay. Such an address is public
only when the IPv4 address it carries is. The forms read here:

- NAT64, RFC 6052: ``64:ff9b::/96``, the IPv4 address in the last 32 bits; the local-use prefix
  ``64:ff9b:1::/48`` (RFC 8215) is a site's own translator and never public;
- 6to4, RFC 3056: ``2002::/16``, the IPv4 address in bits 16-47;
- Teredo, RFC 4380: ``2001::/32``, the server's IPv4 address in bits 32-63 and the client's in the
  last 32 bits, inverted (both must be public);
- IPv4-mapped ``::ffff:0:0/96`` (RFC 4291), IPv4-translated ``::ffff:0:0:0/96`` (RFC 2765) and the
  deprecated IPv4-compatible ``::/96``: the last 32 bits (``::`` and ``::1`` are what they are).

Multicast addresses, which Python may count as global, are refused too.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address

IPAddress = IPv4Address | IPv6Address

NAT64 = IPv6Network("64:ff9b::/96")
NAT64_LOCAL = IPv6Network("64:ff9b:1::/48")
MAPPED = IPv6Network("::ffff:0:0/96")
TRANSLATED = IPv6Network("::ffff:0:0:0/96")
COMPATIBLE = IPv6Network("::/96")
_LAST_32_BITS = ((NAT64, "NAT64"), (MAPPED, "IPv4-mapped"), (TRANSLATED, "IPv4-translated"),
                 (COMPATIBLE, "IPv4-compatible"))


def parse(text: str) -> IPAddress | None:
    """``text`` as an IP address (an IPv6 zone such as ``%eth0`` dropped), ``None`` if it is not one."""
    try:
        return ip_address(text.split("%")[0])
    except ValueError:
        return None


def carried(ip: IPv6Address) -> list[tuple[str, IPv4Address]]:
    """The IPv4 addresses ``ip`` is delivered to, each with the name of the form that carries it."""
    if ip.teredo:
        server, client = ip.teredo
        return [("Teredo server", server), ("Teredo client", client)]
    if ip.sixtofour:
        return [("6to4", ip.sixtofour)]
    if int(ip) > 1:  # :: (unspecified) and ::1 (loopback) are no IPv4 address
        for network, form in _LAST_32_BITS:
            if ip in network:
                return [(form, IPv4Address(int(ip) & 0xFFFFFFFF))]
    return []


def _public(ip: IPAddress) -> bool:
    return ip.is_global and not ip.is_multicast


def not_public(ip: IPAddress) -> str | None:
    """Why no request may go to ``ip`` (``None``: it is public), e.g. ``"the NAT64 form of 127.0.0.1"``."""
    if isinstance(ip, IPv6Address):
        if ip in NAT64_LOCAL:
            return "a local-use NAT64 address"
        for form, ipv4 in carried(ip):
            if not _public(ipv4):
                return f"the {form} form of {ipv4}"
    if not _public(ip):
        return "a loopback, private, link-local, reserved or multicast address"
    return None


__all__ = ["carried", "not_public", "parse"]
