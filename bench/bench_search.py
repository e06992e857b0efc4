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
over name, title and description (SQLite FTS5, no weights, no vocabulary, no re-ranking), and, with
the semantic extra installed, beside the index ranking by meaning too (``TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC``).
Cost: building the index for the catalogue and for 10,000 tools (the catalogue repeated with
renamed copies whose texts differ from the original's), cold (no text analysed before: wall and CPU
time, best of 3) and warm (another set of the same tools, as when one is hidden or changed), its
memory per tool (tracemalloc: the index and the analysis caches), and one search in process at
both sizes; with the semantic extra, the same with ranking by meaning (the model's load, the
background embedding of every tool and its memory per tool, a search whose query is new (its
embedding forgotten before each search, three passes: 1,539 searches make the p95 steadier than
one pass's 513; and the tokens the model embeds, of all and of the slowest twentieth: tool search
part 13) and one whose query was seen).

    python bench/bench_search.py [--not-blind] [--float32] [path/to/github-rest-tools.json]

``--not-blind`` never reads the blind sets: the quality lines are those of the sets tuned on or
held out, and the cost lines time the queries of those sets only (for measuring while changing
the ranking or its cost, before the one final run that reports the blind sets). ``--float32``
runs the model as its file has it (onnxruntime folding the int8 weights to float32), as before
tool search part 6, to compare.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import sys
import time
import tracemalloc
from collections import OrderedDict
from pathlib import Path
from typing import Any

from flask_tooldiscovery.search import semantic
from flask_tooldiscovery.search.index import SearchIndex, forget_analysed
from flask_tooldiscovery.search.vocabulary import words
from flask_tooldiscovery.settings import SettingsError
from flask_tooldiscovery.tools.model import Tool
from flask_tooldiscovery.tools.providers import tool_from_object

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "github-rest-tools.json"


BLIND = ("search_tasks_blind.txt", "search_tasks_blind2.txt")


def load_tasks(blind: bool = True) -> list[tuple[str, str, set[str]]]:
    tasks = []
    for file in ("search_tasks.txt", "search_tasks_dev.txt", "search_tasks_dev2.txt", "search_tasks_dev3.txt",
                 *(BLIND if blind else ())):
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
    arguments = sys.argv[1:]
    blind = "--not-blind" not in arguments
    if "--float32" in arguments:
        from flask_tooldiscovery.search import int8

        def refused(path: Path) -> bytes:
            raise RuntimeError("--float32: the file's own graph")

        int8.rewritten = refused
        semantic._BATCH = 32
    paths = [a for a in arguments if not a.startswith("--")]
    data = Path(paths[0]) if paths else DEFAULT_DATA
    tools = [tool_from_object(t) for t in json.loads(data.read_text())["tools"]]
    tasks = load_tasks(blind)
    index = SearchIndex.build(tools)
    meaning = _meaning(tools)
    by_meaning = SearchIndex.build(tools, meaning) if meaning is not None else None
    flat = flat_bm25(tools)
    print(f"{len(tools)} tools, {len(tasks)} tasks")
    misses = []
    for which in ("tune", "held", "dev", "dev2", "dev2held", "dev3held", *(("blind", "blind2") if blind else ())):
        chosen = [(task, expected) for w, task, expected in tasks if w == which]
        ours = [[h.name for h in index.search(task, 5)] for task, _ in chosen]
        theirs = [flat_search(flat, tools, task, 5) for task, _ in chosen]
        expected = [e for _, e in chosen]
        line = (f"{which} ({len(chosen)} tasks): index recall@1 {recall(ours, expected, 1):.2f} "
                f"recall@5 {recall(ours, expected, 5):.2f}; flat BM25 recall@1 {recall(theirs, expected, 1):.2f} "
                f"recall@5 {recall(theirs, expected, 5):.2f}")
        if by_meaning is not None:
            meant = [[h.name for h in by_meaning.search(task, 5)] for task, _ in chosen]
            line += f"; by meaning recall@1 {recall(meant, expected, 1):.2f} recall@5 {recall(meant, expected, 5):.2f}"
        print(line)
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
              f"B/tool; search median {statistics.median(times) * 1000:.3f} ms, "
              f"p95 {sorted(times)[int(len(times) * .95)] * 1000:.3f} ms (CPU {statistics.median(cpu_times) * 1000:.3f}"
              f", {sorted(cpu_times)[int(len(cpu_times) * .95)] * 1000:.3f} ms)")
        if meaning is not None:
            _cost_by_meaning(label, chosen_tools, [task for _, task, _e in tasks], meaning)


