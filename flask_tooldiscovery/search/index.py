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
only the candidates are ranked again in Python. SQLite's FTS5 (tried first: it is in the standard
library) computes BM25 for every matching row at query time, 20-120 ms at 10,000 tools here; the
same sums in a Python loop took 1.1 ms there, about three quarters of a ``search_tools`` call.
An index is built once per tool set (by the set's content fingerprint) and is read-only after
that; searches from several threads share it.

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
from functools import lru_cache
from itertools import accumulate, chain
from typing import TYPE_CHECKING, Any, NamedTuple

from ..tools.model import Tool
from .coverage import Coverage
from .query import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from .query import planned
from .query import searchable as searchable
from .semantic import Meaning
from .texts import forget_analysed as forget_analysed
from .texts import param_words, stems
from .vocabulary import (
    ACTIONS,
    DESTROYING,
    READING,
    STOPWORDS,
    UNDOING,
    action_of,
    identifier_words,
    words,
)

if TYPE_CHECKING:  # numpy is imported when an index is first built, not when an app starts
    import numpy

#: Field weights (name, title, description, parameters, tags) and BM25's constants.
_WEIGHTS = (4.0, 5.0, 1.5, 0.6, 2.0)
_K1 = 1.2
_B = 0.75
#: How many of BM25's best are ranked again.
_CANDIDATES = 100
#: How much a query word's relatives count (``contribut`` and ``contributor``: one is the
#: other's prefix), beside the word itself.
_RELATIVE = 0.8
#: Kinds of action a query may say for one another ("show" a list or one thing; "cancel" an
#: invitation is to delete it).
_NEIGHBOURS = ({"get", "list"}, {"cancel", "delete"})


@dataclass(frozen=True)
class Hit:
    """One tool a search found, and how well it matched (higher is better)."""

    name: str
    score: float


@dataclass(frozen=True, eq=False)
class Mask:
    """Which of an index's tools a search may answer (a view of its set: :meth:`SearchIndex.mask`):
    one byte per tool, true when shown."""

    shown: numpy.ndarray[Any, numpy.dtype[numpy.bool_]]

    def __len__(self) -> int:
        """Its size in bytes (what keeping it costs, beside a small object's)."""
        return int(self.shown.nbytes)


@dataclass(frozen=True, eq=False)
class _Postings:
    """Every term's postings in two arrays, term after term: the tools that say it (their
    positions, ascending: 16-bit numbers up to 65,536 tools, 32-bit above) and what it adds to
    each one's score; ``terms[term]`` is its number, its postings are ``starts[number]`` to
    ``starts[number + 1]``."""

    terms: dict[str, int]
    starts: list[int]
    docs: numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]]
    impacts: numpy.ndarray[Any, numpy.dtype[numpy.float32]]


class _Found(NamedTuple):
    """What a query term finds in an index: its postings then its relatives' (:data:`_RELATIVE`),
    as views of the index's arrays (the tools, what each adds to their scores, their coverage
    bytes and their title bytes: :class:`.coverage.Coverage`), the stem of each span of them; how many
    postings are its own (the first) and how many in all, and its relatives."""

    docs: tuple[numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]], ...]
    impacts: tuple[numpy.ndarray[Any, numpy.dtype[numpy.float32]], ...]
    flags: tuple[numpy.ndarray[Any, numpy.dtype[numpy.uint8]], ...]
    titles: tuple[numpy.ndarray[Any, numpy.dtype[numpy.uint8]], ...]
    stems: tuple[str, ...]
    own: int
    size: int
    relatives: tuple[str, ...]


#: The most query terms an index keeps what they find of (:meth:`SearchIndex._found_by`).
_FOUND_KEPT = 4096


class _Entry(NamedTuple):
    name: str
    tool: Tool
    action: str | None
    read_only: bool
    destructive: bool


#: Each kind of action's number (:attr:`SearchIndex._kinds`).
_ACTION_NUMBERS = {action: number for number, action in enumerate(ACTIONS)}


