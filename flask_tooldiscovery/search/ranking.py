"""How a search ranks one index's tools (:class:`Ranking`), from the postings the index keeps: the
query's terms' postings summed per tool by one ``numpy.bincount``, the best found with
``numpy.partition``, and only those candidates ranked again, all at once (:mod:`.coverage`).

What a query term finds (its postings, then its relatives' at :data:`RELATIVE`) is packed once per
term and kept, bounded (at most a quarter as many postings as the index's, 12 bytes each: 120 B per
tool at 10,000 tools; 68 B after the benchmark's 513 queries): one array per term to concatenate,
the relatives' contributions already multiplied (in float64, the same products a search made of
them), about 4% of a search's time at 10,000 tools. This module is imported when an index is
first built (:meth:`.index.SearchIndex.build`), so numpy is too, and not when an app starts."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Any, NamedTuple

import numpy

from .coverage import Coverage
from .query import Plan
from .vocabulary import ACTIONS, DESTROYING, READING

#: How many of BM25's best are ranked again.
CANDIDATES = 100
#: How much a query word's relatives count (``contribut`` and ``contributor``: one is the
#: other's prefix), beside the word itself.
RELATIVE = 0.8
#: Kinds of action a query may say for one another ("show" a list or one thing; "cancel" an
#: invitation is to delete it).
_NEIGHBOURS = ({"get", "list"}, {"cancel", "delete"})
#: How many tools scoring at least a lower bound of the threshold are ranked again as they are
#: (:meth:`Ranking.candidates`), not cut to the best by one more pass over every tool's score.
_FEW = 150
#: The most query terms a ranking keeps what they find of (:meth:`Ranking.found_by`); and the
#: most postings it keeps packed for them (copies, 12 bytes each), as a part of the index's own
#: postings (8 bytes each): a quarter of them.
_FOUND_KEPT = 4096
_PACKED_PART = 4
#: Each kind of action's number (:func:`kind`).
_ACTION_NUMBERS = {action: number for number, action in enumerate(ACTIONS)}


def kind(action: str | None, read_only: bool, destructive: bool) -> int:
    """A tool's kind, what the re-ranking reads of its action and hints (:func:`_hint_factors`):
    its action's number in :data:`_ACTION_NUMBERS` (the last: none) times 4, plus 2 when
    read-only, plus 1 when destructive."""
    return (len(ACTIONS) if action is None else _ACTION_NUMBERS[action]) * 4 + read_only * 2 + destructive


@lru_cache(maxsize=64)
def _hint_factors(wanted: str) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    """What a candidate's score is multiplied by when ``wanted`` is asked, one row per factor
    applied in turn, by the tool's :func:`kind`: for its action, x1.6 the same, x1 a neighbour's
    (:data:`_NEIGHBOURS`) or none, x0.8 another; x0.85 a read-only tool for a query that changes
    something; x0.85 a destroying one for a query that does not destroy, else x0.999 one that does
    not say so."""
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


@dataclass(frozen=True, eq=False)
class Postings:
    """Every term's postings in two arrays, term after term: the tools that say it (their
    positions, ascending: 16-bit numbers up to 65,536 tools, 32-bit above) and what it adds to
    each one's score; ``terms[term]`` is its number, its postings are ``starts[number]`` to
    ``starts[number + 1]``."""

    terms: dict[str, int]
    starts: list[int]
    docs: numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]]
    impacts: numpy.ndarray[Any, numpy.dtype[numpy.float32]]


class Found(NamedTuple):
    """What a query term finds, packed once: its postings then its relatives' (each span's tools
    ascending), what each adds to its tool's score (a relative's times :data:`RELATIVE`, in
    float64), their coverage bytes and title bytes (:class:`.coverage.Coverage`); each span's stem
    and where it ends; how many postings there are and how many are its own (the first span); its
    relatives; and where its shortest span of more than :data:`CANDIDATES` postings is, if any
    (:meth:`Ranking.candidates`). A term without relatives keeps views of the index's arrays."""

    docs: numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]]
    values: numpy.ndarray[Any, numpy.dtype[numpy.floating[Any]]]
    flags: numpy.ndarray[Any, numpy.dtype[numpy.uint8]]
    titles: numpy.ndarray[Any, numpy.dtype[numpy.uint8]]
    stems: tuple[str, ...]
    ends: tuple[int, ...]
    size: int
    own: int
    relatives: tuple[str, ...]
    span: tuple[int, int] | None


