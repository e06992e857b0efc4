"""flask-tooldiscovery's opal dialect beside the official Opal SDK (FastAPI), same 50 tools.

Run: ``pip install optimizely-opal.opal-tools-sdk fastapi httpx`` then
``python bench/bench_peer_opal.py``. Each side is driven through its framework's in-process test
client (Flask's, Starlette's), which costs different amounts, so read the result as "same order of
magnitude or not", not as a precise ratio.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
logging.disable(logging.INFO)

N_TOOLS = 50
ROUNDS = 5


def rate(fn, n: int) -> float:
    fn()
    rates = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def ours():
    from bench_dialects import build
    from flask import Flask

    app = Flask("bench")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    build(N_TOOLS).init_app(app)
    client = app.test_client()
    body = {"parameters": {"city": "Oslo", "days": 2}}
    return (lambda: client.get("/opal/discovery"),
            lambda: client.post("/opal/tools/forecast_7", json=body))


try:
    from pydantic import BaseModel, Field

    class Params(BaseModel):
        """The peer's tools take one pydantic model (the SDK reads the handler's type hints)."""

        city: str = Field(description="City name")
        days: int = Field(1, description="How many days.")
        units: str = Field("metric", description="Units")
        tags: list[str] | None = Field(None, description="Tags")
except ImportError:  # pragma: no cover
    Params = None  # type: ignore[assignment,misc]


def peer():
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from opal_tools_sdk import ToolsService, tool
    app = FastAPI()
    ToolsService(app)
    for i in range(N_TOOLS):
        async def handler(parameters: Params):
            return {"city": parameters.city, "days": parameters.days}
        handler.__name__ = f"forecast_{i}"
        tool(f"forecast_{i}", "Fetch a forecast.")(handler)
    client = TestClient(app)
    body = {"parameters": {"city": "Oslo", "days": 2}}
    return (lambda: client.get("/discovery"), lambda: client.post("/tools/forecast_7", json=body))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    rows = [("flask-tooldiscovery opal", *ours())]
    try:
        rows.append(("optimizely opal-tools-sdk", *peer()))
    except ImportError as exc:
        print(f"peer SDK not installed ({exc}); only our side measured")
    print(f"{N_TOOLS} tools, median of {ROUNDS} rounds, requests per second")
    print(f"{'server':28} {'discovery':>10} {'call':>10}")
    for label, discover, call in rows:
        assert discover().status_code == 200 and call().status_code == 200, label
        print(f"{label:28} {rate(discover, 300):10.0f} {rate(call, 600):10.0f}")


if __name__ == "__main__":
    main()
