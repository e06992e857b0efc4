"""A search index of one tool set: BM25F ranks tools by what they are for, over their name, title,
description, parameters and tags, each field weighted by how much it says of that; the best
candidates are then ranked again by what term counts cannot see: whether the tool does the kind of
action the query asks for (create, delete, list...), whether its read-only and destructive hints
agree, how many of the query's ideas it covers, and how much of what its title is about the query
covers (the plain "Create an issue" before "Create an issue type for an organization"). A query
word also finds its relatives, words one of which begins with the other.

Every term's contribution to every tool's score is worked out when the index is built and kept in
compact arrays, so a search is a few additions per matching tool: SQLite's FTS5 (tried first: it is
in the standard library) computes BM25 for every matching row at query time, 20-120 ms at 10,000
tools here, where the goal is 5 ms. An index is built once per tool set (by the set's content
fingerprint) and is read-only after that; searches from several threads share it.

One index serves every view of its set (what each caller may see, a toolset, a read-only mount): a
search given a :class:`Mask` leaves the hidden tools out before anything is ranked, so they are
never answered and take no place among the candidates ranked again (by meaning too), and the first
tool is the best *visible* one. The term statistics (how many tools say a word, how long a field
is on average) stay those of the whole set, as FastMCP's and most engines' are: a visible tool's
score may move a little with what hidden tools say, and the answer is only visible tools in an
order, so what a caller may learn of the hidden ones is at most that hint; an index per visible set
would cost a build per caller (a second at 10,000 tools) for it."""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..tools.model import Tool
from .semantic import Meaning
from .vocabulary import (
    DESTROYING,
    READING,
    STOPWORDS,
    UNDOING,
    action_of,
    asked_for,
    expand,
    identifier_words,
    query_words,
    understood,
    words,
)

#: Field weights (name, title, description, parameters, tags) and BM25's constants.
_WEIGHTS = (4.0, 5.0, 1.5, 0.6, 2.0)
_K1 = 1.2
_B = 0.75
#: How many of BM25's best are ranked again.
_CANDIDATES = 100
#: How much a query word's relatives count (``contribut`` and ``contributor``: one is the
#: other's prefix), beside the word itself.
_RELATIVE = 0.8
#: How much what a tool's title is about, covered by the query, counts: its score is multiplied
#: by ``1 - _ABOUT`` (nothing covered) to ``1 + _ABOUT`` (all of it).
_ABOUT = 0.6
#: Kinds of action a query may say for one another ("show" a list or one thing; "cancel" an
#: invitation is to delete it).
_NEIGHBOURS = ({"get", "list"}, {"cancel", "delete"})
#: The longest query read, in characters and in words (the rest is ignored).
MAX_QUERY_CHARS = 500
MAX_QUERY_WORDS = 32


@dataclass(frozen=True)
class Hit:
    """One tool a search found, and how well it matched (higher is better)."""

    name: str
    score: float


@dataclass(frozen=True)
class Mask:
    """Which of an index's tools a search may answer (a view of its set: :meth:`SearchIndex.mask`):
    one byte per tool, 1 when shown; and the hidden tools' positions when they are few (at most one
    in 32: a search then drops them from its matches instead of reading every match's byte)."""

    shown: bytes
    hidden: array[int] | None

    def __len__(self) -> int:
        """Its size in bytes (what keeping it costs, beside a small object's)."""
        return len(self.shown) + (0 if self.hidden is None else len(self.hidden) * self.hidden.itemsize)


@dataclass(frozen=True)
class _Entry:
    name: str
    tool: Tool
    action: str | None
    read_only: bool
    destructive: bool
    words: frozenset[str]
    #: The stems of what its title (else its name) says, but stopwords: what the tool is about.
    about: frozenset[str]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A light stem, so that ``requests`` meets ``request``, and ``issues``, ``merging`` and
    ``created`` meet ``issue``, ``merge`` and ``create`` (a final "e" goes too)."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: len(word) - len(suffix)] + keep
            break
    return word[:-1] if word.endswith("e") and len(word) >= 4 else word


#: Texts analysed so far (a parameter's description recurs across the tools of one API), and
#: their stemmed words: bounded, cleared when full.
_ANALYSED: dict[str, list[str]] = {}
#: Every word stemmed so far, and its stem.
_STEMS: dict[str, str] = {}
_MAX_KEPT = 200_000


def forget_analysed() -> None:
    """Empty the caches of analysed texts and stemmed words (benchmarks measure a cold build)."""
    _ANALYSED.clear()
    _STEMS.clear()


