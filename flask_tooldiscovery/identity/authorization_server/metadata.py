"""RFC 8414 authorization server metadata: where each endpoint is and what this server supports,
under the issuer (``/.well-known/oauth-authorization-server``)."""

from __future__ import annotations

from typing import Any

from .client_metadata import AUTH_METHODS, GRANT_TYPES
from .settings import OAuthServerSettings

WELL_KNOWN = "/.well-known/oauth-authorization-server"
AUTHORIZE, TOKEN, REGISTER, REVOKE, GRANTS = ("/oauth/authorize", "/oauth/token", "/oauth/register",
                                             "/oauth/revoke", "/oauth/grants")


def document(issuer: str, options: OAuthServerSettings) -> dict[str, Any]:
    """The metadata of the server whose issuer is ``issuer``."""
    out: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": issuer + AUTHORIZE,
        "token_endpoint": issuer + TOKEN,
        "revocation_endpoint": issuer + REVOKE,
        "scopes_supported": list(options.scopes),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(GRANT_TYPES),
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": options.client_metadata_documents,
    }
    if options.registration:
        out["registration_endpoint"] = issuer + REGISTER
    return out


__all__ = ["AUTHORIZE", "GRANTS", "REGISTER", "REVOKE", "TOKEN", "WELL_KNOWN", "document"]
