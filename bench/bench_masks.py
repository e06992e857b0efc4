"""Tool search over many visible sets: what a search costs when N callers, each seeing a different
set of the tools (a ``visible=`` hook hiding one tool from each, as per-user rules do), search in
rotation, at 1,223 tools (GitHub's REST API) and 10,000 (the catalogue with renamed copies, as in
``bench_search.py``).

"after": the app's :class:`~flask_tooldiscovery.search.indexes.SearchIndexes`, one index per base
set and a mask per view. "before": each view indexed on its own (kept 16 at a time), as the
indexes were until part 8 of RESULTS' tool search: the same views made into sets of their own.
Each line: the median and the 95th percentile of one search (``SearchIndexes.search``: the query
checked, the view's index and mask found, the search), over rounds after a first round that made
what the rotation keeps; then what making one mask costs, its memory (tracemalloc) and what a mask
adds to a search (one tool hidden; a tenth of the tools shown, as a toolset).

    python bench/bench_masks.py [path/to/github-rest-tools.json]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from flask_tooldiscovery.search.indexes import SearchIndexes
from flask_tooldiscovery.tools.model import Tool
from flask_tooldiscovery.tools.providers import tool_from_object
from flask_tooldiscovery.tools.registry import ToolSet

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "github-rest-tools.json"


def _renumbered(schema: dict[str, Any], n: int) -> dict[str, Any]:
    properties = {name: {**spec, "description": f"{spec['description']} ({n})"}
                  if isinstance(spec, dict) and isinstance(spec.get("description"), str) else spec
                  for name, spec in (schema.get("properties") or {}).items()}
    return {**schema, "properties": properties}


def ten_thousand(tools: list[Tool]) -> list[Tool]:
    many, n = [*tools], 0
    while len(many) < 10_000:
        n += 1
        many += [Tool(name=f"{t.name}_{n}", description=f"{t.description} ({n})", title=f"{t.title} ({n})",
                      input_schema=_renumbered(t.input_schema, n), annotations=t.annotations)
                 for t in tools[: 10_000 - len(many)]]
    return many


def ms(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered) * 1000:8.2f} ms  p95 {p95 * 1000:8.2f} ms"


def rotation(views: list[ToolSet], queries: list[str], rounds: int) -> tuple[list[float], int]:
    """The times of searches by each view in turn (a query each), after a first round unmeasured,
    and how many indexes were built."""
    indexes = SearchIndexes(size=16)  # "before" kept 16; "after" needs one
    times: list[float] = []
    for round_ in range(rounds + 1):
        for k, view in enumerate(views):
            query = queries[(round_ * len(views) + k) % len(queries)]
            started = time.perf_counter()
            indexes.search(view, query, 5)
            if round_:
                times.append(time.perf_counter() - started)
    return times, indexes.builds


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    tools = [tool_from_object(t) for t in json.loads(data.read_text())["tools"]]
    queries = [line.split("|")[1] for line in (HERE / "search_tasks.txt").read_text().splitlines()
               if line.startswith("tune")][:40]
    for label, chosen in (("1,223", tools), ("10,000", ten_thousand(tools))):
        base = ToolSet(chosen)
        names = [t.name for t in chosen]
        for users in (8, 20, 50):
            views = [base.narrowed(("hiding", k), lambda t, hidden=names[k * 7]: t.name != hidden)
                     for k in range(users)]
            after, built = rotation(views, queries, 3)
            print(f"{label:>6} tools, {users:2} visible sets in rotation, after:  {ms(after)}  ({built} built)")
            if users == 20:
                alone = [ToolSet(view.tools, fingerprint=view.fingerprint) for view in views]
                before, built = rotation(alone, queries, 1 if label == "10,000" else 3)
                print(f"{label:>6} tools, {users:2} visible sets in rotation, before: {ms(before)}  ({built} built)")
        index, _ = SearchIndexes().of(base)
        one_hidden = [base.narrowed(("hiding", k), lambda t, hidden=names[k]: t.name != hidden).latest()
                      for k in range(50)]
        tenth = [base.narrowed(("tenth", k), lambda t, k=k: hash(t.name) % 10 == k % 10).latest() for k in range(50)]
        for kind, shown in (("one tool hidden", one_hidden), ("a tenth shown", tenth)):
            started = time.perf_counter()
            for each in shown:
                index.mask(each)
            made = (time.perf_counter() - started) / len(shown)
            tracemalloc.start()
            kept = [index.mask(each) for each in shown]
            size = tracemalloc.get_traced_memory()[0] / len(kept)
            tracemalloc.stop()
            searches: dict[str, list[float]] = {"none": [], "masked": []}
            for _ in range(3):
                for query in queries:
                    for which, mask in (("none", None), ("masked", kept[0])):
                        started = time.perf_counter()
                        index.search(query, 5, mask)
                        searches[which].append(time.perf_counter() - started)
            print(f"{label:>6} tools, mask ({kind}): made in {made * 1000:.2f} ms, {size / 1024:.1f} KiB kept; "
                  f"a search unmasked {ms(searches['none'])}, masked {ms(searches['masked'])}")


if __name__ == "__main__":
    main()