def _stems(found: list[str]) -> list[str]:
    """``found``'s words stemmed (:func:`_stem`), each word through :data:`_STEMS`."""
    known = _STEMS
    if len(known) > _MAX_KEPT:
        known.clear()
    for word in set(found).difference(known):
        known[word] = _stem(word)
    get = known.get
    return [get(word) or _stem(word) for word in found]


def _analysed(text: str, identifier: bool = False) -> list[str]:
    """The stemmed words of ``text`` (an identifier's when ``identifier``), analysed once per text."""
    found = _ANALYSED.get(text)
    if found is None:
        if len(_ANALYSED) > _MAX_KEPT:
            _ANALYSED.clear()
        found = _ANALYSED[text] = _stems(identifier_words(text) if identifier else words(text))
    return found


def _param_words(schema: dict[str, Any] | None) -> list[str]:
    """The stemmed words of a schema's parameter names and descriptions (the first 200 characters
    of each)."""
    if not isinstance(schema, dict):
        return []
    found: list[str] = []
    for name, spec in (schema.get("properties") or {}).items():
        found += _analysed(str(name), identifier=True)
        if isinstance(spec, dict) and isinstance(spec.get("description"), str):
            found += _analysed(spec["description"][:200])
    return found


def searchable(query: str) -> bool:
    """Whether ``query`` has a word to search for (not only punctuation and words like "the")."""
    return bool(expand(query_words(query[:MAX_QUERY_CHARS])[:MAX_QUERY_WORDS]))


