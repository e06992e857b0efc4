"""An async tool's call from a sync (gthread) worker: a new event loop per call (what
``async_bridge.run_sync`` did until 2026-11-23: asgiref ``force_new_loop``), ``asyncio.run``, a bare
reusable loop per thread, and ``async_bridge.run_sync`` as it is now (a reusable loop per thread
plus the per-call cleanup: context copy, leftover tasks, open async generators).

Run: ``python bench/bench_async.py``; bench/RESULTS.rst records runs.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asgiref.sync import async_to_sync

from flask_tooldiscovery.runtime.async_bridge import run_sync


async def tool(city: str) -> dict[str, str]:
    await asyncio.sleep(0)
    return {"city": city}


_local = threading.local()


def reused(city: str) -> object:
    loop = getattr(_local, "loop", None)
    if loop is None:
        loop = _local.loop = asyncio.new_event_loop()
    return loop.run_until_complete(tool(city))


def us(fn: object, n: int = 3000) -> float:
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn("Oslo")  # type: ignore[operator]
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


if __name__ == "__main__":
    old = async_to_sync(tool, force_new_loop=True)
    print(f"new loop per call (asgiref force_new_loop): {us(old):8.1f} us/call")
    print(f"asyncio.run per call:                       {us(lambda c: asyncio.run(tool(c))):8.1f} us/call")
    print(f"one reusable loop per thread (bare):        {us(reused):8.1f} us/call")
    print(f"async_bridge.run_sync (now):                {us(lambda c: run_sync(tool, c)):8.1f} us/call")
