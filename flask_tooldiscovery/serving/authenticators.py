"""Each mounted dialect's authenticator, assembled once at ``init_app`` from the settings (bearer
token, API key, JWTs, epi-hmac, the app's own authorization server), the identity hook and the
auth hook; and the refusals of settings that would protect some dialects and leave others running
the same tools for anyone, or configure JWKS keys nothing verifies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from .. import settings as cfg
from ..identity.authorization_server.settings import OAuthServerSettings
from ..identity.authorization_server.verifier import ServerTokenVerifier
from ..identity.sources import Authenticator, AuthHook, AuthHookVerifier, HookVerifier, IdentityHook, Verifier
from ..identity.tokens import check_required_claims
from ..identity.verifiers import ApiKeyVerifier, BearerVerifier, JwksVerifier, JwtVerifier, OAuthResourceVerifier
from ..observe.logs import log
from ..settings import Settings, SettingsError
from ..state import single_use
from .epi_hmac import EpiHmacVerifier, decode_secret


class Guarded(Protocol):
    """What the assembly reads of a dialect (the ``Dialect`` contract has more)."""

    @property
    def authenticator(self) -> Callable[[Settings], Authenticator | None] | None: ...
    @property
    def takes_auth_hook(self) -> bool: ...
    @property
    def runs_tools(self) -> Callable[[Settings], bool]: ...


def for_dialects(settings: Settings, dialects: Mapping[str, Guarded], *, identity_hook: IdentityHook | None,
                 auth_hook: AuthHook | None) -> dict[str, Authenticator | None]:
    """Each mounted dialect's credentials: its own settings' verifiers, plus the identity layer's
    (the identity hook, JWKS-verified JWTs) unless it is named in ``OPEN_DIALECTS``, plus the
    auth hook for a dialect that takes it. Refuses a mix of protected dialects and dialects
    that would run the same tools for anyone."""
    shared: list[Verifier] = []
    if identity_hook is not None:
        shared.append(HookVerifier(identity_hook, "tools"))
    if settings.bearer_token:
        shared.append(BearerVerifier(settings.bearer_token, "tools"))
    if settings.api_key:
        shared.append(ApiKeyVerifier(settings.api_key, settings.api_key_header, "tools"))
    if settings.jwt_secret:
        shared.append(JwtVerifier(settings.jwt_secret, "tools", audience=settings.jwt_audience,
                                  issuer=settings.jwt_issuer, required_claims=settings.jwt_required_claims))
    if settings.jwt_jwks_url:
        shared.append(JwksVerifier(settings.jwt_jwks_url, "tools", issuer=settings.jwt_issuer,
                                   audience=settings.jwt_audience, algorithms=settings.jwt_algorithms,
                                   cooldown=settings.jwt_jwks_cooldown,
                                   required_claims=settings.jwt_required_claims))
    if settings.epi_hmac_app_key and settings.epi_hmac_secret:
        shared.append(EpiHmacVerifier(settings.epi_hmac_app_key, decode_secret(settings.epi_hmac_secret), "tools",
                                      ledger=single_use.for_uri(settings.state_storage_uri),
                                      max_body=settings.max_content_length))
        log.log(20 if settings.state_storage_uri else 30,  # INFO, else WARNING: seen under gunicorn's defaults
                "flask-tooldiscovery: epi-hmac signed requests accepted; each nonce once, remembered %s",
                "in the state store" if settings.state_storage_uri else "in this process only (another worker "
                "process, or this one after a restart, takes it again: set TOOLDISCOVERY_STATE_STORAGE_URI)")
    if OAuthServerSettings.of(settings).enabled:
        shared.append(ServerTokenVerifier(OAuthServerSettings.of(settings), settings.state_storage_uri, "tools"))
    out: dict[str, Authenticator | None] = {}
    for name in settings.dialects:
        dialect = dialects[name]
        own = dialect.authenticator(settings) if dialect.authenticator is not None else None
        if shared and name not in settings.open_dialects:
            # a dialect that verifies a kind of credential its own way (MCP: its resource) keeps its way
            kinds = {type(v) for v in own.verifiers} if own is not None else set()
            own = (own or Authenticator(())).including([v for v in shared if type(v) not in kinds],
                                                       protect_discovery=settings.auth_discovery)
        elif own is not None and settings.auth_discovery:
            own = own.including((), protect_discovery=True)
        if auth_hook is not None and dialect.takes_auth_hook:  # calls only: discovery stays as it was
            own = (own or Authenticator(())).including([AuthHookVerifier(auth_hook, name)])
        out[name] = own
    _check_jwks_keys(settings, out)
    check_required_claims(settings, out.values())
    running = [n for n in out if dialects[n].runs_tools(settings)]
    protected = [n for n in running if out[n] is not None]
    open_ones = [n for n in running if n not in protected and n not in settings.open_dialects]
    if protected and open_ones:
        raise SettingsError(
            f"{', '.join(protected)} need credentials but {', '.join(open_ones)} would run the same tools "
            f"for anyone: protect them too, or name them in TOOLDISCOVERY_OPEN_DIALECTS if that is meant")
    return out



def _check_jwks_keys(settings: Settings, authenticators: dict[str, Authenticator | None]) -> None:
    """Refuse the keys of JWKS-verified tokens set where no dialect verifies one: they would change nothing."""
    verifiers = [v for auth in authenticators.values() if auth is not None for v in auth.verifiers]
    if any(isinstance(v, (JwksVerifier, OAuthResourceVerifier)) for v in verifiers):
        return
    defaults = cfg.DEFAULTS
    changed = [cfg.key(name) for name, value in (("JWT_ALGORITHMS", list(settings.jwt_algorithms)),
                                                 ("JWT_JWKS_COOLDOWN", settings.jwt_jwks_cooldown))
               if value != defaults[name]]
    if changed:
        raise SettingsError(f"{', '.join(changed)} only apply to tokens verified with a JWKS: set "
                            f"{cfg.key('JWT_JWKS_URL')} (or {cfg.key('MCP_AUTHORIZATION_SERVERS')} with mcp mounted)")



__all__ = ["Guarded", "for_dialects"]
