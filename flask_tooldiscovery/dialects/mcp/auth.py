"""MCP's credentials, and MCP as an OAuth 2.1 resource server (the authorization of protocol
revisions 2025-06-18 on).

With ``TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS`` set, the MCP endpoint takes JWT access tokens of
those authorization servers, issued for this resource (``aud``, RFC 8707) with the scopes
``TOOLDISCOVERY_MCP_SCOPES`` requires, and the app serves the protected resource metadata (RFC 9728)
that lets a client find them: at ``/.well-known/oauth-protected-resource`` and at its form suffixed
with the endpoint's path (``/.well-known/oauth-protected-resource/mcp``), outside the dialect's
prefix. The core decides (401 naming the metadata, 403 ``insufficient_scope``); the MCP dialect
maps both like any refusal.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Request, Response, request

from ...identity.authorization_server.settings import OAuthServerSettings
from ...identity.authorization_server.verifier import ServerTokenVerifier, issuer_of
from ...identity.sources import Authenticator, Verifier
from ...identity.verifiers import BearerVerifier, OAuthResourceVerifier
from ...lint.targets import RemoteAuth
from ...serving.pipeline import Pipeline
from ...serving.root import Root
from ...serving.wire import json_response
from ...settings import Settings, SettingsError, key
from .settings import McpSettings

NAME = "mcp"
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def resource_url(settings: Settings, req: Request | Root) -> str:
    """The MCP endpoint's absolute URL, the resource its tokens are issued for:
    ``TOOLDISCOVERY_MCP_RESOURCE``, else the request's (or root's) scheme and host with the mount point."""
    mounted = settings.prefixes.get(NAME, "/mcp")
    return McpSettings.of(settings).resource or f"{req.scheme}://{req.host.lower()}{mounted}"


def metadata_url(resource: str) -> str:
    """Where RFC 9728 puts the metadata of ``resource``: the well-known path after the host, then
    the resource's own path."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"


def remote_auth(settings: Settings) -> RemoteAuth:
    """How MCP authenticates, as the connector directories' checks read it: a static token, OAuth."""
    options = McpSettings.of(settings)
    return RemoteAuth(static_token=bool(options.bearer_token),
                      oauth=bool(options.authorization_servers) or own_server(settings))


def own_server(settings: Settings) -> bool:
    """The app is its own authorization server (``TOOLDISCOVERY_OAUTH_SERVER``)."""
    return OAuthServerSettings.of(settings).enabled


def authorization_servers(settings: Settings, req: Request | Root) -> list[str]:
    """The issuers the protected resource metadata names: the configured ones, and the app's own."""
    found = list(McpSettings.of(settings).authorization_servers)
    if own_server(settings):
        found.append(issuer_of(OAuthServerSettings.of(settings), req.url_root))
    return list(dict.fromkeys(found))


def authenticator(settings: Settings) -> Authenticator | None:
    """A static bearer token (``TOOLDISCOVERY_MCP_BEARER_TOKEN``) and/or the authorization servers'
    access tokens (the app's own, with ``TOOLDISCOVERY_OAUTH_SERVER``: issued for this endpoint or
    the whole app, RFC 8707); ``None`` (open) when none is configured."""
    verifiers: list[Verifier] = []
    options = McpSettings.of(settings)
    if options.bearer_token:
        verifiers.append(BearerVerifier(options.bearer_token, NAME))
    if own_server(settings):
        server = OAuthServerSettings.of(settings)

        def accepts(resource: str, req: Request) -> bool:
            return resource.rstrip("/") in {resource_url(settings, req).rstrip("/"), issuer_of(server, req.url_root)}

        verifiers.append(ServerTokenVerifier(
            server, settings.state_storage_uri, NAME, accepts=accepts, scopes=options.scopes,
            metadata_url=lambda req: metadata_url(resource_url(settings, req))))
    if options.authorization_servers:
        verifiers.append(OAuthResourceVerifier(
            options.authorization_servers, NAME, resource=lambda req: resource_url(settings, req),
            metadata_url=lambda req: metadata_url(resource_url(settings, req)), scopes=options.scopes,
            jwks_url=options.jwks_url, algorithms=settings.jwt_algorithms, cooldown=settings.jwt_jwks_cooldown,
            required_claims=settings.jwt_required_claims))
    elif not own_server(settings):
        stray = [key(k) for k, v in (("MCP_RESOURCE", options.resource), ("MCP_SCOPES", options.scopes),
                                     ("MCP_JWKS_URL", options.jwks_url)) if v]
        if stray:
            raise SettingsError(f"{', '.join(stray)} only apply with {key('MCP_AUTHORIZATION_SERVERS')} set")
    return Authenticator(tuple(verifiers)) if verifiers else None


def security_warning(settings: Settings, authenticator: Authenticator | None) -> str | None:
    """Why this dialect would run tools for anyone (or take tokens meant for another host), or ``None``."""
    options = McpSettings.of(settings)
    if (options.authorization_servers or own_server(settings)) and not options.resource \
            and "*" in (settings.allowed_hosts or ()):
        return ("mcp checks access tokens against a resource URL built from the Host header, and any host is "
                "served (set TOOLDISCOVERY_MCP_RESOURCE)")
    if authenticator is None:
        return ("mcp runs tools without authentication (set TOOLDISCOVERY_MCP_BEARER_TOKEN or "
                "TOOLDISCOVERY_MCP_AUTHORIZATION_SERVERS, or use the identity layer)")
    return None


def authorization(settings: Settings, root: Root) -> dict[str, Any] | None:
    """How a client gets an access token for the endpoint, for the discovery manifest served at
    ``root``: the protected resource metadata URL, the authorization servers and the scopes
    (``None``: no OAuth)."""
    options = McpSettings.of(settings)
    if not options.authorization_servers and not own_server(settings):
        return None
    return {"resourceMetadataUrl": metadata_url(resource_url(settings, root)),
            "authorizationServers": authorization_servers(settings, root), "scopes": list(scopes_supported(settings))}


def scopes_supported(settings: Settings) -> tuple[str, ...]:
    """The scopes the metadata advertises: ``MCP_SCOPES``, else the app's own server's."""
    options = McpSettings.of(settings)
    if options.scopes or not own_server(settings):
        return options.scopes
    return tuple(OAuthServerSettings.of(settings).scopes)


def root_blueprint(pipe: Pipeline) -> Blueprint | None:
    """The protected resource metadata, at the app's root, when authorization servers are set."""
    settings, options = pipe.settings, McpSettings.of(pipe.settings)
    if not options.authorization_servers and not own_server(settings):
        return None
    bp = pipe.blueprint(__name__, suffix="_oauth")

    def protected_resource_metadata() -> Response:
        document: dict[str, Any] = {
            "resource": resource_url(settings, request),
            "authorization_servers": authorization_servers(settings, request),
            "bearer_methods_supported": ["header"], "resource_name": settings.server_name}
        if scopes := scopes_supported(settings):
            document["scopes_supported"] = list(scopes)
        return json_response(document)

    paths = [WELL_KNOWN, WELL_KNOWN + pipe.prefix]
    if options.resource:  # where a client looks when a proxy mounts the endpoint elsewhere
        paths.append(WELL_KNOWN + urlsplit(options.resource).path.rstrip("/"))
    for i, path in enumerate(dict.fromkeys(paths)):  # public: any site's browser client may read it
        pipe.route(path, "health", ["GET"], endpoint=f"protected_resource_metadata_{i}", public=True)(
            protected_resource_metadata)
    return bp


__all__ = ["authenticator", "authorization", "metadata_url", "resource_url", "root_blueprint", "security_warning"]
