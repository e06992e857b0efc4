"""Shared fixtures: a fresh app per test, a live server on a free port, sample tools."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.serving import make_server

from flask_tooldiscovery import ToolDiscovery

from .loopback import Receiver, free_port  # noqa: F401  (free_port: the tests import it from here)


@contextlib.contextmanager
def live_server(app: Flask) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 at a free port in a thread; yields the base URL; stops it."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    """A callback receiver on 127.0.0.1 for the module's tests (:class:`tests.loopback.Receiver`)."""
    r = Receiver()
    yield r
    r.close()


AppFactory = Callable[..., Flask]


@pytest.fixture
def make_app() -> AppFactory:
    """``make_app(discovery, **config)``: a fresh app with ``discovery`` initialised on it."""

    def factory(discovery: ToolDiscovery, **config: Any) -> Flask:
        app = Flask("testapp")
        app.config["TESTING"] = True
        app.config.update(config)
        discovery.init_app(app)
        return app

    return factory


@pytest.fixture
def example_app() -> Flask:
    from example_app import create_app

    return create_app({"TESTING": True})
