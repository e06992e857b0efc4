"""The defaults that bound tool calls, in process: how many call slots a worker gets (from the
thread count gunicorn's configuration gives, else a conservative number, an explicit setting
winning) and the default deadline of tools without a ``timeout`` of their own.

Under a real gunicorn worker: tests/test_call_slots_server.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from gunicorn.config import Config as GunicornConfig
from gunicorn.workers.base import Worker as GunicornWorker

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.calls.slots import Slots
from flask_tooldiscovery.errors import Busy
from flask_tooldiscovery.serving import worker_threads
from flask_tooldiscovery.serving.worker_threads import UNKNOWN_SERVER_SLOTS, post_fork
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
    async def own_deadline() -> str:
        """A tool with a timeout of its own."""
        await asyncio.sleep(30)
        return "late"

    @discovery.tool
    async def quick_async(seconds: float) -> str:
        """Sleep a little (cancellable), then answer.

        Args:
            seconds: How long.
        """
        await asyncio.sleep(seconds)
        return "done"

    @discovery.tool
    def commit(path: str, seconds: float) -> str:
        """Take ``seconds``, then commit a row to the SQLite database at ``path``.

        Args:
            path: The database file.
            seconds: How long the work takes before the commit.
        """
        time.sleep(seconds)
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute("INSERT INTO done VALUES ('committed')")
            db.commit()
        return "committed"

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


def test_an_async_tool_without_a_timeout_is_cancelled_at_the_default_deadline() -> None:
    app = create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.3)
    status, body = call(app, "stuck_async")
    assert status == 500
    assert body["error"] == "The tool did not finish within 0.3 seconds."
    assert body["can_retry"] is True


def database(tmp_path: Path) -> str:
    path = str(tmp_path / "done.db")
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE done (what TEXT)")
        db.commit()
    return path


def rows(path: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [what for (what,) in db.execute("SELECT what FROM done")]


def test_a_sync_tool_past_its_deadline_is_waited_for_and_its_answer_is_what_it_did(tmp_path, caplog) -> None:
    """A sync tool cannot be stopped: its caller is never told it failed while it goes on. Past
    the deadline the call waits for it and answers its outcome (here: committed, and the row is
    there when the answer comes), and a warning names the overrun."""
    path = database(tmp_path)
    app = create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.1)
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        status, body = call(app, "commit", path=path, seconds=0.4)
        assert (status, body) == (200, "committed")
        assert rows(path) == ["committed"]
        mcp = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "commit", "arguments": {"path": path, "seconds": 0.4}}}).get_json()
    assert mcp["result"]["isError"] is False and mcp["result"]["structuredContent"] == {"result": "committed"}
    assert rows(path) == ["committed", "committed"]
    overran = [r.getMessage() for r in caplog.records if "past its deadline" in r.getMessage()]
    assert len(overran) == 2 and "tool commit ran" in overran[0] and "deadline of 0.1" in overran[0], overran


def test_the_default_deadline_answers_in_every_dialect_as_a_timeout_does() -> None:
    app = create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.2)
    client = app.test_client()
    mcp = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "stuck_async", "arguments": {}}}).get_json()
    assert mcp["result"]["isError"] is True
    assert mcp["result"]["content"][0]["text"] == "The tool did not finish within 0.2 seconds."
    oxp = client.post("/oxp/tools/call", json={"request": {"tool_id": "Defaults.stuck_async", "input": {}}})
    assert "did not finish within 0.2 seconds" in oxp.get_data(as_text=True)


def test_one_second_is_said_in_the_singular() -> None:
    status, body = call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=1), "stuck_async")
    assert (status, body["error"]) == (500, "The tool did not finish within 1 second.")


def test_a_tool_of_its_own_timeout_keeps_it() -> None:
    status, body = call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=20), "own_deadline")
    assert (status, body["error"]) == (500, "The tool did not finish within 0.2 seconds.")


def test_zero_means_no_default_deadline() -> None:
    assert call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0.1), "quick_async", seconds=0.5)[0] == 500
    assert call(create_app(TOOLDISCOVERY_DEFAULT_TIMEOUT=0), "quick_async", seconds=0.5) == (200, "done")


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


class EventWorker(GunicornWorker):
    """A gunicorn worker class that does not serve requests on threads (as gevent's does)."""


@pytest.fixture(params=["forked", "preload"])
def under_gunicorn(request, monkeypatch) -> Callable[..., Flask]:
    """``under_gunicorn(options, **config)``: the app as a gunicorn worker process has it when the
    documented ``post_fork`` hook (deploy/gunicorn.conf.py) is called with a worker of gunicorn's
    own classes, built from gunicorn's configuration set as a command line would: before the app
    loads (``forked``, the default), or after (``preload``: loaded in the master before the fork)."""
    monkeypatch.setattr(worker_threads, "_told", None)
    monkeypatch.setattr(worker_threads, "_listeners", [])

    def build(options: dict[str, Any], **config: Any) -> Flask:
        cfg = GunicornConfig()
        for name, value in options.items():
            cfg.set(name, value)
        worker = cfg.worker_class(0, os.getpid(), [], None, 30, cfg, None)
        if request.param == "preload":
            app = create_app(**config)
            post_fork(None, worker)
            return app
        post_fork(None, worker)
        return create_app(**config)

    return build


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
    # one line; with --preload a first one from the master, which loaded the app before the fork
    assert len(said) == 1 or (len(said) == 2 and "the server did not say" in said[0]), said
    assert f"at most {expected} tool" in said[-1] and "gunicorn" in said[-1], said


def test_a_worker_without_threads_gets_the_conservative_default(under_gunicorn, caplog) -> None:
    with caplog.at_level(logging.INFO, "flask_tooldiscovery"):
        app = under_gunicorn({"worker_class": "tests.test_call_defaults.EventWorker"})
    assert slots(app) == UNKNOWN_SERVER_SLOTS == 2
    assert "gunicorn EventWorker worker has no thread count" in caplog.text


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


@pytest.mark.parametrize("threads, expected", [(4, 3), (1, 1)])
def test_the_server_threads_setting_sets_the_default_slots(threads, expected, caplog) -> None:
    """Any server: the app's config says how many threads a worker has."""
    with caplog.at_level(logging.INFO, "flask_tooldiscovery"):
        app = create_app(TOOLDISCOVERY_SERVER_THREADS=threads)
    assert slots(app) == expected
    assert f"TOOLDISCOVERY_SERVER_THREADS={threads}" in caplog.text


def test_several_workers_without_a_shared_state_store_are_warned_about(under_gunicorn, caplog,
                                                                      monkeypatch) -> None:
    warning = "the server runs 3 worker processes and TOOLDISCOVERY_STATE_STORAGE_URI is unset"
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        under_gunicorn({"worker_class": "gthread", "threads": 4, "workers": 3})
        under_gunicorn({"worker_class": "gthread", "threads": 4, "workers": 3},
                       TOOLDISCOVERY_STATE_STORAGE_URI="redis://127.0.0.1:1/0")
    assert caplog.text.count(warning) == 1
    caplog.clear()
    monkeypatch.setattr(worker_threads, "_told", None)  # no gunicorn hook: the settings alone
    with caplog.at_level(logging.WARNING, "flask_tooldiscovery"):
        create_app(TOOLDISCOVERY_SERVER_WORKERS=3)
        create_app(TOOLDISCOVERY_SERVER_WORKERS=1)
        create_app()
    assert caplog.text.count("worker processes and TOOLDISCOVERY_STATE_STORAGE_URI") == 1


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


def test_a_limit_changed_while_slots_are_held_counts_them() -> None:
    """The slots held when the limit changes stay counted: lowered below them, no call runs until
    enough are freed; raised, the new room is there at once; 0 lifts the limit."""
    slots = Slots(3, retry_after=1.0)
    for _ in range(3):
        slots.take()
    with pytest.raises(Busy):
        slots.take()
    slots.limit = 1  # three held, one allowed
    slots.free()
    slots.free()
    with pytest.raises(Busy):  # one still held: the limit is reached
        slots.take()
    slots.free()
    slots.take()  # none held: one may run
    with pytest.raises(Busy):
        slots.take()
    slots.limit = 3  # one held, three allowed: two more
    slots.take()
    slots.take()
    with pytest.raises(Busy):
        slots.take()
    slots.limit = 0
    for _ in range(10):
        slots.take()
    assert slots.limit == 0


@pytest.mark.slow
def test_a_call_outside_an_app_keeps_the_default_deadline() -> None:
    """``ToolDiscovery.call`` with no app at all (a script, a worker) bounds an async tool by
    TOOLDISCOVERY_DEFAULT_TIMEOUT's default, 25 s, as a call in an app does (``Core.call``)."""
    discovery = ToolDiscovery()

    @discovery.tool
    async def waits() -> str:
        """Wait far longer than the default deadline."""
        await asyncio.sleep(45)
        return "late"

    started = time.monotonic()
    outcome = discovery.call(discovery.tools().get("waits"), {}, discovery.make_context("script"))
    assert outcome.status == "failure" and outcome.error_message == "The tool did not finish within 25 seconds."
    assert time.monotonic() - started < 40