@lru_cache(maxsize=64)
def _hint_factors(wanted: str) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    """What a candidate's score is multiplied by when ``wanted`` is asked, one row per factor
    applied in turn, by the tool's kind (:attr:`SearchIndex._kinds`: its action's number in
    :data:`_ACTION_NUMBERS`, the last a tool saying none, times 4, plus 2 when read-only, plus 1
    when destructive): for its action, x1.6 the same, x1 a neighbour's (:data:`_NEIGHBOURS`) or
    none, x0.8 another; x0.85 a read-only tool for a query that changes something; x0.85 a
    destroying one for a query that does not destroy, else x0.999 one that does not say so."""
    import numpy

    destroying, keeping = (0.85, 1.0) if wanted not in DESTROYING else (1.0, 0.999)
    rows: list[list[float]] = [[], [], []]
    for action in (*ACTIONS, None):
        by_action = (1.0 if action is None else 1.6 if action == wanted
                     else 1.0 if {action, wanted} in _NEIGHBOURS else 0.8)
        for read_only, destructive in ((False, False), (False, True), (True, False), (True, True)):
            rows[0].append(by_action)
            rows[1].append(0.85 if read_only and wanted not in READING else 1.0)
            rows[2].append(destroying if destructive else keeping)
    return numpy.array(rows)


