"""What a search reads of its query, worked out once per query and kept (a client repeats its
queries, and the check before a search reads the same): its words, what they mean (phrases said as
what they name), the stems it searches for, the kind of action it asks for. The light stemmer
lives here too: the index's texts are read through it when it is built, so that a query's words
meet them."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .vocabulary import ACTIONS, READING, query_words, understood

#: The longest query read, in characters and in words (the rest is ignored).
MAX_QUERY_CHARS = 500
MAX_QUERY_WORDS = 32


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stem, so that ``requests`` meets ``request``, and ``issues``, ``merging`` and
    ``created`` meet ``issue``, ``merge`` and ``create`` (a final "e" goes too)."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: len(word) - len(suffix)] + keep
            break
    return word[:-1] if word.endswith("e") and len(word) >= 4 else word


def searchable(query: str) -> bool:
    """Whether ``query`` has a word to search for (not only punctuation and words like "the")."""
    return bool(planned(query).terms)


class Plan(NamedTuple):
    """What a search reads of its query (:func:`planned`)."""

    #: The stems it searches for, in order, each once.
    terms: tuple[str, ...]
    #: The stems of all its words (its ideas are those of them it searches for).
    stems: frozenset[str]
    #: The kind of action it asks for (:func:`asked_for`), if any.
    wanted: str | None
    #: That action's stem when it asks to change something ("pause" covers a title's "Disable").
    changing: str | None
    #: What it means, in a line (for ranking by meaning).
    meant: str


@lru_cache(maxsize=256)
def planned(query: str) -> Plan:
    """What a search reads of ``query`` (:class:`Plan`), worked out once per query: for the check
    (:func:`searchable`) and the search of one request."""
    said = query_words(query[:MAX_QUERY_CHARS])[:MAX_QUERY_WORDS]
    meant, wanted = understood(said)
    known = _STEMMED
    try:
        terms = tuple(dict.fromkeys(map(known.__getitem__, meant)))
        stems = frozenset(map(known.__getitem__, said))
    except KeyError:  # a word not met before: its stem is kept
        if len(known) > _STEMMED_KEPT:
            known.clear()
        for word in (*meant, *said):
            known[word] = stem(word)
        terms = tuple(dict.fromkeys(map(stem, meant)))
        stems = frozenset(map(stem, said))
    return _PLAN(Plan, (terms, stems, wanted, _CHANGING.get(wanted), " ".join(meant)))


#: The stems of the words of queries met (a plain dict: cheaper than :func:`stem`'s cache), at most
#: about :data:`_STEMMED_KEPT` (emptied when full).
_STEMMED: dict[str, str] = {}
_STEMMED_KEPT = 16384
#: The stem of each kind of action that changes something (:attr:`Plan.changing`).
_CHANGING: dict[str | None, str] = {action: stem(action) for action in ACTIONS if action not in READING}
#: A :class:`Plan` made from its fields by tuple's own constructor (a NamedTuple's runs in Python).
_PLAN = tuple.__new__
