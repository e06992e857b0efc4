"""A Flask app whose users sign in with Flask-Login (a username and password form, a tiny user
table) and which is their OAuth authorization server (``TOOLDISCOVERY_OAUTH_SERVER``): the end-to-end
OAuth tests run it under gunicorn with two workers sharing Redis. Its tool ``whoami`` tells the user
id the call ran for and the worker process that ran it; every response names its worker in
``X-Worker`` (so a test can tell which of the two workers answered a refusal).

Start it as ``tests.apps.oauth_login_app:create_app(storage='redis://...', settings={...})``: ``settings``
are further ``TOOLDISCOVERY_`` keys, without the prefix; ``oauth=False`` leaves the authorization
server off (the benchmark's app that takes JWTs of an outside issuer instead)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, redirect, render_template_string, request
from flask_login import LoginManager, UserMixin, login_user, logout_user

from flask_tooldiscovery import ToolContext, ToolDiscovery

#: Every worker of a server (and every server of a test) signs sessions with the same key.
SECRET_KEY = "oauth-e2e-test-secret-" + "k" * 40
#: The scopes a client may ask for, with the line the consent page shows for each.
SCOPES = {"tools": "Use the Acme tools as you"}


@dataclass(frozen=True)
class User(UserMixin):  # type: ignore[misc]
    """A user of the app: ``id`` is what Flask-Login keeps in the session (``get_id``)."""

    id: str
    username: str
    password: str


#: The app's user table. The ids are not the usernames, so a test sees which one reached the tool.
USERS = {user.username: user for user in (User("u-1001", "alice", "wonderland"), User("u-1002", "bob", "builder"))}
BY_ID = {user.id: user for user in USERS.values()}

LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body>
  <h1>Sign in to Acme</h1>
  {% if error %}<p role="alert">{{ error }}</p>{% endif %}
  <form method="post">
    <input type="hidden" name="next" value="{{ next }}">
    <label>Username <input name="username" autocomplete="username"></label>
    <label>Password <input name="password" type="password" autocomplete="current-password"></label>
    <button type="submit">Sign in</button>
  </form>
</body></html>
"""


def safe_next(target: str | None) -> str:
    """Where to go after signing in: ``target`` when it stays on this host, else the home page."""
    if not target:
        return "/"
    parts = urlsplit(target)
    if parts.scheme not in ("", "http", "https") or (parts.netloc and parts.netloc != request.host):
        return "/"
    if not parts.netloc and not target.startswith("/"):
        return "/"
    return target


def create_app(storage: str = "", settings: dict[str, Any] | None = None, *, oauth: bool = True) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(requirements={"user_id": True})
    def whoami(ctx: ToolContext) -> dict[str, Any]:
        """Which of the app's users the call runs for, and the worker process that ran it."""
        return {"user_id": ctx.user_id, "worker": os.getpid()}

    app = Flask("oauth_login")
    app.config.update(SECRET_KEY=SECRET_KEY, TOOLDISCOVERY_DIALECTS=["mcp", "tdp"], TOOLDISCOVERY_ALLOW_EXECUTE=True)
    if oauth:
        app.config.update(TOOLDISCOVERY_OAUTH_SERVER=True, TOOLDISCOVERY_OAUTH_SCOPES=SCOPES)
    if storage:
        app.config["TOOLDISCOVERY_STATE_STORAGE_URI"] = storage
    app.config.update({f"TOOLDISCOVERY_{key}": value for key, value in (settings or {}).items()})

    login_manager = LoginManager(app)
    login_manager.login_view = "login"

    @login_manager.user_loader
    def load_user(user_id: str) -> User | None:
        return BY_ID.get(user_id)

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        target = request.values.get("next", "")
        if request.method == "GET":
            return render_template_string(LOGIN_PAGE, next=target, error=None)
        user = USERS.get(request.form.get("username", ""))
        if user is None or user.password != request.form.get("password"):
            return render_template_string(LOGIN_PAGE, next=target, error="Wrong username or password."), 401
        login_user(user)
        return redirect(safe_next(target))

    @app.post("/logout")
    def logout() -> Any:
        logout_user()
        return redirect("/")

    @app.get("/")
    def home() -> str:
        return "Acme"

    @app.after_request
    def name_the_worker(response: Response) -> Response:
        response.headers["X-Worker"] = str(os.getpid())
        return response

    discovery.init_app(app)
    return app