class SearchIndex:
    """The search index of one tool set. Build it with :meth:`build`; :meth:`search` is safe from
    any thread (nothing is written after the build)."""

    def __init__(self, entries: list[_Entry], postings: _Postings,
                 meaning: Meaning | None, texts: list[str], coverage: Coverage) -> None:
        self._entries = entries
        self._postings = postings
        #: What the re-ranking reads of each tool's words and title (:class:`.coverage.Coverage`).
        self._coverage = coverage
        #: Each tool's name, and its position by name (a view's mask is made of them).
        self._names = [entry.name for entry in entries]
        self._docs = {name: doc for doc, name in enumerate(self._names)}
        #: Ranking by meaning (:mod:`.semantic`), and what each tool is for in a line (its title
        #: and name) for it; ``None`` without.
        self._meaning = meaning
        self._texts = texts
        #: The terms of five letters or more, by their first five (a query word's relatives).
        self._prefixes: dict[str, list[str]] = {}
        for term in postings.terms:
            if len(term) >= 5:
                self._prefixes.setdefault(term[:5], []).append(term)
        import numpy

        #: Each tool's kind: its action (its number in :data:`_ACTION_NUMBERS`, the last: none) and
        #: hints, what the re-ranking reads of all the candidates at once (:func:`_hint_factors`).
        self._kinds = numpy.array([(len(ACTIONS) if entry.action is None else _ACTION_NUMBERS[entry.action]) * 4
                                   + entry.read_only * 2 + entry.destructive for entry in entries], numpy.intp)
        #: What each query term searched so far finds (:meth:`_found_by`), bounded: cleared when full.
        self._found: dict[str, _Found] = {}

    @classmethod
    def build(cls, tools: Iterable[Tool], meaning: Meaning | None = None) -> SearchIndex:
        """The index of ``tools``; with ``meaning``, its searches also rank by meaning."""
        import numpy

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
        return cls(entries, _Postings(terms, starts, docs, impacts), meaning, texts,
                   Coverage.of(terms, starts, docs, words_of, about_of, sizes))

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

    @staticmethod
    def _candidates(scores: numpy.ndarray[Any, numpy.dtype[numpy.float64]],
                    docs: numpy.ndarray[Any, numpy.dtype[numpy.intp]], first: int) \
            -> tuple[numpy.ndarray[Any, numpy.dtype[numpy.intp]], numpy.ndarray[Any, numpy.dtype[numpy.float64]],
                     numpy.ndarray[Any, numpy.dtype[numpy.intp]], numpy.ndarray[Any, numpy.dtype[numpy.intp]]]:
        """The tools of the :data:`_CANDIDATES` best ``scores`` (more when equal scores tie at
        the last; a tool no term matched, or the mask hid, has 0), in the order of the tools, and
        their scores; and where they are among the postings summed (``docs``, ascending) and
        which of them each of those postings is; the first span of the postings is ``first`` long."""
        import numpy

        if first > _CANDIDATES:
            # The best of the first span's tools (each once) are among the tools with a score:
            # the score of the _CANDIDATES-th of them is at most the threshold, so the candidates
            # are among the tools scoring that much (when it is positive: the mask hid none).
            bound = scores.take(docs[:first])
            bound.partition(first - _CANDIDATES)
            least = bound[first - _CANDIDATES]
            if least > 0:
                chosen = scores >= least
                found = chosen.nonzero()[0]
                values = scores[found]
                if len(found) > _CANDIDATES:
                    at = len(values) - _CANDIDATES
                    threshold = numpy.partition(values, at)[at]
                    if threshold > least:
                        chosen = scores >= threshold
                        found = chosen.nonzero()[0]
                        values = scores[found]
                said = chosen[docs].nonzero()[0]
                return found, values, said, found.searchsorted(docs[said])
        chosen = scores > 0
        found = chosen.nonzero()[0]
        values = scores[found]
        if len(found) > _CANDIDATES:
            at = len(values) - _CANDIDATES
            values.partition(at)  # (in place: they are read again below)
            chosen = scores >= values[at]
            found = chosen.nonzero()[0]
            values = scores[found]
        said = chosen[docs].nonzero()[0]
        return found, values, said, found.searchsorted(docs[said])

    def _found_by(self, term: str) -> _Found:
        """What ``term`` finds (:class:`_Found`), worked out once per term and kept."""
        postings, numbers, starts = self._postings, self._postings.terms, self._postings.starts
        spans: list[tuple[int, int]] = []
        stems: list[str] = []
        number = numbers.get(term)
        if number is not None:
            spans.append((starts[number], starts[number + 1]))
            stems.append(term)
        own = sum(end - start for start, end in spans)
        if len(term) >= 5:  # its relatives: a light stemmer leaves "contribut" and "contributor" apart
            for other in self._prefixes.get(term[:5], ()):
                if other != term and (other.startswith(term) or term.startswith(other)):
                    stems.append(other)
                    number = numbers[other]
                    spans.append((starts[number], starts[number + 1]))
        flags, titles = self._coverage.flags, self._coverage.titles
        found = _Found(tuple(postings.docs[start:end] for start, end in spans),
                       tuple(postings.impacts[start:end] for start, end in spans),
                       tuple(flags[start:end] for start, end in spans),
                       tuple(titles[start:end] for start, end in spans), tuple(stems),
                       own, sum(end - start for start, end in spans),
                       tuple(stems[1:] if own else stems))
        if len(self._found) >= _FOUND_KEPT:
            self._found.clear()
        self._found[term] = found
        return found

    def search(self, query: str, limit: int = 5, mask: Mask | None = None) -> list[Hit]:
        """The ``limit`` tools that best match ``query``, best first (fewer when fewer match; none
        when the query has no word to search for: :func:`searchable` tells); with ``mask``, only
        the tools it shows are ranked and answered."""
        if limit < 1:
            return []
        import numpy

        plan = planned(query)
        # The postings of each term, then of its relatives (at _RELATIVE), summed per tool by one
        # numpy.bincount, in that order and in float64: a tool's score is the sum the terms make,
        # added term after term as a plain loop would (ties and near-ties are kept as they were).
        docs_of: list[numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]]] = []
        impacts_of: list[numpy.ndarray[Any, numpy.dtype[numpy.float32]]] = []
        flags_of: list[numpy.ndarray[Any, numpy.dtype[numpy.uint8]]] = []
        titles_of: list[numpy.ndarray[Any, numpy.dtype[numpy.uint8]]] = []
        stems: list[str] = []  # each span's stem
        asked = set(plan.terms)  # the stems asked for, and the action asked: "pause" covers "Disable"
        if plan.changing is not None:
            asked.add(plan.changing)
        related: list[tuple[int, int]] = []  # where each term's relatives' postings are in the sum
        at = 0
        known, found_by = self._found, self._found_by
        for term in plan.terms:
            its = known.get(term) or found_by(term)
            docs_of += its.docs
            impacts_of += its.impacts
            flags_of += its.flags
            titles_of += its.titles
            stems += its.stems
            if its.relatives:
                asked.update(its.relatives)
                related.append((at + its.own, at + its.size))
            at += its.size
        if not at:
            return []
        ideas = plan.stems & asked
        # What each span's coverage bytes count (:mod:`.coverage`): in the first span of a stem,
        # what the title is about, and the words too when the stem is one of the query's ideas
        # (its bytes, else its title bytes); in a stem's span again, nothing. The action asked,
        # when no span is its stem's, has its own postings after the others' (counted, not summed).
        counted = set(stems)
        if len(counted) == len(stems):
            flags_of = [flags if stem in ideas else titles
                        for stem, flags, titles in zip(stems, flags_of, titles_of, strict=True)]
        else:
            bytes_of, counted = [], set()
            for stem, flags, titles in zip(stems, flags_of, titles_of, strict=True):
                bytes_of.append(numpy.zeros(len(flags), numpy.uint8) if stem in counted
                                else flags if stem in ideas else titles)
                counted.add(stem)
            flags_of = bytes_of
        changing = plan.changing
        if changing is not None and changing not in counted:
            action = known.get(changing) or found_by(changing)
            if action.own:
                docs_of.append(action.docs[0])
                flags_of.append(action.flags[0] if changing in ideas else action.titles[0])
        docs = numpy.concatenate(docs_of, dtype=numpy.intp)  # (numpy indexes by int32 far slower)
        values = numpy.concatenate(impacts_of, dtype=numpy.float64)
        for start, end in related:
            values[start:end] *= _RELATIVE
        scores: numpy.ndarray[Any, numpy.dtype[numpy.float64]] = numpy.bincount(  # type: ignore[assignment]
            docs[:at], values, len(self._entries))
        if mask is not None:  # the hidden tools go before anything is ranked
            scores *= mask.shown
        found, lexical, said, which = self._candidates(scores, docs, len(docs_of[0]))
        # Where each candidate is first among the postings: within a span the tools are in order,
        # so between equal scores (nearly every query has some) the tool the first span found
        # goes first, then the first tool (as a plain loop adding the scores up meets them).
        first = numpy.empty(len(found), numpy.intp)
        first.fill(len(docs))
        numpy.minimum.at(first, which, said)
        counts = Coverage.counts(numpy.concatenate(flags_of)[said], which, len(found))
        # Each candidate's score is multiplied by what the words cannot see, in this order: the
        # action asked (x1.6 the same, x0.8 another but a neighbour's, a tool saying none x1), the
        # hints (a read-only tool for a query that changes something x0.85; a destroying one for
        # one that does not x0.85, else a tool without the hint for a "delete" x0.999: between
        # tools the words rank alike, the one whose hint says it destroys is what a "delete" asks
        # for, a nudge as many deleting tools have no such hint), how many of the query's ideas
        # its words cover (x0.6 to x1.4) and how much of what its title is about the query covers
        # (x0.4 to x1.6: "Create an issue" beats "Create an issue type for an organization").
        # Each factor is applied to every candidate at once (x1 where one does not apply: the
        # same products).
        by_ideas, by_title = self._coverage.factors_of(found, counts, len(ideas))
        if plan.wanted is not None:
            by_action, by_read_only, by_destructive = _hint_factors(plan.wanted).take(self._kinds[found], 1)
            hinted = lexical * by_action * by_read_only * by_destructive
        else:
            hinted = lexical
        final = (hinted if by_ideas is None else hinted * by_ideas) * by_title
        # Best first; equal scores in the candidates' order (the better lexical score, then the
        # tool found first). More candidates than _CANDIDATES (equal scores tie at the last) are
        # cut to the best in that order first, and those, already in it, are sorted stably.
        if len(found) > _CANDIDATES:
            best = numpy.lexsort((first, -lexical))[:_CANDIDATES]
            order = best[(-final[best]).argsort(kind="stable")]
        else:
            order = numpy.lexsort((first, -lexical, -final))
        names, meaning = self._names, self._meaning
        if meaning is None or limit == 1:
            order = order[:limit]
            return [Hit(names[doc], score)
                    for score, doc in zip(final[order].tolist(), found[order].tolist(), strict=True)]
        ranked = list(zip(final[order].tolist(), found[order].tolist(), strict=True))
        if len(ranked) > 2:
            by_meaning = meaning.rank(plan.meant, [self._texts[doc] for _, doc in ranked],
                                      [score for score, _ in ranked])
            if by_meaning is not None:
                ranked = [ranked[i] for i in by_meaning[:limit]]
        return [Hit(names[doc], score) for score, doc in ranked[:limit]]
