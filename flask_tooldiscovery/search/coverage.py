"""What the re-ranking of a search reads of its candidates besides their scores: how many of the
query's ideas each one's words cover, and how much of what its title is about the query covers.

Both are kept as postings, worked out when the index is built: for each stem, the tools whose
words (name, title, the first 40 words of the description) say it, and the tools whose title is
about it. A search counts, for its candidates at once, the ideas and the asked stems each says by
one ``numpy.bincount`` over the postings of those stems, in place of a set intersection per
candidate: the counts, and so every factor and product made of them, are the same."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, chain, pairwise
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported when an index is first built, not when an app starts
    import numpy

#: How much what a tool's title is about, covered by the query, counts: its score is multiplied
#: by ``1 - ABOUT`` (nothing covered) to ``1 + ABOUT`` (all of it).
ABOUT = 0.6


@lru_cache(maxsize=64)
def idea_factors(count: int) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    """What a candidate's score is multiplied by when its words cover ``k`` of a query's ``count``
    ideas, by ``k``: x0.6 (none) to x1.4 (all)."""
    import numpy

    return numpy.array([0.6 + 0.8 * k / count for k in range(count + 1)])


@lru_cache(maxsize=16)
def about_factors(most: int) -> numpy.ndarray[Any, numpy.dtype[numpy.float64]]:
    """What a candidate's score is multiplied by when the query covers ``m`` of the ``size``
    stems its title is about, at ``[size, m]`` (sizes up to ``most``): x0.4 (none) to x1.6 (all);
    x1 for a tool whose title is about nothing (size 0)."""
    import numpy

    at_least, per = 1 - ABOUT, 2 * ABOUT
    return numpy.array([[1.0] * (most + 1)] + [
        [at_least + per * m / size if m <= size else 1.0 for m in range(most + 1)] for size in range(1, most + 1)])


@dataclass(frozen=True, eq=False)
class Coverage:
    """The postings of each stem of the tools' words and of what their titles are about, in one
    array: ``docs[start:end]`` for ``spans[stem]`` are the tools' positions, the titles' offset by
    the number of tools (so one ``bincount`` counts both); ``sizes`` how many stems each tool's
    title is about, and ``factors`` :func:`about_factors` for the longest."""

    tools: int
    words: dict[str, tuple[int, int]]
    about: dict[str, tuple[int, int]]
    docs: numpy.ndarray[Any, numpy.dtype[numpy.intp]]
    sizes: numpy.ndarray[Any, numpy.dtype[numpy.intp]]
    factors: numpy.ndarray[Any, numpy.dtype[numpy.float64]]

    @classmethod
    def of(cls, words_of: dict[str, list[int]], about_of: dict[str, list[int]], sizes: list[int]) -> Coverage:
        """The coverage of tools whose words say the stems ``words_of`` maps to them, whose titles
        are about the stems ``about_of`` maps to them, ``sizes[tool]`` stems each."""
        import numpy

        tools = len(sizes)
        lists = [*words_of.values(), *about_of.values()]
        starts = [0, *accumulate(len(docs) for docs in lists)]
        docs = numpy.fromiter(chain.from_iterable(lists), numpy.intp, starts[-1])
        docs[starts[len(words_of)]:] += tools
        spans = list(pairwise(starts))
        return cls(tools, dict(zip(words_of, spans[:len(words_of)], strict=True)),
                   dict(zip(about_of, spans[len(words_of):], strict=True)), docs,
                   numpy.array(sizes, numpy.intp), about_factors(max(sizes, default=0)))

    def factors_of(self, found: numpy.ndarray[Any, numpy.dtype[numpy.intp]], ideas: AbstractSet[str],
                   asked: AbstractSet[str]) -> tuple[numpy.ndarray[Any, numpy.dtype[numpy.float64]] | None,
                                             numpy.ndarray[Any, numpy.dtype[numpy.float64]]]:
        """For the tools at ``found``: what each one's score is multiplied by for the ``ideas`` its
        words cover (``None`` without ideas), and for what of its title ``asked`` covers."""
        import numpy

        docs, words, about = self.docs, self.words, self.about
        parts = [docs[span[0]:span[1]] for span in map(words.get, ideas) if span is not None]
        parts += [docs[span[0]:span[1]] for span in map(about.get, asked) if span is not None]
        if parts:
            counts = numpy.bincount(numpy.concatenate(parts), minlength=2 * self.tools).reshape(2, self.tools)[:, found]
            covered, titled = counts[0], counts[1]
        else:
            covered = titled = numpy.zeros(len(found), numpy.intp)
        by_ideas = idea_factors(len(ideas))[covered] if ideas else None
        return by_ideas, self.factors[self.sizes[found], titled]
