"""Who is signed in, where to sign in, and the consent form's CSRF token.

The login is the app's own: the signed-in user is Flask-Login's ``current_user`` (its
``get_id()``), or what the app's ``@discovery.oauth_user`` hook returns (a user id string, or
``None``). A visitor not signed in is sent to ``OAUTH_LOGIN_VIEW`` (an endpoint name or a URL),
else Flask-Login's ``login_manager.login_view``, with ``next=`` the whole authorization request.

The consent form carries a token tied to the session (a random value kept in it) and to the
authorization request it was shown for (its parameters' digest), signed with the app's
``SECRET_KEY``: a form posted from another site, another session, or for other parameters than
the ones shown is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flask import current_app, session, url_for
from werkzeug.routing import BuildError

from ...observe.logs import log

SESSION_KEY = "_tooldiscovery_oauth_csrf"
#: The authorization request's parameters a consent form may carry back.
PARAMETERS = ("response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge",
              "code_challenge_method", "resource", "prompt")

UserHook = Callable[[], Any]


def signed_in(hook: UserHook | None) -> str | None:
    """The signed-in user's id, or ``None``."""
    if hook is not None:
        found = hook()
        return str(found) if found not in (None, "") else None
    try:
        from flask_login import current_user
    except ImportError:
        return None
    if current_user is None or not getattr(current_user, "is_authenticated", False):
        return None
    found = current_user.get_id()
    return str(found) if found not in (None, "") else None


def can_tell_users(app: Any, hook: UserHook | None) -> bool:
    """The app has a way to tell who is signed in."""
    return hook is not None or getattr(app, "login_manager", None) is not None


def login_url(login_view: str | None, next_url: str) -> str | None:
    """Where to sign in, with ``next=`` ``next_url`` (``None``: nowhere is known): as Flask-Login
    sends it, a path of this site when the login page is on this site (a login view that follows
    only local paths, as it should, then sends the person back), else the whole URL."""
    view = login_view
    if not view:
        manager = getattr(current_app, "login_manager", None)
        view = getattr(manager, "login_view", None) if manager is not None else None
    if not view:
        return None
    if "/" in view:
        base = view
    else:
        try:
            base = url_for(view)
        except BuildError:
            log.error("flask-tooldiscovery: oauth: the login view %r is not an endpoint of this app", view)
            return None
    parts = urlsplit(base)
    target = urlsplit(next_url)
    if not parts.netloc or parts.netloc == target.netloc:
        next_url = urlunsplit(("", "", target.path, target.query, ""))
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "next"]
    query.append(("next", next_url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


def request_digest(params: Mapping[str, Any]) -> str:
    shown = {k: params.get(k) for k in PARAMETERS}
    return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()


def _key() -> bytes:
    secret = current_app.secret_key
    return secret.encode() if isinstance(secret, str) else bytes(secret or b"")


def csrf_token(params: Mapping[str, Any]) -> str:
    """The token the consent form for ``params`` carries (the session's nonce made if needed)."""
    nonce = session.get(SESSION_KEY)
    if not isinstance(nonce, str):
        nonce = session[SESSION_KEY] = secrets.token_urlsafe(24)
    return hmac.new(_key(), f"{nonce}|{request_digest(params)}".encode(), hashlib.sha256).hexdigest()


def csrf_problem(given: str | None, params: Mapping[str, Any]) -> str | None:
    """Why the posted token ``given`` is refused (``None``: it is good)."""
    nonce = session.get(SESSION_KEY)
    if not isinstance(nonce, str):
        return "the session holds no consent token (cookies off, or another session)"
    if not given:
        return "the form carries no consent token"
    expected = hmac.new(_key(), f"{nonce}|{request_digest(params)}".encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, given):
        return "the consent token does not match this session and authorization request"
    return None


__all__ = ["PARAMETERS", "can_tell_users", "csrf_problem", "csrf_token", "login_url", "signed_in"]
