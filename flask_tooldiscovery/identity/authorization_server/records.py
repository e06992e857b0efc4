"""The authorization server's bookkeeping in the state store: clients, codes, tokens and grants.

A *grant* (a family) is what one consent gave one client for one user: its scope and resource.
Every token issued from it, through any number of refreshes, names it; revoking the grant (the
user's grants page, a refresh token used twice, a code used twice) ends them all at once, since
a token is good only while its grant is. Keys (each under the store's prefix)::

    client:<client_id>         a registered client              (kept a year)
    cimd:<sha256 of url>       a metadata document's client     (OAUTH_CIMD_CACHE_TTL)
    code:<sha256 of code>      an authorization code            (60 s, taken once)
    code-used:<sha256>         a code taken: its grant          (10 min, to revoke it on replay)
    access:<sha256 of token>   an access token, <grant id>.<secret> (OAUTH_ACCESS_TOKEN_TTL)
    refresh:<sha256 of token>  a refresh token                  (OAUTH_REFRESH_TOKEN_TTL)
    refresh-used:<sha256>      a refresh token spent            (its remaining lifetime)
    grant:<id>                 a grant: user, client, scope, resource
    user:<user id>             the set of the user's grant ids
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any

from ...observe.logs import log
from .models import Client, Code, Token
from .storage import Store, digest

#: Seconds an authorization code is valid (RFC 9700 section 4.5: short-lived; OAuth 2.1 at most 10 min).
CODE_TTL = 60
#: Seconds a taken code is remembered, so that using it again revokes what it gave.
CODE_MEMORY = 600
#: Seconds a registered client is kept.
CLIENT_TTL = 365 * 86400


@dataclass(frozen=True)
class Grant:
    """One consent: a user's grant of ``scope`` on ``resource`` to a client."""

    id: str
    user_id: str
    client_id: str
    client_name: str
    scope: str
    resource: str
    granted_at: float


class Records:
    """Clients, codes, tokens and grants in ``store``."""

    def __init__(self, store: Store, *, access_ttl: int, refresh_ttl: int) -> None:
        self.store = store
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    # -- clients ------------------------------------------------------------------------------

    def save_client(self, client: Client) -> None:
        self.store.put("client:" + client.client_id, client.record(), CLIENT_TTL)

    def client(self, client_id: str) -> Client | None:
        record = self.store.get("client:" + client_id)
        return Client.from_record(record) if record is not None else None

    # -- codes --------------------------------------------------------------------------------

    def save_code(self, code: str, record: Code) -> None:
        self.store.put("code:" + digest(code), asdict(record), CODE_TTL)

    def take_code(self, code: str, client: Client) -> Code | None:
        """The code's record, once: a code used again revokes the grant its first use made
        (RFC 6749 section 4.1.2); a code of another client is refused (and spent)."""
        key = digest(code)
        record = self.store.take("code:" + key)
        if record is None:
            used = self.store.get("code-used:" + key)
            if used is not None:
                log.warning("flask-tooldiscovery: oauth: an authorization code was used twice: its grant is revoked")
                self.revoke_grant(str(used.get("family")))
            return None
        found = Code(**record)
        self.store.put("code-used:" + key, {"family": found.family}, CODE_MEMORY)
        if time.time() - found.issued_at > CODE_TTL:
            return None
        if found.client_id != client.get_client_id():
            log.warning("flask-tooldiscovery: oauth: an authorization code was sent by another client than its own")
            return None
        return found

    # -- grants and tokens ----------------------------------------------------------------------

    def open_grant(self, family: str, *, user_id: str, client: Client, scope: str, resource: str) -> None:
        grant = Grant(id=family, user_id=user_id, client_id=client.client_id, client_name=client.name,
                      scope=scope, resource=resource, granted_at=time.time())
        self.store.put("grant:" + family, asdict(grant), self.refresh_ttl)
        self.store.add_member("user:" + user_id, family, self.refresh_ttl)

    def grant(self, family: str) -> Grant | None:
        record = self.store.get("grant:" + family)
        return Grant(**record) if record is not None else None

    def issue(self, token: dict[str, Any], grant: Grant, scope: str) -> bool:
        """Keep the hashes of ``token``'s access (and refresh) token, both of ``grant``. False (and
        nothing kept) when the grant was revoked since it was read: a refresh renews the grant's
        record only while it is there, so a revocation racing a refresh is never undone."""
        now = time.time()
        if token.get("refresh_token"):
            # the grant lives as long as its newest refresh token, if it still lives at all
            if not self.store.renew("grant:" + grant.id, asdict(grant), self.refresh_ttl):
                return False
            self.store.add_member("user:" + grant.user_id, grant.id, self.refresh_ttl)
            refresh = Token(kind="refresh", client_id=grant.client_id, user_id=grant.user_id, scope=grant.scope,
                            resource=grant.resource, family=grant.id, expires_at=now + self.refresh_ttl)
            self.store.put("refresh:" + digest(token["refresh_token"]), refresh.record(), self.refresh_ttl)
        access = Token(kind="access", client_id=grant.client_id, user_id=grant.user_id, scope=scope,
                       resource=grant.resource, family=grant.id, expires_at=now + self.access_ttl)
        self.store.put("access:" + digest(token["access_token"]), access.record(), self.access_ttl)
        return True

    def token(self, value: str, kind: str) -> Token | None:
        """The live ``kind`` token ``value`` of a live grant, or ``None``."""
        key = digest(value)
        record = self.store.get(f"{kind}:{key}")
        if record is None:
            return None
        found = Token.from_record(record, key)
        if found.is_expired() or self.store.get("grant:" + found.family) is None:
            return None
        return found

    def spend_refresh(self, token: Token) -> bool:
        """True the first time the refresh token is used; a second use revokes its whole grant
        (RFC 9700 section 4.14.2: one of the two holders stole it)."""
        if self.store.add("refresh-used:" + token.key, {"family": token.family}, max(token.get_expires_in(), 1)):
            return True
        log.warning("flask-tooldiscovery: oauth: a rotated refresh token was used again: its grant is revoked")
        self.revoke_grant(token.family)
        return False

    def revoke_token(self, token: Token) -> None:
        """RFC 7009: a refresh token ends its grant; an access token only itself."""
        if token.kind == "refresh":
            self.revoke_grant(token.family)
        else:
            self.store.delete("access:" + token.key)

    def revoke_grant(self, family: str) -> None:
        grant = self.grant(family)
        self.store.delete("grant:" + family)
        if grant is not None:
            self.store.remove_member("user:" + grant.user_id, family)

    def grants_of(self, user_id: str) -> list[Grant]:
        """The user's live grants, oldest first."""
        found = []
        for family in self.store.members("user:" + user_id):
            grant = self.grant(family)
            if grant is None:
                self.store.remove_member("user:" + user_id, family)
            elif grant.user_id == user_id:
                found.append(grant)
        return sorted(found, key=lambda g: g.granted_at)

    def revoke_client(self, user_id: str, client_id: str) -> int:
        """End every grant of the user to ``client_id``; how many there were."""
        grants = [g for g in self.grants_of(user_id) if g.client_id == client_id]
        for grant in grants:
            self.revoke_grant(grant.id)
        return len(grants)


def new_family() -> str:
    return secrets.token_urlsafe(16)


__all__ = ["CODE_TTL", "Grant", "Records", "new_family"]