class Ranking:
    """What a search of one index reads: its :class:`Postings`, their :class:`.coverage.Coverage`,
    each tool's :func:`kind`; and what each query term searched so far finds (:meth:`found_by`,
    bounded: the only thing written after the build, under a lock, safe from any thread)."""

    def __init__(self, postings: Postings, coverage: Coverage, kinds: list[int]) -> None:
        self._postings = postings
        self._coverage = coverage
        self._kinds = numpy.array(kinds, numpy.intp)
        self._tools = len(kinds)
        #: The terms of five letters or more, by their first five (a query word's relatives).
        self._prefixes: dict[str, list[str]] = {}
        for term in postings.terms:
            if len(term) >= 5:
                self._prefixes.setdefault(term[:5], []).append(term)
        self._found: dict[str, Found] = {}
        #: How many postings the terms kept hold packed (copies), and how many they may (the
        #: terms kept are cleared when more would be).
        self._packed = 0
        self._most_packed = len(postings.docs) // _PACKED_PART
        #: Held while what is kept and its count change (reads take neither).
        self._keeping = threading.Lock()

    def found_by(self, term: str) -> Found:
        """What ``term`` finds (:class:`Found`), worked out once per term and kept."""
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
        ends = tuple(accumulate(end - start for start, end in spans))
        shortest = min(((end - start, at) for at, (start, end) in zip(ends, spans, strict=True)
                        if end - start > CANDIDATES), default=None)  # (its length, where it ends)
        span = None if shortest is None else (shortest[1] - shortest[0], shortest[1])
        flags, titles = self._coverage.flags, self._coverage.titles
        relatives = tuple(stems[1:] if own else stems)
        packed = 0  # how many postings it holds packed (copies)
        if len(spans) == (1 if own else 0):  # its own postings or none: views of the index's
            start, end = spans[0] if spans else (0, 0)
            found = Found(postings.docs[start:end], postings.impacts[start:end], flags[start:end],
                          titles[start:end], tuple(stems), ends, end - start, own, relatives, span)
        else:
            values = numpy.concatenate([postings.impacts[start:end] for start, end in spans], dtype=numpy.float64)
            values[own:] *= RELATIVE
            found = Found(numpy.concatenate([postings.docs[start:end] for start, end in spans]), values,
                          numpy.concatenate([flags[start:end] for start, end in spans]),
                          numpy.concatenate([titles[start:end] for start, end in spans]),
                          tuple(stems), ends, ends[-1], own, relatives, span)
            packed = len(values)
        with self._keeping:  # (two threads may have worked out the same term: the first kept stays)
            kept = self._found.get(term)
            if kept is not None:
                return kept
            if len(self._found) >= _FOUND_KEPT or self._packed + packed > self._most_packed:
                self._found.clear()
                self._packed = 0
            self._packed += packed
            self._found[term] = found
        return found

    @staticmethod
    def candidates(scores: numpy.ndarray[Any, numpy.dtype[numpy.float64]],
                   docs: numpy.ndarray[Any, numpy.dtype[numpy.intp]], span: tuple[int, int] | None) \
            -> tuple[numpy.ndarray[Any, numpy.dtype[numpy.intp]], numpy.ndarray[Any, numpy.dtype[numpy.float64]],
                     numpy.ndarray[Any, numpy.dtype[numpy.intp]], numpy.ndarray[Any, numpy.dtype[numpy.intp]]]:
        """The tools among which the :data:`CANDIDATES` best ``scores`` are (a tool no term
        matched, or the mask hid, has 0), in the order of the tools, and their scores: those best
        (more when equal scores tie at the last), or every tool scoring at least a lower bound of
        the threshold when there are at most :data:`_FEW` of them (the ranking cuts them to the best
        as it sorts); and where they are among the postings summed (``docs``, ascending) and which
        of them each of those postings is. ``span``: where the shortest span of the postings longer
        than :data:`CANDIDATES` is, if one is."""
        least = 0.0  # the candidates score more than 0, and at least that much when it is more
        if span is not None:
            # A span's tools are each there once, and have a score: the score of the
            # CANDIDATES-th best of them is at most the threshold, so the candidates are among
            # the tools scoring that much (when it is positive: the mask hid none). The shortest
            # such span is the cheapest to look at, and its term the rarest: its tools score well.
            start, end = span
            bound = scores.take(docs[start:end])
            at = end - start - CANDIDATES
            bound.partition(at)
            least = bound[at]
        chosen = scores >= least if least > 0 else scores > 0
        found = chosen.nonzero()[0]
        values = scores[found]
        if len(found) > _FEW:
            at = len(values) - CANDIDATES
            threshold = numpy.partition(values, at)[at]
            if threshold > least:
                chosen = scores >= threshold
                found = chosen.nonzero()[0]
                values = scores[found]
        said = chosen[docs].nonzero()[0]
        rank = numpy.empty(len(scores), numpy.intp)  # each candidate's place (only theirs are read)
        rank[found] = numpy.arange(len(found))
        return found, values, said, rank.take(docs.take(said))

    def ranked(self, plan: Plan, shown: numpy.ndarray[Any, numpy.dtype[numpy.bool_]] | None,
               limit: int | None) -> tuple[list[float], list[int]]:
        """The scores and tools of the best candidates for ``plan``, best first, the first
        ``limit`` of them (all with ``None``); with ``shown``, only the tools it shows."""
        # The postings of each term, then of its relatives (at RELATIVE), summed per tool by one
        # numpy.bincount, in that order and in float64: a tool's score is the sum the terms make,
        # added term after term as a plain loop would (ties and near-ties are kept as they were).
        known, found_by = self._found, self.found_by
        asked = set(plan.terms)  # the stems asked for, and the action asked: "pause" covers "Disable"
        changing = plan.changing
        if changing is not None:
            asked.add(changing)
        founds: list[Found] = []
        stems: list[str] = []  # each span's stem
        at = 0
        span: tuple[int, int] | None = None  # the shortest span of more than CANDIDATES postings
        for term in plan.terms:
            its = known.get(term) or found_by(term)
            if its.size:
                founds.append(its)
                stems += its.stems
                if its.relatives:
                    asked.update(its.relatives)
                if its.span is not None and (span is None or its.span[1] - its.span[0] < span[1] - span[0]):
                    span = (at + its.span[0], at + its.span[1])
                at += its.size
        if not at:
            return [], []
        ideas = plan.stems & asked
        # What each span's coverage bytes count (:mod:`.coverage`): in the first span of a stem,
        # what the title is about, and the words too when the stem is one of the query's ideas
        # (its bytes, else its title bytes); in a stem's span again, nothing. The action asked,
        # when no span is its stem's, has its own postings after the others' (counted, not summed).
        counted = set(stems)
        flags_of: list[numpy.ndarray[Any, numpy.dtype[numpy.uint8]]] = []
        if len(counted) == len(stems):
            for its in founds:
                if len(its.stems) == 1:
                    flags_of.append(its.flags if its.stems[0] in ideas else its.titles)
                else:
                    start = 0
                    for stem, end in zip(its.stems, its.ends, strict=True):
                        flags_of.append((its.flags if stem in ideas else its.titles)[start:end])
                        start = end
        else:
            counted = set()
            for its in founds:
                start = 0
                for stem, end in zip(its.stems, its.ends, strict=True):
                    flags_of.append(numpy.zeros(end - start, numpy.uint8) if stem in counted
                                    else (its.flags if stem in ideas else its.titles)[start:end])
                    counted.add(stem)
                    start = end
        docs_of = [its.docs for its in founds]
        if changing is not None and changing not in counted:
            action = known.get(changing) or found_by(changing)
            if action.own:
                docs_of.append(action.docs[:action.own])
                flags_of.append((action.flags if changing in ideas else action.titles)[:action.own])
        docs = numpy.concatenate(docs_of, dtype=numpy.intp)  # (numpy indexes by int32 far slower)
        scores: numpy.ndarray[Any, numpy.dtype[numpy.float64]] = numpy.bincount(  # type: ignore[assignment]
            docs[:at], numpy.concatenate([its.values for its in founds], dtype=numpy.float64), self._tools)
        if shown is not None:  # the hidden tools go before anything is ranked
            scores *= shown
        found, lexical, said, which = self.candidates(scores, docs, span)
        # Where each candidate is first among the postings: within a span the tools are in order,
        # so between equal scores (nearly every query has some) the tool the first span found
        # goes first, then the first tool (as a plain loop adding the scores up meets them).
        first = numpy.full(len(found), len(docs), numpy.intp)
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
        # tool found first). More candidates than CANDIDATES (equal scores tie at the last, or
        # a few more were found) are cut to the best in that order first, and those, already in
        # it, are sorted stably.
        if len(found) > CANDIDATES:
            best = numpy.lexsort((first, -lexical))[:CANDIDATES]
            order = best[(-final[best]).argsort(kind="stable")]
        else:
            order = numpy.lexsort((first, -lexical, -final))
        if limit is not None:
            order = order[:limit]
        return final[order].tolist(), found[order].tolist()
