"""The defaults that bound tool calls, in process: how many call slots a worker gets (from the
thread count gunicorn's configuration gives, else a conservative number, an explicit setting
winning) and the default deadline of tools without a ``timeout`` of their own.

Under a real gunicorn worker: tests/test_call_slots_server.py."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.serving.worker_threads import UNKNOWN_SERVER_SLOTS
from flask_tooldiscovery.settings import SettingsError

#: Set when a test is over, so the tools left running past their deadline end.
RELEASE = threading.Event()
#: Released once by each ``stuck`` call as it starts.
STARTED = threading.Semaphore(0)


@pytest.fixture(autouse=True)
def release_tools():
    global STARTED
    RELEASE.clear()
    STARTED = threading.Semaphore(0)
    yield
    RELEASE.set()


def create_app(**config: Any) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool
    def stuck() -> str:
        """Wait until the test is over."""
        STARTED.release()
        RELEASE.wait(30)
        return "late"

    @discovery.tool
    async def stuck_async() -> str:
        """Wait (cancellable) far longer than any deadline here."""
        await asyncio.sleep(30)
        return "late"

    @discovery.tool(timeout=0.2)
    def own_deadline() -> str:
        """A tool with a timeout of its own."""
        RELEASE.wait(30)
        return "late"

    @discovery.tool
    def quick(seconds: float) -> str:
        """Sleep a little, then answer.

        Args:
            seconds: How long.
        """
        RELEASE.wait(seconds)
        return "done"

    @discovery.tool
    def raises_timeout() -> str:
        """A tool whose own I/O timed out (a socket timeout is a TimeoutError)."""
        raise TimeoutError("the upstream did not answer")

    app = Flask("defaults")
    app.config.update(TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, **config)
    discovery.init_app(app)
    return app


def call(app: Flask, tool: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
    answer = app.test_client().post(f"/opal/tools/{tool}", json={"parameters": arguments})
    return answer.status_code, answer.get_json()


# -- the default deadline ----------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["stuck", "stuck_async"])
def test_a_tool_without_a_timeout_is_answered_at_the_default_deadline(tool) -> None:
    app = create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.3)
    status, body = call(app, tool)
    assert status == 500
    assert body["error"] == "The tool did not finish within 0.3 seconds."
    assert body["can_retry"] is True


def test_the_default_deadline_answers_in_every_dialect_as_a_timeout_does() -> None:
    app = create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.2)
    client = app.test_client()
    mcp = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "stuck", "arguments": {}}}).get_json()
    assert mcp["result"]["isError"] is True
    assert mcp["result"]["content"][0]["text"] == "The tool did not finish within 0.2 seconds."
    oxp = client.post("/oxp/tools/call", json={"request": {"tool_id": "Defaults.stuck", "input": {}}})
    assert "did not finish within 0.2 seconds" in oxp.get_data(as_text=True)


def test_a_tool_of_its_own_timeout_keeps_it() -> None:
    status, body = call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=20), "own_deadline")
    assert (status, body["error"]) == (500, "The tool did not finish within 0.2 seconds.")


def test_zero_means_no_default_deadline() -> None:
    assert call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.1), "quick", seconds=0.5)[0] == 500
    assert call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0), "quick", seconds=0.5) == (200, "done")


def test_a_timeout_error_the_tool_raises_is_its_failure_not_the_deadline(caplog) -> None:
    with caplog.at_level(logging.ERROR, "flask_tooldiscovery"):
        status, body = call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=20), "raises_timeout")
    assert status == 500 and "did not finish" not in body["error"]
    assert "TimeoutError" in caplog.text  # an unexpected failure: its traceback is logged


@pytest.mark.parametrize("value, message", [(-1, "at least 0"), ("soon", "number")])
def test_a_wrong_default_timeout_stops_init_app_naming_the_key(value, message) -> None:
    with pytest.raises(SettingsError, match=f"TOOLDISCOVERY_DEFAULT_TIMEOUT.*{message}"):
        create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=value)


# -- call slots --------------------------------------------------------------------------------


def slots(app: Flask) -> int:
    return ToolDiscovery.state(app).slots.limit


@pytest.fixture(scope="module")
def under_gunicorn() -> Iterator[Callable[..., Flask]]:
    """``under_gunicorn(options, **config)``: the app built by gunicorn's own application object,
    configured as a command line would, loading it as gunicorn's master does with ``--preload``
    (its ``wsgi()``). gunicorn is imported here only, and forgotten after: a process that has
    imported gunicorn looks served by it to the rest of the suite."""
    before = set(sys.modules)
    from gunicorn.app.base import BaseApplication

    class Gunicorn(BaseApplication):
        def __init__(self, options: dict[str, Any], **config: Any) -> None:
            self.options = options
            self.config = config
            super().__init__()

        def load_config(self) -> None:
            for name, value in self.options.items():
                self.cfg.set(name, value)

        def load(self) -> Flask:
            return create_app(**self.config)

    def build(options: dict[str, Any], **config: Any) -> Flask:
        app = Gunicorn(options, **config).wsgi()
        assert isinstance(app, Flask)
        return app

    yield build
    for name in set(sys.modules) - before:
        if name.partition(".")[0] == "gunicorn":
            del sys.modules[name]


@pytest.mark.parametrize("options, expected", [
    ({"worker_class": "gthread", "threads": 4}, 3),
    ({"worker_class": "gthread", "threads": 8}, 7),
    ({"worker_class": "gthread", "threads": 2}, 1),
    ({"worker_class": "gthread", "threads": 1}, 1),
    ({"worker_class": "sync", "threads": 1}, 1),
    ({"worker_class": "sync", "threads": 3}, 2),  # gunicorn runs it as gthread
    ({"worker_class": "gunicorn.workers.gthread.ThreadWorker", "threads": 6}, 5),
])
def test_unset_the_slots_leave_one_of_gunicorns_threads_free(under_gunicorn, options, expected, caplog) -> None:
    with caplog.at_level(logging.INFO, "flask_tooldiscovery"):
        app = under_gunicorn(options)
    assert slots(app) == expected
    said = [r.getMessage() for r in caplog.records if "at once per worker process" in r.getMessage()]
    assert len(said) == 1 and f"at most {expected} tool" in said[0] and "gunicorn" in said[0], said


def test_a_worker_without_threads_gets_the_conservative_default(under_gunicorn, caplog) -> None:
    with caplog.at_level(logging.INFO, "flask_tooldiscovery"):
        app = under_gunicorn({"worker_class": "gevent"})
    assert slots(app) == UNKNOWN_SERVER_SLOTS == 2
    assert "gevent worker has no thread count" in caplog.text


def test_unset_outside_gunicorn_the_conservative_default(caplog) -> None:
    with caplog.at_level(logging.INFO, "flask_tooldiscovery"):
        app = create_app()
    assert slots(app) == UNKNOWN_SERVER_SLOTS
    assert f"at most {UNKNOWN_SERVER_SLOTS} tools run at once per worker process (the server did not say" in caplog.text


@pytest.mark.parametrize("value", [5, 0, "6"])
def test_an_explicit_setting_wins(under_gunicorn, value) -> None:
    assert slots(under_gunicorn({"worker_class": "gthread", "threads": 4},
                                TOOLDISCOVERY_MAX_CONCURRENT_CALLS=value)) == int(value)
    assert slots(create_app(TOOLDISCOVERY_MAX_CONCURRENT_CALLS=value)) == int(value)


@pytest.mark.parametrize("value", [4, 8, 0])
def test_an_explicit_setting_that_leaves_no_thread_free_is_warned_about(under_gunicorn, value, caplog) -> None:
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        app = under_gunicorn({"worker_class": "gthread", "threads": 4}, TOOLDISCOVERY_MAX_CONCURRENT_CALLS=value)
    assert slots(app) == value
    assert f"TOOLDISCOVERY_MAX_CONCURRENT_CALLS={value} leaves none of the 4 threads free" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        under_gunicorn({"worker_class": "gthread", "threads": 4}, TOOLDISCOVERY_MAX_CONCURRENT_CALLS=3)
    assert "leaves none" not in caplog.text


def test_the_busy_refusal_past_the_default_slots() -> None:
    """In process (no server thread count): two calls run, the third is refused as busy."""
    app = create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0)
    results: list[int] = []
    holders = [threading.Thread(target=lambda: results.append(call(app, "stuck")[0])) for _ in range(2)]
    for holder in holders:
        holder.start()
    try:
        assert all(STARTED.acquire(timeout=10) for _ in holders)  # both calls hold their slots
        status, body = call(app, "quick", seconds=0)
        assert status == 503 and body["can_retry"] is True
    finally:
        RELEASE.set()
        for holder in holders:
            holder.join(10)
    assert results == [200, 200]
