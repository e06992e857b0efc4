"""What a client may say about itself, in a registration (RFC 7591) or a Client ID Metadata
Document: the checks both go through, and the :class:`~.models.Client` they make.

Redirect URIs: https, http to a loopback host (RFC 8252 section 7.3: its port may then vary), or a
private-use scheme of a native app (``cursor://...``, RFC 8252 section 7.1); never a fragment,
credentials, nor a scheme a browser runs (``javascript:``, ``data:``...). Public clients
(``none``) and confidential ones (``client_secret_basic``, ``client_secret_post``), the code and
refresh grants; anything else is refused with ``invalid_client_metadata`` or ``invalid_redirect_uri``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError, InvalidRedirectURIError

from .models import LOOPBACK_HOSTS, Client

AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")
RESPONSE_TYPES = ("code",)
#: Schemes a browser runs or reads locally: never a redirect target.
UNSAFE_SCHEMES = frozenset({"javascript", "data", "vbscript", "file", "blob", "about", "filesystem", "ws", "wss"})
MAX_REDIRECT_URIS = 20
#: ASCII characters RFC 3986 never allows in a URI (written percent-encoded when meant).
NOT_IN_URIS = frozenset('"<>\\^`{|}')
MAX_TEXT = 500


def shown(text: str, limit: int = 200) -> str:
    """``text`` as an OAuth error description may hold it (RFC 6749: printable ASCII but ``"`` and
    ``\\``), cut to ``limit`` characters."""
    return "".join(c if 0x20 <= ord(c) <= 0x7E and c not in '"\\' else "?" for c in text[:limit])


def redirect_uri_problem(uri: Any) -> str | None:
    """Why ``uri`` may not be a redirect URI (``None``: it may)."""
    if not isinstance(uri, str) or not uri or len(uri) > 2000:
        return "a redirect URI must be a non-empty string of at most 2000 characters"
    if any(ord(c) < 0x21 or ord(c) >= 0x7F or c in NOT_IN_URIS for c in uri):
        return "a redirect URI may hold only the characters of a URI (RFC 3986): no spaces, quotes or brackets"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        return "a redirect URI must be a valid absolute URI"
    scheme = parts.scheme.lower()
    if not scheme:
        return "a redirect URI must be absolute"
    if "#" in uri:
        return "a redirect URI may not have a fragment"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI may not carry credentials"
    if scheme in UNSAFE_SCHEMES:
        return f"the {scheme}: scheme may not be a redirect URI"
    if scheme == "https":
        return None if parts.hostname else "an https redirect URI must name a host"
    if scheme == "http":
        if parts.hostname in LOOPBACK_HOSTS:
            return None
        return "an http redirect URI must be a loopback one (127.0.0.1, [::1] or localhost); use https"
    return None  # a native app's private-use scheme


def _strings(data: Mapping[str, Any], name: str, default: Iterable[str]) -> list[str]:
    value = data.get(name)
    if value is None:
        return list(default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidClientMetadataError(f"{name} must be an array of strings")
    return list(dict.fromkeys(value))


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise InvalidClientMetadataError(f"{name} must be a string of at most {MAX_TEXT} characters")
    return value


def client_from_metadata(client_id: str, data: Any, *, supported_scopes: Iterable[str], document: bool,
                         secret_hash: str | None = None, default_auth: str = "client_secret_basic") -> Client:
    """The :class:`Client` ``data`` describes; :class:`InvalidClientMetadataError` or
    :class:`InvalidRedirectURIError` (whose descriptions say what is wrong) otherwise."""
    if not isinstance(data, Mapping):
        raise InvalidClientMetadataError("the client metadata must be a JSON object")
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise InvalidRedirectURIError("redirect_uris must be a non-empty array")
    if len(uris) > MAX_REDIRECT_URIS:
        raise InvalidRedirectURIError(f"at most {MAX_REDIRECT_URIS} redirect_uris")
    for uri in uris:
        if problem := redirect_uri_problem(uri):
            raise InvalidRedirectURIError(problem)
    method = data.get("token_endpoint_auth_method", "none" if document else default_auth)
    if method not in AUTH_METHODS:
        raise InvalidClientMetadataError(
            f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}")
    if document and method != "none":
        raise InvalidClientMetadataError(
            "a client metadata document's token_endpoint_auth_method must be none: it cannot share a secret")
    grant_types = _strings(data, "grant_types", GRANT_TYPES)
    if wrong := [g for g in grant_types if g not in GRANT_TYPES]:
        raise InvalidClientMetadataError(f"unsupported grant_types: {shown(' '.join(wrong))}")
    if "authorization_code" not in grant_types:
        raise InvalidClientMetadataError("grant_types must include authorization_code")
    response_types = _strings(data, "response_types", RESPONSE_TYPES)
    if response_types != ["code"]:
        raise InvalidClientMetadataError("response_types must be code only")
    scope = _text(data, "scope")
    if scope is not None and (unknown := set(scope.split()) - set(supported_scopes)):
        raise InvalidClientMetadataError(f"unknown scope(s): {shown(' '.join(sorted(unknown)))}")
    client_uri = _text(data, "client_uri")
    if client_uri is not None and urlsplit(client_uri).scheme not in ("http", "https"):
        raise InvalidClientMetadataError("client_uri must be an http(s) URL")
    return Client(client_id=client_id, redirect_uris=list(dict.fromkeys(uris)), token_endpoint_auth_method=method,
                  grant_types=grant_types, response_types=response_types, client_name=_text(data, "client_name"),
                  client_uri=client_uri, scope=scope, secret_hash=secret_hash, from_document=document)


__all__ = ["AUTH_METHODS", "GRANT_TYPES", "client_from_metadata", "redirect_uri_problem", "shown"]
