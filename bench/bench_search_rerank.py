"""Tool search: how much room ranking by meaning has, on GitHub's REST API as 1,223 tools.

It reads the tasks of the sets that are not blind (``search_tasks.txt``, ``_dev``, ``_dev2``,
``_dev3``; never the blind files) and prints aggregates only, by group: "tuned" (tune, held, dev,
dev2) and "held-out" (dev2held, dev3held), whose misses are never printed.

* The ceiling: how many tasks have their tool among the index's best 5, 10, 20 and 100 (the
  candidates ranking by meaning re-ranks): what a perfect re-ranker of the best k would find.
* With the semantic extra: the first five of the candidates ranked by the model's cosine alone, and
  as the package ranks them (``Meaning.rank``), with where the right tool then stands.
* With the semantic extra: what a cross-encoder of the extra's model's size would cost a search
  (the model run on 1, 10, 20 and 30 pairs of a query and a candidate's text, one thread).

To measure another model, point ``semantic.MODEL`` and ``semantic.TOKENIZER`` at its files (and
``Meaning.embed`` at its pooling): the candidates stay the same, so the figures compare.

    python bench/bench_search_rerank.py [path/to/github-rest-tools.json]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from flask_tooldiscovery.search import semantic
from flask_tooldiscovery.search.index import SearchIndex
from flask_tooldiscovery.settings import SettingsError
from flask_tooldiscovery.tools.providers import tool_from_object

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "github-rest-tools.json"
GROUPS = {"tuned": ("tune", "held", "dev", "dev2"), "held-out": ("dev2held", "dev3held")}
PLACES = ((1, 5), (6, 10), (11, 20), (21, 100))


class _Candidates:
    """Stands for a ``Meaning`` in the index: keeps what a search hands to ranking by meaning (the
    query's texts, the candidates' texts and lexical scores) and leaves the lexical order."""

    def __init__(self) -> None:
        self.last: tuple[Any, list[str], list[float]] | None = None

    def prepare(self, texts: list[str]) -> None:
        pass

    def rank(self, query: Any, texts: list[str], scores: list[float]) -> None:
        self.last = (query, list(texts), list(scores))


def load_tasks() -> list[tuple[str, str, set[str]]]:
    tasks = []
    for file in ("search_tasks.txt", "search_tasks_dev.txt", "search_tasks_dev2.txt", "search_tasks_dev3.txt"):
        for line in (HERE / file).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                which, task, expected = (part.strip() for part in line.split("|"))
                tasks.append((which, task, set(expected.split())))
    return tasks


def place(order: list[str], expected: set[str]) -> int | None:
    return next((i + 1 for i, name in enumerate(order) if name in expected), None)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    tools = [tool_from_object(t) for t in json.loads(data.read_text())["tools"]]
    recorder = _Candidates()
    index = SearchIndex.build(tools, recorder)  # type: ignore[arg-type]
    name_of = dict(zip(index._texts, (t.name for t in tools), strict=True))
    text_of = {name: text for text, name in name_of.items()}
    found = []
    for which, task, expected in load_tasks():
        recorder.last = None
        hits = index.search(task, 100)
        if recorder.last is None:  # fewer than three candidates: nothing to rank again
            recorder.last = (None, [text_of[h.name] for h in hits], [h.score for h in hits])
        found.append((which, expected, *recorder.last))
    try:
        semantic.require()
        meaning: semantic.Meaning | None = semantic.Meaning()
    except SettingsError:
        meaning = None
        print("(no semantic extra: only the ceiling is measured)")
    if meaning is not None:
        import numpy

        meaning.prepare(index._texts)
        meaning.wait()
    for group, sets in GROUPS.items():
        chosen = [f for f in found if f[0] in sets]
        within = {k: sum(place([name_of[t] for t in texts[:k]], e) is not None for _, e, _, texts, _ in chosen)
                  for k in (5, 10, 20, 100)}
        ceiling = ", ".join(f"best {k}: {n}" for k, n in within.items())
        print(f"{group} ({len(chosen)} tasks): the right tool among the index's {ceiling}")
        if meaning is None:
            continue
        alone, ranked, places = 0, 0, dict.fromkeys([*PLACES, None], 0)
        for _, expected, query, texts, scores in chosen:
            order = list(range(len(texts)))
            if query is not None:  # the embeddings kept by the index's build, the query's as rank makes it
                asked = meaning._query(tuple(dict.fromkeys(query)))
                closeness = numpy.stack([meaning._kept[text] for text in texts]) @ asked
                order = meaning.rank(query, texts, scores) or order
            else:
                closeness = -numpy.arange(len(texts), dtype=float)
            alone += place([name_of[texts[i]] for i in closeness.argsort()[::-1][:5]], expected) is not None
            at = place([name_of[texts[i]] for i in order], expected)
            ranked += at is not None and at <= 5
            places[next((p for p in PLACES if at is not None and p[0] <= at <= p[1]), None)] += 1
        where = ", ".join(f"{p[0]}-{p[1]}: {n}" if p else f"not a candidate: {n}" for p, n in places.items())
        print(f"  first five by the model's cosine alone: {alone}; as the package ranks: {ranked} "
              f"(the right tool at {where})")
    if meaning is not None:
        _cross_encoder_cost(meaning, found[:60])


def _cross_encoder_cost(meaning: semantic.Meaning, found: list[Any]) -> None:
    """The extra's model run on pairs (a query, a candidate's text), as a cross-encoder of its size
    would be on every search (a pair cannot be kept from one query to the next)."""
    import numpy

    tokenizer, session, inputs = meaning._loaded()
    for n in (1, 10, 20, 30):
        cpu_times = []
        for _, _, query, texts, _ in found:
            if query is None:
                continue
            encoded = tokenizer.encode_batch([(query[0], text) for text in texts[:n]])
            feeds = {"input_ids": numpy.array([e.ids for e in encoded], dtype=numpy.int64),
                     "attention_mask": numpy.array([e.attention_mask for e in encoded], dtype=numpy.int64)}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = numpy.array([e.type_ids for e in encoded], dtype=numpy.int64)
            started = time.process_time()
            session.run(None, feeds)
            cpu_times.append(time.process_time() - started)
        p95 = sorted(cpu_times)[int(len(cpu_times) * .95)]
        print(f"a cross-encoder of the model's size over {n} candidates: CPU median "
              f"{statistics.median(cpu_times) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms")


if __name__ == "__main__":
    main()
