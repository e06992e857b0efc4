"""What the re-ranking of a search reads of its candidates besides their scores: how many of the
query's ideas each one's words cover, and how much of what its title is about the query covers.

Both are kept beside the index's postings, worked out when the index is built: one byte per
posting (a term and a tool that says it) that says whether the term is among the tool's words
(its name, title and the first 40 words of its description: 1) and whether its title is about it
(2). Every such word is one of the tool's indexed terms, so the postings a search sums already
hold all it needs: it counts, for its candidates at once, the bytes of their postings (the first
of each stem the query asks for, masked by what it asks of that stem) with one
``numpy.bincount``, in place of a set intersection per candidate: the counts, and so every factor
and product made of them, are the same."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy  # (this module is imported when an index is first built, not when an app starts)

#: How much what a tool's title is about, covered by the query, counts: its score is multiplied
#: by ``1 - ABOUT`` (nothing covered) to ``1 + ABOUT`` (all of it).
ABOUT = 0.6
#: A posting's byte: its term is among its tool's words; its tool's title is about its term.
WORD, TITLE = 1, 2
#: What each byte counts for: one word, and one title's stem as many times as :data:`_PER_TITLE`.
_PER_TITLE = 256


@lru_cache(maxsize=64)
def idea_factors(count: int) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    """What a candidate's score is multiplied by when its words cover ``k`` of a query's ``count``
    ideas, by ``k``: x0.6 (none) to x1.4 (all)."""
    return numpy.array([0.6 + 0.8 * k / count for k in range(count + 1)])


@lru_cache(maxsize=16)
def about_factors(most: int) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    """What a candidate's score is multiplied by when the query covers ``m`` of the ``size``
    stems its title is about, at ``[size, m]`` (sizes up to ``most``): x0.4 (none) to x1.6 (all);
    x1 for a tool whose title is about nothing (size 0)."""
    at_least, per = 1 - ABOUT, 2 * ABOUT
    return numpy.array([[1.0] * (most + 1)] + [
        [at_least + per * m / size if m <= size else 1.0 for m in range(most + 1)] for size in range(1, most + 1)])


#: What a posting's byte (masked: :meth:`Coverage.counts`) adds to its tool's count.
_COUNTED = numpy.array([0.0, 1.0, _PER_TITLE, _PER_TITLE + 1.0])


@dataclass(frozen=True, eq=False)
class Coverage:
    """``flags``: each posting's byte (:data:`WORD`, :data:`TITLE`), in the order of the index's
    postings, and ``titles`` the same with :data:`TITLE` only (what a query term that is not one
    of its ideas counts: read from there, a search masks nothing); ``factors``
    :func:`about_factors` for the longest title, flattened, and ``rows`` where each tool's row
    of them is (by how many stems its title is about)."""

    flags: numpy.ndarray[Any, numpy.dtype[numpy.uint8]]
    titles: numpy.ndarray[Any, numpy.dtype[numpy.uint8]]
    factors: numpy.ndarray[Any, numpy.dtype[numpy.float64]]
    rows: numpy.ndarray[Any, numpy.dtype[numpy.intp]]

    @classmethod
    def of(cls, terms: dict[str, int], starts: list[int], docs: numpy.ndarray[Any, numpy.dtype[numpy.integer[Any]]],
           words_of: dict[str, list[int]], about_of: dict[str, list[int]], sizes: list[int]) -> Coverage:
        """The coverage of the postings ``docs`` of ``terms`` (a term's are ``starts[number]`` to
        ``starts[number + 1]``, its tools in order), of tools whose words say the stems
        ``words_of`` maps to them, whose titles are about the stems ``about_of`` maps to them,
        ``sizes[tool]`` stems each; every such stem is a term these tools' postings have."""
        tools, most = len(sizes), max(sizes, default=0)
        lengths = numpy.diff(numpy.array(starts))
        # Each posting as one number, term after term and each term's tools in order (ascending):
        # where a stem's tool is among the postings is found by one binary search.
        keys = numpy.repeat(numpy.arange(len(lengths), dtype=numpy.int64) * tools, lengths) + docs
        flags = numpy.zeros(len(docs), numpy.uint8)
        for flag, said_by in ((WORD, words_of), (TITLE, about_of)):
            counts = [len(found) for found in said_by.values()]
            said = (numpy.repeat(numpy.array([terms[stem] for stem in said_by], numpy.int64) * tools, counts)
                    + numpy.fromiter(chain.from_iterable(said_by.values()), numpy.int64, sum(counts)))
            flags[keys.searchsorted(said)] |= flag
        return cls(flags, (flags & TITLE).astype(numpy.uint8, copy=False),
                   about_factors(most).ravel(), numpy.array(sizes, numpy.intp) * (most + 1))

    @staticmethod
    def counts(flags: numpy.ndarray[Any, numpy.dtype[numpy.uint8]], which: numpy.ndarray[Any, numpy.dtype[numpy.intp]],
               tools: int) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
        """For ``tools`` candidates, what the postings' bytes ``flags`` count (each as the query
        asks of the posting's term: from :attr:`flags` or :attr:`titles`, or nothing when the term
        was counted already), each posting's candidate at ``which``: :meth:`factors_of` reads them."""
        return numpy.bincount(which, _COUNTED[flags], tools)  # type: ignore[return-value]

    def factors_of(self, found: numpy.ndarray[Any, numpy.dtype[numpy.intp]],
                   counts: numpy.ndarray[Any, numpy.dtype[numpy.float64]], ideas: int) \
            -> tuple[numpy.ndarray[Any, numpy.dtype[numpy.float64]] | None,
                     numpy.ndarray[Any, numpy.dtype[numpy.float64]]]:
        """For the tools at ``found`` and their :meth:`counts`: what each one's score is multiplied
        by for the ``ideas`` of the query its words cover (``None`` without ideas), and for what of
        its title the query covers."""
        titled, covered = numpy.divmod(counts.astype(numpy.intp), _PER_TITLE)
        return (idea_factors(ideas)[covered] if ideas else None), self.factors.take(self.rows[found] + titled)
