"""This package's routes and Flask-WTF's ``CSRFProtect``.

Cross-site request forgery rides on credentials a browser adds by itself (a session cookie) to a
form another site submits. Tool routes take their caller's credentials from headers the caller
sets (a bearer token, a signature, an API key), their bodies are JSON (a cross-site form cannot
send one without a CORS preflight), and their own guard checks ``Origin`` and ``Host``; the
authorization server's consent and grants forms carry a token of their own. So a blueprint of this
package exempts itself from ``CSRFProtect``, whichever of ``CSRFProtect(app)`` and ``init_app`` ran
first: the exemption is made by the blueprint's URL value preprocessor, which Flask runs before
any ``before_request`` function (``CSRFProtect``'s check is one), at the first request that reaches
one of these blueprints. By then the app's setup is over (Flask refuses ``before_request`` functions
added after its first request, so no ``CSRFProtect`` can come later): every blueprint of this
package on the app is exempted at once, and the preprocessor takes itself off them, so later
requests do not run it. The app's own views and forms keep their protection; nothing here imports
Flask-WTF.
"""

from __future__ import annotations

import sys
from typing import Any

from flask import Blueprint, current_app

#: The key ``CSRFProtect.init_app`` keeps itself under in ``app.extensions``.
EXTENSION_KEY = "csrf"
#: The names of this package's blueprints begin so.
PREFIX = "tooldiscovery_"


def exempt_from_csrf(blueprint: Blueprint) -> Blueprint:
    """Make the routes of ``blueprint`` (one of this package's) exempt from Flask-WTF's
    ``CSRFProtect`` on any app it is registered on, before or after ``CSRFProtect`` is."""
    blueprint.url_value_preprocessor(csrf_exemption)
    return blueprint


def csrf_exemption(endpoint: str | None, values: dict[str, Any] | None) -> None:
    """The URL value preprocessor of :func:`exempt_from_csrf` (see the module's text)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    ours = {name: bp for name, bp in app.blueprints.items() if name.split(".")[-1].startswith(PREFIX)}
    protect = app.extensions.get(EXTENSION_KEY)
    wtf = sys.modules.get("flask_wtf.csrf")  # loaded: CSRFProtect is only made by importing it
    if protect is not None and wtf is not None and isinstance(protect, wtf.CSRFProtect):
        for blueprint in ours.values():  # (another extension under the same key has its own ways)
            protect.exempt(blueprint)
    for name in ours:  # done for this app: later requests skip it (a new list: Flask may be going through the old)
        functions = app.url_value_preprocessors.get(name)
        if functions is not None and csrf_exemption in functions:
            app.url_value_preprocessors[name] = [f for f in functions if f is not csrf_exemption]


__all__ = ["csrf_exemption", "exempt_from_csrf"]
