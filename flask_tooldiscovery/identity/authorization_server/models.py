"""The records Authlib's grants read, as the mixins it expects: a client (registered, or described
by its metadata document), an authorization code, a token, and the user a grant is for."""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, ClientMixin, TokenMixin

from .storage import Record, digest

#: Hosts of redirect URIs whose port may vary (RFC 8252 section 7.3: native apps listen on a
#: loopback port chosen when they start; ``localhost`` as most desktop clients write it).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def same_redirect(registered: str, given: str) -> bool:
    """``given`` is ``registered`` exactly, or both are http loopback URIs that differ in port only."""
    if hmac.compare_digest(registered.encode(), given.encode()):
        return True
    try:
        a, b = urlsplit(registered), urlsplit(given)
        ports = (a.port, b.port)
    except ValueError:
        return False
    del ports
    return (a.scheme == b.scheme == "http" and a.hostname in LOOPBACK_HOSTS and a.hostname == b.hostname
            and a.path == b.path and a.query == b.query and not a.fragment and not b.fragment
            and a.username is None and b.username is None)


@dataclass
class User:
    """The person a grant is for: the app's user id, as ``get_id()`` or the ``oauth_user`` hook said."""

    id: str

    def get_user_id(self) -> str:
        return self.id

    def __bool__(self) -> bool:
        return bool(self.id)


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    """A client: registered (RFC 7591) or described by its Client ID Metadata Document."""

    client_id: str
    redirect_uris: list[str]
    token_endpoint_auth_method: str = "none"
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])
    response_types: list[str] = field(default_factory=lambda: ["code"])
    client_name: str | None = None
    client_uri: str | None = None
    scope: str | None = None
    secret_hash: str | None = None
    #: The client_id is the URL of its metadata document (CIMD).
    from_document: bool = False
    issued_at: int = field(default_factory=lambda: int(time.time()))

    @classmethod
    def from_record(cls, record: Record) -> Client:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in record.items() if k in fields})

    def record(self) -> Record:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def name(self) -> str:
        """What the consent page calls it: its client_name, else its client_id."""
        return self.client_name or self.client_id

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        # the server's supported scopes are applied by the grant (it knows them); here the client's own
        allowed = set(self.scope.split()) if self.scope else None
        asked = (scope or "").split()
        return " ".join(s for s in dict.fromkeys(asked) if allowed is None or s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(same_redirect(uri, redirect_uri) for uri in self.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        if not self.secret_hash:
            return False
        return hmac.compare_digest(self.secret_hash, digest(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type in self.response_types

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class Code(AuthorizationCodeMixin):  # type: ignore[misc]
    """An authorization code's record (the code itself is not kept)."""

    client_id: str
    user_id: str
    redirect_uri: str | None
    scope: str
    code_challenge: str
    code_challenge_method: str
    resource: str
    family: str
    issued_at: float

    def get_redirect_uri(self) -> str | None:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class Token(TokenMixin):  # type: ignore[misc]
    """An access or refresh token's record: whose, for which client, scope and resource, in which
    grant family (the chain of refreshes from one consent)."""

    kind: str
    client_id: str
    user_id: str
    scope: str
    resource: str
    family: str
    expires_at: float
    key: str = ""

    @classmethod
    def from_record(cls, record: Record, key: str = "") -> Token:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in record.items() if k in fields and k != "key"}, key=key)

    def record(self) -> Record:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "key"}

    def check_client(self, client: Any) -> bool:
        return bool(hmac.compare_digest(self.client_id.encode(), str(client.get_client_id()).encode()))

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return max(int(self.expires_at - time.time()), 0)

    def is_expired(self) -> bool:
        return time.time() >= self.expires_at

    def is_revoked(self) -> bool:
        return False

    def get_user(self) -> User:
        return User(self.user_id)

    def get_client(self) -> Any:
        return None


__all__ = ["LOOPBACK_HOSTS", "Client", "Code", "Token", "User", "same_redirect"]
