"""The app as its own users' OAuth 2.1 authorization server (``TOOLDISCOVERY_OAUTH_SERVER``, the
``oauth`` extra): Authlib's Flask authorization server with the code grant and PKCE, refresh
tokens that rotate, dynamic registration and Client ID Metadata Documents, revocation, and the
pages a user signs in, consents and revokes on. Its modules: :mod:`.settings` (the keys),
:mod:`.storage` and :mod:`.records` (what is kept, in the state store), :mod:`.models`,
:mod:`.client_metadata` and :mod:`.cimd` (clients), :mod:`.grants`, :mod:`.endpoints` and
:mod:`.server` (Authlib's parts), :mod:`.metadata`, :mod:`.consent` and :mod:`.views` (the
routes), :mod:`.verifier` (its tokens, for the identity layer). Only :mod:`.views` (through
:func:`install`) needs Authlib; the settings and the verifier do not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

    from ...settings import Settings

INSTALL_LINE = 'pip install "flask-tooldiscovery[oauth]"'


def install(app: Flask, settings: Settings, guard: Any, user_hook: Any) -> None:
    """Mount the authorization server on ``app`` (when ``TOOLDISCOVERY_OAUTH_SERVER`` is on);
    ``guard(request)`` is the core's check of every request (its host, its size)."""
    from .settings import OAuthServerSettings

    if not OAuthServerSettings.of(settings).enabled:
        return
    try:
        import authlib  # noqa: F401
    except ImportError:
        from ...settings import SettingsError

        raise SettingsError(f"TOOLDISCOVERY_OAUTH_SERVER needs Authlib: {INSTALL_LINE}") from None
    from .views import mount

    mount(app, settings, guard, user_hook)


__all__ = ["INSTALL_LINE", "install"]
