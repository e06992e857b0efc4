"""The async bridge: one reusable event loop per thread, and nothing of one call reaching the next
(context variables flow in and back, tasks left behind are cancelled, open async generators are
closed), the loop closed with its thread, a thread already running a loop still served, timeouts
and cancellation from another thread still working; and the same under gunicorn gthread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import gc
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from flask_tooldiscovery.runtime.async_bridge import await_sync, run_sync, thread_loop

from .test_deploy import stop
from .test_operating_server import start

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def test_one_loop_per_thread_reused() -> None:
    async def loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    first, second = run_sync(loop), run_sync(loop)
    assert first is second and not first.is_running() and not first.is_closed()
    other: list[Any] = []
    thread = threading.Thread(target=lambda: other.append(run_sync(loop)))
    thread.start()
    thread.join()
    assert other[0] is not first


def test_context_variables_flow_in_and_back() -> None:
    async def read_and_set() -> str:
        seen = var.get()
        var.set("set by the call")
        return seen

    token = var.set("from the caller")
    try:
        assert run_sync(read_and_set) == "from the caller"
        assert var.get() == "set by the call"
    finally:
        var.reset(token)


def test_tasks_left_behind_are_cancelled_when_the_call_returns() -> None:
    events: list[str] = []

    async def leave() -> str:
        async def later() -> None:
            try:
                await asyncio.sleep(5)
                events.append("ran")
            except asyncio.CancelledError:
                events.append("cancelled")
                raise

        asyncio.get_running_loop().create_task(later())
        await asyncio.sleep(0)
        return "done"

    async def tasks() -> int:
        return len(asyncio.all_tasks())

    assert run_sync(leave) == "done"
    assert events == ["cancelled"]  # by the time run_sync returned
    assert run_sync(tasks) == 1  # the next call's own task only


def test_a_failing_leftover_does_not_fail_the_next_call() -> None:
    async def leave_failing() -> int:
        async def boom() -> None:
            try:
                await asyncio.sleep(5)
            finally:
                raise RuntimeError("in cleanup")

        asyncio.get_running_loop().create_task(boom())
        await asyncio.sleep(0)
        return 1

    async def two() -> int:
        return 2

    handler_calls: list[dict[str, Any]] = []
    thread_loop().set_exception_handler(lambda loop, context: handler_calls.append(context))
    try:
        assert run_sync(leave_failing) == 1
        assert run_sync(two) == 2
        assert [type(c.get("exception")) for c in handler_calls] == [RuntimeError]
    finally:
        thread_loop().set_exception_handler(None)


def test_async_generators_left_open_are_closed() -> None:
    closed: list[str] = []

    async def numbers() -> Any:
        try:
            for i in range(10):
                yield i
        finally:
            closed.append("closed")

    holder: list[Any] = []

    async def take_one() -> int:
        gen = numbers()
        holder.append(gen)  # kept alive: only the bridge can close it
        return await gen.__anext__()

    assert run_sync(take_one) == 0
    assert closed == ["closed"]


def test_exceptions_and_results_pass_through() -> None:
    async def fail() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        run_sync(fail)

    async def add(a: int, b: int = 0) -> int:
        await asyncio.sleep(0)
        return a + b

    assert run_sync(add, 1, b=2) == 3
    assert await_sync(add(4)) == 4


def test_wait_for_timeouts_still_work() -> None:
    async def slow() -> None:
        await asyncio.wait_for(asyncio.sleep(5), 0.05)

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        run_sync(slow)
    assert time.monotonic() - started < 4


def test_cancelled_from_another_thread() -> None:
    started = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []

    async def wait_forever() -> None:
        loops.append(asyncio.get_running_loop())
        started.set()
        await asyncio.sleep(30)

    async def cancel_me() -> None:
        task = asyncio.ensure_future(wait_forever())
        loop = asyncio.get_running_loop()
        threading.Thread(target=lambda: (started.wait(5), loop.call_soon_threadsafe(task.cancel))).start()
        await task

    with pytest.raises(asyncio.CancelledError):
        run_sync(cancel_me)

    async def fine() -> str:
        return "next call fine"

    assert run_sync(fine) == "next call fine"


def test_from_a_thread_that_already_runs_a_loop() -> None:
    async def inner() -> tuple[str, int]:
        await asyncio.sleep(0)
        return var.get(), threading.get_ident()

    async def outer() -> tuple[str, int]:
        var.set("outer")
        return run_sync(inner)  # type: ignore[no-any-return]  # blocking inside a running loop

    value, thread = asyncio.run(outer())
    assert value == "outer" and thread != threading.get_ident()


def test_the_loop_is_closed_when_its_thread_ends() -> None:
    async def loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    seen: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: seen.append(run_sync(loop)))
    thread.start()
    thread.join()
    del thread
    gc.collect()
    assert seen[0].is_closed()


def test_threads_of_a_pool_keep_their_loops_apart() -> None:
    async def where() -> tuple[int, int]:
        await asyncio.sleep(0.001)
        return threading.get_ident(), id(asyncio.get_running_loop())

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        pairs = list(pool.map(lambda _: run_sync(where), range(40)))
    loops_by_thread: dict[int, set[int]] = {}
    for thread, loop in pairs:
        loops_by_thread.setdefault(thread, set()).add(loop)
    assert all(len(loops) == 1 for loops in loops_by_thread.values())
    assert len({next(iter(v)) for v in loops_by_thread.values()}) == len(loops_by_thread)


# -- under gunicorn gthread ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    base, proc = start("tests.apps.async_app:create_app()")
    try:
        yield base
    finally:
        stop(proc)


def call(base: str, tool: str, headers: dict[str, str] | None = None) -> Any:
    response = requests.post(f"{base}/opal/tools/{tool}", json={"parameters": {}}, headers=headers, timeout=10)
    return response.status_code, response.json()


@pytest.mark.slow
def test_gthread_threads_reuse_their_loops_and_keep_calls_apart(server: str) -> None:
    alone = call(server, "where")[1]["tasks"]  # the call's own tasks (the invocation, the tool)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: call(server, "where"), range(48)))
    assert all(status == 200 for status, _ in answers)
    bodies = [body for _, body in answers]
    assert all(body["tasks"] == alone for body in bodies)  # no other call's task on the loop
    assert max(body["calls"] for body in bodies) > 1  # a loop served several calls
    loops_by_thread: dict[int, set[int]] = {}
    for body in bodies:
        loops_by_thread.setdefault(body["thread"], set()).add(body["loop"])
    assert all(len(loops) == 1 for loops in loops_by_thread.values())


@pytest.mark.slow
def test_gthread_tasks_left_behind_never_run_into_later_calls(server: str) -> None:
    alone = call(server, "left")[1]["tasks"]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(status == 200 for status, _ in pool.map(lambda _: call(server, "leave_task"), range(8)))
    time.sleep(1.5)  # past the second the tasks would have slept
    status, body = call(server, "left")
    assert status == 200
    assert body == {"ran": 0, "cancelled": 8, "tasks": alone}


@pytest.mark.slow
def test_gthread_context_variables_and_timeouts(server: str) -> None:
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        names = list(pool.map(lambda i: call(server, "who", {"X-Caller": f"caller-{i}"})[1], range(12)))
    assert names == [f"caller-{i}" for i in range(12)]
    status, body = call(server, "overrun")
    assert status != 200 or body.get("success") is False or "0.2 seconds" in str(body)
    assert "0.2 seconds" in str(body)
    assert call(server, "who", {"X-Caller": "after"})[1] == "after"
