"""What the in-process benches share: a request straight into a WSGI callable (no sockets), and
timing a call: how many calls fill a given time, microseconds per call (alone, or in a round
against a reference), calls per second (the median of rounds). The scripts import it from their
own folder (``python bench/<script>.py``)."""

from __future__ import annotations

import gc
import io
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def wsgi_request(app: Any, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
                 check: Callable[[bytes], bool] | None = None) -> Callable[[], bytes]:
    """A request to call again and again: ``method path`` with the JSON ``body`` and the WSGI
    ``headers`` (``HTTP_...``) into ``app``; each call asserts a 200 (and ``check`` of the body) and
    returns the body."""
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
               "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http", "CONTENT_TYPE": "application/json",
               "CONTENT_LENGTH": str(len(body)), "wsgi.errors": sys.stderr, **(headers or {})}

    def run() -> bytes:
        statuses: list[str] = []
        out = b"".join(app({**environ, "wsgi.input": io.BytesIO(body)}, lambda s, h: statuses.append(s)))
        assert statuses[0].startswith("200") and (check is None or check(out)), (path, statuses, out[:300])
        return out

    return run


def calibrated(fn: Callable[[], object], seconds: float) -> int:
    """How many calls of ``fn`` take about ``seconds``."""
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n


def us_per(fn: Callable[[], object], n: int) -> float:
    """Microseconds per call over ``n`` calls of ``fn``."""
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def against(fn: Callable[[], object], reference: Callable[[], object], n: int) -> tuple[float, float]:
    """One interleaved round: ``fn`` warmed up, then ``reference`` and ``fn`` timed over ``n`` calls
    each; their microseconds per call, the reference's first."""
    for _ in range(max(n // 10, 50)):
        fn()
    return us_per(reference, n), us_per(fn, n)


def per_second(fn: Callable[[], object], n: int, rounds: int) -> float:
    """Calls of ``fn`` per second: the median of ``rounds`` rounds of ``n`` calls."""
    rates = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)
