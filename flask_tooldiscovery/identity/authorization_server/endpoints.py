"""Authlib's registration (RFC 7591) and revocation (RFC 7009) endpoints, on this server's records.

Registration is open (an MCP client registers itself before its user signs in); what it may
register is checked by :mod:`.client_metadata`. A public client (``none``) gets no secret; a
confidential one gets a secret that is shown once and stored as a hash only.
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError

from .client_metadata import AUTH_METHODS, GRANT_TYPES, client_from_metadata
from .grants import TOKEN_AUTH_METHODS
from .models import Client, Token
from .records import Records
from .storage import digest


class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    server: Any  # the Server of .server (which imports this module)

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration: anyone may register, nobody is trusted for it

    def get_server_metadata(self) -> dict[str, Any]:
        return {"scopes_supported": list(self.server.options.scopes), "response_types_supported": ["code"],
                "grant_types_supported": list(GRANT_TYPES), "token_endpoint_auth_methods_supported": list(AUTH_METHODS)}

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        if not isinstance(request.payload.data, dict):
            raise InvalidClientMetadataError("The client metadata must be a JSON object.")
        if keys := [k for k in ("jwks", "jwks_uri", "software_statement") if k in request.payload.data]:
            raise InvalidClientMetadataError(f"This server takes no client keys nor software statements: {keys[0]}.")
        # this server's rules first (their errors name what is wrong), then Authlib's claims
        client_from_metadata("-", request.payload.data, supported_scopes=self.server.options.scopes, document=False)
        metadata: dict[str, Any] = super().extract_client_metadata(request)
        return metadata

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if request.payload.data.get("token_endpoint_auth_method", "client_secret_basic") == "none":
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> Client:
        secret = client_info.get("client_secret")
        client = client_from_metadata(client_info["client_id"], request.payload.data,
                                      supported_scopes=self.server.options.scopes, document=False,
                                      secret_hash=digest(secret) if secret else None)
        self.server.records.save_client(client)
        return client

    def generate_client_registration_info(self, client: Client, request: Any) -> dict[str, Any]:
        return {"redirect_uris": client.redirect_uris, "grant_types": client.grant_types,
                "response_types": client.response_types,
                "token_endpoint_auth_method": client.token_endpoint_auth_method}


class Revocation(RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = TOKEN_AUTH_METHODS
    server: Any  # the Server of .server (which imports this module)

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        kinds = ["refresh", "access"] if token_type_hint == "refresh_token" else ["access", "refresh"]
        records: Records = self.server.records
        for kind in kinds:
            found = records.token(token_string, kind)
            if found is not None:
                return found
        return None

    def revoke_token(self, token: Token, request: Any) -> None:
        self.server.records.revoke_token(token)


__all__ = ["Registration", "Revocation"]
