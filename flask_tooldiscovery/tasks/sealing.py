"""What a task carries of its request, sealed: never in clear in a broker or a store.

A task run elsewhere (the Celery engine) needs what its request gave the call: the caller's
identity, the secrets and credentials a tool may use (``ctx.secrets``, ``ctx.authorization``), the
headers :confval:`TOOLDISCOVERY_TASK_HEADERS` lets it carry. Those travel encrypted and
authenticated (Fernet, from ``cryptography``) with a key derived from the app's ``SECRET_KEY``
(HKDF-SHA256, a salt of this package's own, so the key is no other use's), and are opened where
the task runs. ``SECRET_KEY_FALLBACKS`` (Flask's key rotation) opens what an older key sealed: a
worker that has the new key first and the old one as a fallback opens the messages queued before
the rotation, and seals with the new one.
"""

from __future__ import annotations

import base64
import importlib.util
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ToolDiscoveryError
from ..settings import SettingsError

#: What the sealing key is derived with: the same SECRET_KEY gives other uses other keys.
SALT = b"flask-tooldiscovery:task-seal"
INFO = b"the request a task carries, v1"
INSTALL = "pip install 'flask-tooldiscovery[celery]'"


class _Unsealable(ToolDiscoveryError, ValueError):
    """A sealed value none of the app's keys (``SECRET_KEY``, ``SECRET_KEY_FALLBACKS``) opens."""


def _key(secret: str | bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    raw = secret.encode() if isinstance(secret, str) else bytes(secret)
    return base64.urlsafe_b64encode(HKDF(algorithm=hashes.SHA256(), length=32, salt=SALT, info=INFO).derive(raw))


class Sealer:
    """Seals with the first key (``SECRET_KEY``), opens with any (its fallbacks too)."""

    def __init__(self, secret_key: str | bytes, fallbacks: Iterable[str | bytes] = ()) -> None:
        from cryptography.fernet import Fernet, MultiFernet

        self._fernet = MultiFernet([Fernet(_key(k)) for k in (secret_key, *fallbacks) if k])

    def seal(self, data: bytes) -> str:
        return self._fernet.encrypt(data).decode("ascii")

    def open(self, token: str) -> bytes:
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(token.encode("ascii"))
        except (InvalidToken, UnicodeEncodeError, TypeError, ValueError):
            raise _Unsealable("a task's sealed request could not be opened with SECRET_KEY or any of "
                             "SECRET_KEY_FALLBACKS: it was sealed with another key") from None


def sealer_for(config: Mapping[str, Any], needed_by: str) -> Sealer:
    """The app's sealer, from its ``SECRET_KEY`` and ``SECRET_KEY_FALLBACKS``;
    :class:`~flask_tooldiscovery.errors.SettingsError` (at ``init_app``) saying what to do when
    there is no key, or no ``cryptography``. ``needed_by`` names the setting that needs it."""
    secret = config.get("SECRET_KEY")
    if not secret:
        raise SettingsError(f"{needed_by} seals what a task carries of its request (the caller's identity and "
                            "credentials) with a key derived from the app's SECRET_KEY, which is unset: set "
                            "app.config['SECRET_KEY'] to a long random value, the same in every web and task worker")
    if importlib.util.find_spec("cryptography") is None:
        raise SettingsError(f"{needed_by} seals what a task carries of its request, which needs cryptography: "
                            f"{INSTALL}")
    fallbacks = config.get("SECRET_KEY_FALLBACKS") or ()
    if isinstance(fallbacks, (str, bytes)):
        fallbacks = (fallbacks,)
    return Sealer(secret, tuple(fallbacks))


__all__ = ["INSTALL", "Sealer", "sealer_for"]
