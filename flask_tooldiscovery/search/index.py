"""A search index of one tool set: BM25F ranks tools by what they are for, over their name, title,
description, parameters and tags, each field weighted by how much it says of that; the best
candidates are then ranked again by what term counts cannot see: whether the tool does the kind of
action the query asks for (create, delete, list...), whether its read-only and destructive hints
agree, how many of the query's ideas it covers, and how much of what its title is about the query
covers (the plain "Create an issue" before "Create an issue type for an organization"). A query
word also finds its relatives, words one of which begins with the other.

Every term's contribution to every tool's score is worked out when the index is built and kept in
two numpy arrays (the tools that say each term, and what it adds to each one's score), so a search
sums the query's postings in one ``numpy.bincount`` and picks the best with ``numpy.partition``:
only the candidates are ranked again, all at once (:mod:`.ranking`). SQLite's FTS5 (tried first: it is in the standard
library) computes BM25 for every matching row at query time, 20-120 ms at 10,000 tools here; the
same sums in a Python loop took 1.1 ms there, about three quarters of a ``search_tools`` call.
An index is built once per tool set (by the set's content fingerprint) and is read-only after
that but for what each query term searched finds, kept and bounded; searches from several threads
share it.

One index serves every view of its set (what each caller may see, a toolset, a read-only mount): a
search given a :class:`Mask` leaves the hidden tools out before anything is ranked, so they are
never answered and take no place among the candidates ranked again (by meaning too), and the first
tool is the best *visible* one. The term statistics (how many tools say a word, how long a field
is on average) stay those of the whole set, as FastMCP's and most engines' are: a visible tool's
score may move a little with what hidden tools say, and the answer is only visible tools in an
order, so what a caller may learn of the hidden ones is at most that hint; an index per visible set
would cost a build per caller (a second at 10,000 tools) for it."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, chain, repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from ..tools.model import Tool
from .query import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from .query import planned
from .query import searchable as searchable
from .semantic import Meaning
from .texts import forget_analysed as forget_analysed
from .texts import param_words, stems
from .vocabulary import STOPWORDS, UNDOING, action_of, identifier_words, words

if TYPE_CHECKING:  # numpy is imported when an index is first built, not when an app starts
    import numpy

    from .ranking import Ranking

#: Field weights (name, title, description, parameters, tags) and BM25's constants.
_WEIGHTS = (4.0, 5.0, 1.5, 0.6, 2.0)
_K1 = 1.2
_B = 0.75


class Hit(NamedTuple):
    """One tool a search found, and how well it matched (higher is better). (A named tuple: made
    several times per search, it costs half a frozen dataclass's time.)"""

    name: str
    score: float


#: A :class:`Hit` made by tuple's own constructor (a named tuple's ``__new__`` runs in Python).
_hit = tuple.__new__


@dataclass(frozen=True, eq=False)
class Mask:
    """Which of an index's tools a search may answer (a view of its set: :meth:`SearchIndex.mask`):
    one byte per tool, true when shown."""

    shown: numpy.ndarray[Any, numpy.dtype[numpy.bool_]]

    def __len__(self) -> int:
        """Its size in bytes (what keeping it costs, beside a small object's)."""
        return int(self.shown.nbytes)


class _Entry(NamedTuple):
    name: str
    tool: Tool
    action: str | None
    read_only: bool
    destructive: bool


class SearchIndex:
    """The search index of one tool set. Build it with :meth:`build`; :meth:`search` is safe from
    any thread (nothing is written after the build but what each query term finds, kept and
    bounded: :meth:`.ranking.Ranking.found_by`)."""

    def __init__(self, entries: list[_Entry], ranking: Ranking, meaning: Meaning | None, texts: list[str]) -> None:
        self._entries = entries
        #: What a search reads of the postings, and ranks by (:class:`.ranking.Ranking`).
        self._ranking = ranking
        #: Each tool's name, and its position by name (a view's mask is made of them).
        self._names = [entry.name for entry in entries]
        self._docs = {name: doc for doc, name in enumerate(self._names)}
        #: Ranking by meaning (:mod:`.semantic`), and what each tool is for in a line (its title
        #: and name) for it; ``None`` without.
        self._meaning = meaning
        self._texts = texts

    @classmethod
    def build(cls, tools: Iterable[Tool], meaning: Meaning | None = None) -> SearchIndex:
        """The index of ``tools``; with ``meaning``, its searches also rank by meaning."""
        import numpy

        from .coverage import Coverage
        from .ranking import Postings, Ranking, kind

        entries: list[_Entry] = []
        texts: list[str] = []
        fields: list[tuple[list[str], ...]] = []
        words_of: dict[str, list[int]] = {}  # the tools whose words (name, title, 40 of the description) say a stem
        about_of: dict[str, list[int]] = {}  # the tools whose title is about a stem
        sizes: list[int] = []  # how many stems each tool's title is about
        for tool in tools:
            name_words = identifier_words(tool.name)
            annotations = tool.annotations or {}
            title = tool.title or annotations.get("title") or ""
            title_words = words(title)
            undone = [UNDOING[w] for w in title_words if w in UNDOING]  # "Unstar" is about a star too
            description = words(tool.description or "")[:80]
            name_stems, title_stems, description_stems = (
                stems(name_words), stems(title_words + undone), stems(description))
            doc_fields = (name_stems, title_stems, description_stems, param_words(tool.input_schema)[:120],
                          stems(words(" ".join([*tool.tags, tool.category or "", tool.toolkit or ""]))))
            fields.append(doc_fields)
            if meaning is not None:  # what it is for, in a line: "Create a pull request. pulls create"
                texts.append(". ".join(part for part in (title, " ".join(tool.name.replace("_", " ").split())) if part))
            entries.append(_Entry(
                name=tool.name,
                tool=tool,
                action=action_of(title_words[:1] or name_words[1:2] or name_words[:1]) or action_of(name_words),
                read_only=bool(annotations.get("readOnlyHint")),
                destructive=bool(annotations.get("destructiveHint")),
            ))
            doc = len(entries) - 1
            for stem in set(name_stems + title_stems + description_stems[:40]):
                said_by = words_of.get(stem)
                if said_by is None:
                    words_of[stem] = [doc]
                else:
                    said_by.append(doc)
            about = set(stems([w for w in title_words or name_words if w not in STOPWORDS] + undone))
            sizes.append(len(about))
            for stem in about:
                said_by = about_of.get(stem)
                if said_by is None:
                    about_of[stem] = [doc]
                else:
                    said_by.append(doc)
        count = len(entries) or 1
        average = [max(sum(len(f[i]) for f in fields) / count, 1.0) for i in range(len(_WEIGHTS))]
        docs_of: dict[str, list[int]] = {}
        values_of: dict[str, list[float]] = {}
        for doc, its_fields in enumerate(fields):
            tf: dict[str, float] = {}
            for i, field in enumerate(its_fields):
                if not field:
                    continue
                norm = _WEIGHTS[i] / (1 - _B + _B * len(field) / average[i])
                if tf:
                    get = tf.get
                    for term, n in Counter(field).items():
                        tf[term] = get(term, 0.0) + n * norm
                else:
                    tf = {term: n * norm for term, n in Counter(field).items()}
            for term, value in tf.items():
                found = docs_of.get(term)
                if found is None:
                    docs_of[term] = [doc]
                    values_of[term] = [value]
                else:
                    found.append(doc)
                    values_of[term].append(value)
        # Every posting in one pair of arrays, term after term (each term's tools in order): the
        # tools' positions and what the term adds to each one's score (BM25F's saturated term
        # frequency times the term's idf, kept as float32 and summed as float64 at query time).
        saturate = _K1 + 1
        terms = {term: number for number, term in enumerate(docs_of)}
        starts = [0, *accumulate(len(docs) for docs in docs_of.values())]
        idf = numpy.repeat(numpy.array([math.log(1 + (count - len(docs) + 0.5) / (len(docs) + 0.5)) * saturate
                                        for docs in docs_of.values()]),
                           numpy.diff(numpy.array(starts)))
        values = numpy.fromiter(chain.from_iterable(values_of.values()), numpy.float64, starts[-1])
        docs: numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]] = numpy.fromiter(
            chain.from_iterable(docs_of.values()),  # (a search reads half the bytes)
            numpy.uint16 if count <= 1 << 16 else numpy.int32, starts[-1])
        impacts = (idf * values / (values + _K1)).astype(numpy.float32)
        if meaning is not None:
            meaning.prepare(texts)  # in the background: until then, searches answer in the lexical order
        ranking = Ranking(Postings(terms, starts, docs, impacts),
                          Coverage.of(terms, starts, docs, words_of, about_of, sizes),
                          [kind(entry.action, entry.read_only, entry.destructive) for entry in entries])
        return cls(entries, ranking, meaning, texts)

    def __len__(self) -> int:
        return len(self._entries)

    def mask(self, shown: Iterable[Tool]) -> Mask | None:
        """The mask that shows only ``shown`` (one version per name, as :meth:`build` takes them):
        ``None`` when one of them is not the version this index holds (a view whose caller may
        not see a tool's latest version, only an older one, needs an index of its own)."""
        import numpy

        found = numpy.zeros(len(self._entries), numpy.bool_)
        docs, entries = self._docs, self._entries
        for tool in shown:
            doc = docs.get(tool.name)
            if doc is None or (entries[doc].tool is not tool and entries[doc].tool.fingerprint != tool.fingerprint):
                return None
            found[doc] = True
        return Mask(found)

    def search(self, query: str, limit: int = 5, mask: Mask | None = None) -> list[Hit]:
        """The ``limit`` tools that best match ``query``, best first (fewer when fewer match; none
        when the query has no word to search for: :func:`searchable` tells); with ``mask``, only
        the tools it shows are ranked and answered."""
        if limit < 1:
            return []
        plan = planned(query)
        meaning = self._meaning
        scores, docs = self._ranking.ranked(plan, None if mask is None else mask.shown,
                                            limit if meaning is None or limit == 1 else None)
        names = self._names
        if meaning is None or limit == 1:
            return list(map(_hit, repeat(Hit), zip(map(names.__getitem__, docs), scores, strict=True)))
        ranked = list(zip(scores, docs, strict=True))
        if len(ranked) > 2:
            by_meaning = meaning.rank(plan.meant, [self._texts[doc] for _, doc in ranked],
                                      [score for score, _ in ranked])
            if by_meaning is not None:
                ranked = [ranked[i] for i in by_meaning[:limit]]
        return [Hit(names[doc], score) for score, doc in ranked[:limit]]
