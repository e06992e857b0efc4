"""Three apps the Python client tests run, served together by one WSGI process: the prompts and
completions of :mod:`tests.apps.prompts_app` under ``/prompts``, the tool that asks its caller of
:mod:`tests.apps.asking_app` under ``/asking`` and the subscribed note of
:mod:`tests.apps.subscriptions_app` under ``/notes`` (each its own ``/mcp``). Start it as
``tests.apps.mcp_features_app:create_app(storage=<redis URL without a database>)``; the asking and
notes apps keep their state in databases 7 and 8 of that Redis, the prompts app in 9, so every
worker shares it."""

from __future__ import annotations

from werkzeug.exceptions import NotFound
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from . import asking_app, prompts_app, subscriptions_app


def create_app(storage: str) -> DispatcherMiddleware:
    return DispatcherMiddleware(NotFound(), {
        "/prompts": prompts_app.create_app(TOOLDISCOVERY_STATE_STORAGE_URI=f"{storage}/9"),
        "/asking": asking_app.create_app(storage=f"{storage}/7"),
        "/notes": subscriptions_app.create_app(storage=f"{storage}/8"),
    })
