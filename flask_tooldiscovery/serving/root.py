"""Where the app is served, as a document's absolute URLs need it.

A discovery document that holds absolute URLs (the UTCP manual, the OpenAPI document, the Server
Card, the discovery manifest) is built for a :class:`Root`: its view passes the request's
(:meth:`Root.of`), ``flask tools export`` one made from its ``--base-url`` or the app's own
configuration (:meth:`Root.at`), so that no request is pushed to build one outside a request.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from flask import Request, current_app
from werkzeug.sansio.utils import get_current_url, get_host


@dataclass(frozen=True, slots=True)
class Root:
    """What a request at the app's root says of where it is served (its fields are named as
    ``flask.Request``'s, which say the same)."""

    #: ``request.url_root``: the scheme, host and script root, with one slash at its end
    #: (``https://tools.example.com/app/``).
    url_root: str
    #: ``request.scheme``: ``http`` or ``https``.
    scheme: str
    #: ``request.host``: the host name, with its port when it is not the scheme's own.
    host: str

    @classmethod
    def of(cls, req: Request) -> Root:
        """Where ``req`` was sent."""
        return cls(req.url_root, req.scheme, req.host)

    @classmethod
    def at(cls, base_url: str | None = None) -> Root:
        """The current app served at ``base_url`` (a URL with no query string or fragment), else at
        :func:`configured_base`: what a request there would say (``ValueError`` when it is not one)."""
        scheme, netloc, path, query, fragment = urlsplit(base_url or configured_base())
        if query or fragment or not scheme or not netloc:
            raise ValueError(f"{base_url!r} is not a base URL (scheme://host/path, no query string or fragment)")
        host = get_host(scheme, netloc)
        if not host:
            raise ValueError(f"{base_url!r} names no host a request could be sent to")
        return cls(get_current_url(scheme, host, unquote(path.rstrip("/"))), scheme, host)


def configured_base() -> str:
    """The current app's own base URL, where nothing else says where it is served: its
    ``PREFERRED_URL_SCHEME``, ``SERVER_NAME`` (else ``localhost``) and ``APPLICATION_ROOT``, as
    Flask's own test requests have it."""
    config = current_app.config
    root = (config.get("APPLICATION_ROOT") or "/").lstrip("/")
    return f"{config.get('PREFERRED_URL_SCHEME') or 'http'}://{config.get('SERVER_NAME') or 'localhost'}/{root}"


__all__ = ["Root", "configured_base"]
