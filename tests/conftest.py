"""Shared fixtures: a fresh app per test, a live server on a free port, sample tools."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from .loopback import Receiver, free_port, live_server  # noqa: F401  (the tests import these from here)


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