class SearchIndex:
    """The search index of one tool set. Build it with :meth:`build`; :meth:`search` is safe from
    any thread (nothing is written after the build)."""

    def __init__(self, entries: list[_Entry], postings: dict[str, tuple[array[int], array[float]]],
                 meaning: Meaning | None = None, texts: list[str] | None = None) -> None:
        self._entries = entries
        self._postings = postings
        #: Each tool's position, by name (a view's mask is made of them).
        self._docs = {entry.name: doc for doc, entry in enumerate(entries)}
        #: Ranking by meaning (:mod:`.semantic`), and what each tool is for in a line (its title
        #: and name) for it; ``None`` without.
        self._meaning = meaning
        self._texts = texts or []
        #: The terms of five letters or more, by their first five (a query word's relatives).
        self._prefixes: dict[str, list[str]] = {}
        for term in postings:
            if len(term) >= 5:
                self._prefixes.setdefault(term[:5], []).append(term)

    @classmethod
    def build(cls, tools: Iterable[Tool], meaning: Meaning | None = None) -> SearchIndex:
        """The index of ``tools``; with ``meaning``, its searches also rank by meaning."""
        entries: list[_Entry] = []
        texts: list[str] = []
        fields: list[tuple[list[str], ...]] = []
        for tool in tools:
            name_words = identifier_words(tool.name)
            annotations = tool.annotations or {}
            title = tool.title or annotations.get("title") or ""
            title_words = words(title)
            undone = [UNDOING[w] for w in title_words if w in UNDOING]  # "Unstar" is about a star too
            description = words(tool.description or "")[:80]
            name_stems, title_stems, description_stems = (
                _stems(name_words), _stems(title_words + undone), _stems(description))
            doc_fields = (name_stems, title_stems, description_stems, _param_words(tool.input_schema)[:120],
                          _stems(words(" ".join([*tool.tags, tool.category or "", tool.toolkit or ""]))))
            fields.append(doc_fields)
            if meaning is not None:  # what it is for, in a line: "Create a pull request. pulls create"
                texts.append(". ".join(part for part in (title, " ".join(tool.name.replace("_", " ").split())) if part))
            entries.append(_Entry(
                name=tool.name,
                tool=tool,
                action=action_of(title_words[:1] or name_words[1:2] or name_words[:1]) or action_of(name_words),
                read_only=bool(annotations.get("readOnlyHint")),
                destructive=bool(annotations.get("destructiveHint")),
                words=frozenset(name_stems + title_stems + description_stems[:40]),
                about=frozenset(_stems([w for w in title_words or name_words if w not in STOPWORDS] + undone)),
            ))
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
        postings: dict[str, tuple[array[int], array[float]]] = {}
        saturate = _K1 + 1
        for term, docs in docs_of.items():
            idf = math.log(1 + (count - len(docs) + 0.5) / (len(docs) + 0.5)) * saturate
            postings[term] = (array("i", docs), array("f", [idf * v / (v + _K1) for v in values_of[term]]))
        if meaning is not None:
            meaning.prepare(texts)  # in the background: until then, searches answer in the lexical order
        return cls(entries, postings, meaning, texts)

    def __len__(self) -> int:
        return len(self._entries)

    def mask(self, shown: Iterable[Tool]) -> Mask | None:
        """The mask that shows only ``shown`` (one version per name, as :meth:`build` takes them):
        ``None`` when one of them is not the version this index holds (a view whose caller may
        not see a tool's latest version, only an older one, needs an index of its own)."""
        found = bytearray(len(self._entries))
        docs, entries = self._docs, self._entries
        for tool in shown:
            doc = docs.get(tool.name)
            if doc is None or (entries[doc].tool is not tool and entries[doc].tool.fingerprint != tool.fingerprint):
                return None
            found[doc] = 1
        if found.count(0) * 32 > len(found):
            return Mask(bytes(found), None)
        hidden, doc = array("i"), found.find(0)
        while doc >= 0:
            hidden.append(doc)
            doc = found.find(0, doc + 1)
        return Mask(bytes(found), hidden)

    def search(self, query: str, limit: int = 5, mask: Mask | None = None) -> list[Hit]:
        """The ``limit`` tools that best match ``query``, best first (fewer when fewer match; none
        when the query has no word to search for: :func:`searchable` tells); with ``mask``, only
        the tools it shows are ranked and answered."""
        said = query_words(query[:MAX_QUERY_CHARS])[:MAX_QUERY_WORDS]
        meant, verbs = understood(said)
        terms = list(dict.fromkeys(_stem(t) for t in meant))
        scores: dict[int, float] = {}
        relatives: set[str] = set()
        get = scores.get
        for term in terms:
            found = self._postings.get(term)
            if found is not None:
                for doc, value in zip(*found, strict=True):
                    scores[doc] = get(doc, 0.0) + value
            if len(term) >= 5:  # its relatives: a light stemmer leaves "contribut" and "contributor" apart
                for other in self._prefixes.get(term[:5], ()):
                    if other != term and (other.startswith(term) or term.startswith(other)):
                        relatives.add(other)
                        for doc, value in zip(*self._postings[other], strict=True):
                            scores[doc] = get(doc, 0.0) + value * _RELATIVE
        if mask is not None:  # the hidden tools go before anything is ranked
            if mask.hidden is not None:
                for doc in mask.hidden:
                    scores.pop(doc, None)
            else:
                shown = mask.shown
                scores = {doc: score for doc, score in scores.items() if shown[doc]}
        wanted = asked_for(verbs, said)
        asked = set(terms) | relatives  # and the action asked: "pause" covers "Disable"
        if wanted is not None and wanted not in READING:
            asked.add(_stem(wanted))
        ideas = {_stem(w) for w in said} & asked
        ranked: list[tuple[float, int]] = []
        for doc, score in heapq.nlargest(_CANDIDATES, scores.items(), key=lambda item: item[1]):
            entry = self._entries[doc]
            if wanted is not None:
                if entry.action == wanted:
                    score *= 1.6
                elif entry.action is not None and {entry.action, wanted} not in _NEIGHBOURS:
                    score *= 0.8
                if entry.read_only and wanted not in READING:
                    score *= 0.85
                if entry.destructive and wanted not in DESTROYING:
                    score *= 0.85
                elif wanted in DESTROYING and not entry.destructive:
                    # Between tools the words rank alike, the one whose hint says it destroys is
                    # what a "delete" asks for (only a nudge: many deleting tools have no such hint).
                    score *= 0.999
            if ideas:
                score *= 0.6 + 0.8 * len(ideas & entry.words) / len(ideas)
            if entry.about:  # "Create an issue" beats "Create an issue type for an organization"
                score *= 1 - _ABOUT + 2 * _ABOUT * len(entry.about & asked) / len(entry.about)
            ranked.append((score, doc))
        ranked.sort(key=lambda item: -item[0])
        if self._meaning is not None and limit > 1 and len(ranked) > 2:
            order = self._meaning.rank((query[:MAX_QUERY_CHARS], " ".join(meant)),
                                       [self._texts[doc] for _, doc in ranked], [score for score, _ in ranked])
            if order is not None:
                ranked = [ranked[i] for i in order]
        return [Hit(self._entries[doc].name, score) for score, doc in ranked[:max(limit, 0)]]
