"""Running async tools, providers and auth hooks from Flask's sync views.

Each call gets a fresh event loop that is closed afterwards (asgiref's ``async_to_sync`` with
``force_new_loop``), so no loop leaks between requests or workers. When the calling thread already
runs a loop (code calling the extension from async code), the coroutine runs on a new loop in a
helper thread instead of failing.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync


def run_sync(func: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
    """Call the coroutine function ``func`` and wait for its result, from sync code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return async_to_sync(func, force_new_loop=True)(*args, **kwargs)
    context = contextvars.copy_context()
    coroutine = func(*args, **kwargs)

    def run_in_thread() -> Any:
        return context.run(asyncio.run, coroutine)  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tooldiscovery-async") as pool:
        return pool.submit(run_in_thread).result()


def await_sync(awaitable: Awaitable[Any]) -> Any:
    """Wait for an awaitable someone already created (a provider's or handler's result)."""

    async def wait() -> Any:
        return await awaitable

    return run_sync(wait)