def _rss() -> int:
    """This process's resident memory, in bytes (onnxruntime's allocations are not Python's, so
    tracemalloc does not see them)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _meaning(tools: list[Tool]) -> semantic.Meaning | None:
    """A fresh :class:`~flask_tooldiscovery.search.semantic.Meaning` with its model loaded and
    ``tools`` embedded (the load's time and memory printed), or ``None`` without the semantic extra."""
    try:
        semantic.require()
    except SettingsError:
        print("(no semantic extra: ranking by meaning not measured)")
        return None
    meaning = semantic.Meaning()
    before = _rss()
    import numpy
    import onnxruntime
    import tokenizers  # noqa: F401
    imported = _rss()
    started, cpu = time.perf_counter(), time.process_time()
    meaning._loaded()
    took = (time.perf_counter() - started, time.process_time() - cpu)
    print(f"semantic: numpy {numpy.__version__}, onnxruntime {onnxruntime.__version__}; their imports "
          f"+{(imported - before) / 2**20:.0f} MiB resident; the model loaded (sha256 checked) in "
          f"{took[0] * 1000:.0f} ms (CPU {took[1] * 1000:.0f} ms), +{(_rss() - imported) / 2**20:.0f} MiB resident")
    SearchIndex.build(tools, meaning)
    meaning.wait()
    return meaning


def _cost_by_meaning(label: str, tools: list[Tool], queries: list[str], model: semantic.Meaning) -> None:
    """What ranking by meaning adds: the build (the same index, and each tool's line of text), the
    background embedding of every tool (wall and CPU time: the thread is this process's only work
    then; the memory kept per tool, tracemalloc), a search whose query was never embedded (three
    passes, the kept query embeddings cleared before each search) and one whose was (two passes)."""
    meaning = semantic.Meaning()
    meaning._model = model._loaded()
    forget_analysed()
    started, cpu = time.perf_counter(), time.process_time()
    built = SearchIndex.build(tools, meaning)
    build = (time.perf_counter() - started, time.process_time() - cpu)
    meaning.wait()
    embedding = (time.perf_counter() - started, time.process_time() - cpu)
    tracemalloc.start()  # what an embedding kept weighs: a copy of each, as kept (by text)
    copied = OrderedDict((text, vector.copy()) for text, vector in meaning._kept.items())
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del copied
    read: list[str | None] = []  # each search's query as the vocabulary reads it (the text embedded), if embedded
    embedded = meaning._query
    meaning._query = lambda text: (read.__setitem__(-1, text), embedded(text))[1]  # type: ignore[method-assign]
    fresh: tuple[list[float], list[float]] = ([], [])
    for _ in range(3):  # a new query: its embedding forgotten before each search (and its analysis: 256 kept)
        for query in queries:
            meaning._queries.clear()
            read.append(None)
            started, cpu = time.perf_counter(), time.process_time()
            built.search(query, 5)
            fresh[0].append(time.perf_counter() - started)
            fresh[1].append(time.process_time() - cpu)
    meaning._query = embedded  # type: ignore[method-assign]
    tokenizer = meaning._loaded()[0]
    tokens = [len(tokenizer.encode(text).ids) for text in read if text is not None]
    slowest = [len(tokenizer.encode(read[i] or "").ids) if read[i] else 0
               for i in sorted(range(len(read)), key=lambda i: fresh[1][i])[len(read) * 19 // 20:]]
    passes: list[tuple[list[float], list[float]]] = [fresh]
    for query in queries:  # each embedded and kept again
        built.search(query, 5)
    for _ in range(2):
        times, cpu_times = [], []
        for query in queries:
            started, cpu = time.perf_counter(), time.process_time()
            built.search(query, 5)
            times.append(time.perf_counter() - started)
            cpu_times.append(time.process_time() - cpu)
        passes.append((times, cpu_times))

    def said(times: list[float], cpu_times: list[float]) -> str:
        p95, cpu_p95 = sorted(times)[int(len(times) * .95)], sorted(cpu_times)[int(len(cpu_times) * .95)]
        return (f"median {statistics.median(times) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms "
                f"(CPU {statistics.median(cpu_times) * 1000:.2f}, {cpu_p95 * 1000:.2f} ms)")

    later = ([t for p in passes[1:] for t in p[0]], [t for p in passes[1:] for t in p[1]])
    print(f"{label} tools by meaning: build {build[0] * 1000:.0f} ms (CPU {build[1] * 1000:.0f} ms, cold); every tool "
          f"embedded in the background in {embedding[0]:.1f} s (CPU {embedding[1]:.1f} s), {len(meaning._kept)} texts, "
          f"{size / max(len(meaning._kept), 1):.0f} B each kept; search, query new: {said(*passes[0])} "
          f"(3 passes; tokens embedded: median {statistics.median(tokens):.0f}, the slowest twentieth's "
          f"{statistics.median(slowest):.0f}); query seen: {said(*later)}")


def _renumbered(schema: dict[str, Any], n: int) -> dict[str, Any]:
    """``schema`` with `` (n)`` after each parameter's description."""
    properties = {name: {**spec, "description": f"{spec['description']} ({n})"}
                  if isinstance(spec, dict) and isinstance(spec.get("description"), str) else spec
                  for name, spec in (schema.get("properties") or {}).items()}
    return {**schema, "properties": properties}

if __name__ == "__main__":
    main()
