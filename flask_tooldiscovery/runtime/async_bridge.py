"""Running async tools, providers and auth hooks from Flask's sync views.

Each thread that runs coroutines keeps one event loop and reuses it (creating a loop per call cost
about 50 times the call of a trivial coroutine under gthread). What a call leaves behind does not
reach the next one: the coroutine runs in a copy of the caller's context (context variables flow
in, and changes it makes flow back, as asgiref's ``async_to_sync`` did), tasks it started and left
running are cancelled and awaited when it returns, and async generators it left open are closed.
The loop is closed when its thread ends. When the calling thread already runs a loop (code calling
the extension from async code), the coroutine runs on a new loop in a helper thread instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync

from ..tools.providers import await_with


class _ThreadLoop:
    """One thread's event loop, closed when the thread ends (its thread-local slot is dropped)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()

    def __del__(self) -> None:
        loop = getattr(self, "loop", None)
        if loop is not None and not loop.is_closed() and not loop.is_running():
            loop.close()


_local = threading.local()


def thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's reusable event loop (a new one after a fork or once it was closed)."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed() or holder.pid != os.getpid():
        holder = _local.holder = _ThreadLoop()
    return holder.loop


def _restore_context(context: contextvars.Context) -> None:
    """Carry the changes a call made to context variables back into the caller's context."""
    for var, value in context.items():
        try:
            if var.get() is value:
                continue
        except LookupError:
            pass
        var.set(value)


async def _settle(awaitables: list[Any]) -> None:
    await asyncio.gather(*awaitables, return_exceptions=True)


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel and await the tasks a call left behind; close the async generators it left open."""
    leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if leftovers:
        for task in leftovers:
            task.cancel()
        loop.run_until_complete(_settle(leftovers))
        for task in leftovers:  # as asyncio.run reports them
            if not task.cancelled() and task.exception() is not None:
                loop.call_exception_handler({"message": "unhandled exception in a task left running by a call",
                                             "exception": task.exception(), "task": task})
    generators = getattr(loop, "_asyncgens", None)  # tracked by the loop's asyncgen hooks
    if generators:
        closing = list(generators)
        generators.clear()
        loop.run_until_complete(_settle([g.aclose() for g in closing]))


def _run_here(coroutine: Coroutine[Any, Any, Any]) -> Any:
    loop = thread_loop()
    context = contextvars.copy_context()
    task = loop.create_task(coroutine, context=context)
    try:
        return loop.run_until_complete(task)
    finally:
        try:
            if not task.done():  # interrupted (KeyboardInterrupt...): it goes with the leftovers
                task.cancel()
            _finish(loop)
        finally:
            _restore_context(context)


def run_sync(func: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
    """Call the coroutine function ``func`` and wait for its result, from sync code: on this
    thread's event loop, or on a new loop in a helper thread when this thread already runs one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        coroutine = func(*args, **kwargs)
        if not asyncio.iscoroutine(coroutine):  # an awaitable that is no coroutine (a future...)
            coroutine = _awaiting(coroutine)
        return _run_here(coroutine)
    context = contextvars.copy_context()
    coroutine = func(*args, **kwargs)

    def run_in_thread() -> Any:
        return context.run(asyncio.run, coroutine)  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tooldiscovery-async") as pool:
        return pool.submit(run_in_thread).result()


async def _awaiting(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def run_sync_serving_this_thread(func: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
    """Like :func:`run_sync`, but the loop runs in another thread while this one serves asgiref's
    thread-sensitive ``sync_to_async`` calls made by the coroutine (so they run in this very
    thread): asgiref's ``async_to_sync`` with a new loop per call. For the auth hook's async
    context managers, whose guarded call must run in the request's thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return async_to_sync(func, force_new_loop=True)(*args, **kwargs)
    return run_sync(func, *args, **kwargs)


def await_sync(awaitable: Awaitable[Any]) -> Any:
    """Wait for an awaitable someone already created (a provider's or handler's result)."""

    async def wait() -> Any:
        return await awaitable

    return run_sync(wait)


await_with(await_sync)  # tools providers that answer asynchronously are awaited on this bridge
