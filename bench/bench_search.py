"""Tool search, quality and cost, on GitHub's REST API as 1,223 tools.

Quality: recall@1 and recall@5 of the index over the plain-language tasks of
``bench/search_tasks.txt`` (the "tune" set and the "held" set reported apart), of
``bench/search_tasks_dev.txt`` (the "dev" set, written for part 3 in the words people use), of
``bench/search_tasks_dev2.txt`` (part 4's, from the catalogue alone: "dev2" tuned on, "dev2held"
held out), of ``bench/search_tasks_dev3.txt`` ("dev3held", held out), of
``bench/search_tasks_blind.txt`` (the "blind" set: written before its author read the search code)
and of ``bench/search_tasks_blind2.txt`` (the "blind2" set: 270 tasks written from the catalogue
alone, by someone who read neither the search code, its vocabulary nor the other sets); the misses
of the sets held out are never printed, so nobody tunes on them by accident; beside a flat BM25
over name, title and description (SQLite FTS5, no weights, no vocabulary, no re-ranking).
Cost: building the index for the catalogue and for 10,000 tools (the catalogue repeated with
renamed copies whose texts differ from the original's), cold (no text analysed before: wall and CPU
time, best of 3) and warm (another set of the same tools, as when one is hidden or changed), its
memory per tool (tracemalloc: the index and the analysis caches), and one search in process at
both sizes.

    python bench/bench_search.py [path/to/github-rest-tools.json]
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from flask_tooldiscovery.search.index import SearchIndex, forget_analysed
from flask_tooldiscovery.search.vocabulary import words
from flask_tooldiscovery.tools.model import Tool
from flask_tooldiscovery.tools.providers import tool_from_object

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "github-rest-tools.json"


def load_tasks() -> list[tuple[str, str, set[str]]]:
    tasks = []
    for file in ("search_tasks.txt", "search_tasks_dev.txt", "search_tasks_dev2.txt", "search_tasks_dev3.txt",
                 "search_tasks_blind.txt", "search_tasks_blind2.txt"):
        for line in (HERE / file).read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            which, task, expected = (part.strip() for part in line.split("|"))
            tasks.append((which, task, set(expected.split())))
    return tasks


def flat_bm25(tools: list[Tool]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(name, title, description)")
    db.executemany("INSERT INTO t(rowid, name, title, description) VALUES (?, ?, ?, ?)",
                   [(i, " ".join(words(t.name)), t.title or "", t.description) for i, t in enumerate(tools)])
    return db


def flat_search(db: sqlite3.Connection, tools: list[Tool], query: str, limit: int) -> list[str]:
    terms = " OR ".join(f'"{w}"' for w in dict.fromkeys(words(query)))
    rows = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (terms, limit)).fetchall()
    return [tools[r[0]].name for r in rows]


def recall(found: list[list[str]], expected: list[set[str]], k: int) -> float:
    return sum(bool(set(f[:k]) & e) for f, e in zip(found, expected, strict=True)) / len(expected)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    tools = [tool_from_object(t) for t in json.loads(data.read_text())["tools"]]
    tasks = load_tasks()
    index = SearchIndex.build(tools)
    flat = flat_bm25(tools)
    print(f"{len(tools)} tools, {len(tasks)} tasks")
    misses = []
    for which in ("tune", "held", "dev", "dev2", "dev2held", "dev3held", "blind", "blind2"):
        chosen = [(task, expected) for w, task, expected in tasks if w == which]
        ours = [[h.name for h in index.search(task, 5)] for task, _ in chosen]
        theirs = [flat_search(flat, tools, task, 5) for task, _ in chosen]
        expected = [e for _, e in chosen]
        print(f"{which} ({len(chosen)} tasks): index recall@1 {recall(ours, expected, 1):.2f} "
              f"recall@5 {recall(ours, expected, 5):.2f}; flat BM25 recall@1 {recall(theirs, expected, 1):.2f} "
              f"recall@5 {recall(theirs, expected, 5):.2f}")
        if which in ("tune", "held", "dev", "dev2"):  # the misses of sets held out are never printed
            misses += [(which, t, sorted(e), f[:5]) for (t, e), f in zip(chosen, ours, strict=True) if not set(f) & e]
    for which, *miss in misses:
        print(f"  {which} miss:", tuple(miss))

    many = [*tools]
    n = 0
    while len(many) < 10_000:  # copies whose texts differ from the original's (no cache shared across copies)
        n += 1
        many += [Tool(name=f"{t.name}_{n}", description=f"{t.description} ({n})", title=f"{t.title} ({n})",
                      input_schema=_renumbered(t.input_schema, n), annotations=t.annotations)
                 for t in tools[: 10_000 - len(many)]]
    for label, chosen_tools in (("1,223", tools), ("10,000", many)):
        builds = []
        for _ in range(3):
            forget_analysed()  # cold: no text analysed before
            started, cpu = time.perf_counter(), time.process_time()
            built = SearchIndex.build(chosen_tools)
            builds.append((time.perf_counter() - started, time.process_time() - cpu))
            del built
        started, cpu = time.perf_counter(), time.process_time()
        SearchIndex.build(chosen_tools[1:])  # warm: another set of the same tools (one hidden, one changed...)
        warm = (time.perf_counter() - started, time.process_time() - cpu)
        forget_analysed()
        tracemalloc.start()  # a cold build, traced (tracing slows it several times): the index and its caches
        built = SearchIndex.build(chosen_tools)
        size, _peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        times, cpu_times = [], []
        for _ in range(3):
            for _, task, _e in tasks:
                started, cpu = time.perf_counter(), time.process_time()
                built.search(task, 5)
                times.append(time.perf_counter() - started)
                cpu_times.append(time.process_time() - cpu)
        wall, cpu_time = min(builds)
        print(f"{label} tools: build {wall * 1000:.0f} ms (CPU {cpu_time * 1000:.0f} ms; best of 3, cold), "
              f"{warm[0] * 1000:.0f} ms warm (CPU {warm[1] * 1000:.0f} ms); memory {size / len(chosen_tools):.0f} "
              f"B/tool; search median {statistics.median(times) * 1000:.2f} ms, "
              f"p95 {sorted(times)[int(len(times) * .95)] * 1000:.2f} ms (CPU {statistics.median(cpu_times) * 1000:.2f}"
              f", {sorted(cpu_times)[int(len(cpu_times) * .95)] * 1000:.2f} ms)")


def _renumbered(schema: dict[str, Any], n: int) -> dict[str, Any]:
    """``schema`` with `` (n)`` after each parameter's description."""
    properties = {name: {**spec, "description": f"{spec['description']} ({n})"}
                  if isinstance(spec, dict) and isinstance(spec.get("description"), str) else spec
                  for name, spec in (schema.get("properties") or {}).items()}
    return {**schema, "properties": properties}

if __name__ == "__main__":
    main()
