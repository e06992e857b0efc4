"""What a search reads of its query, worked out once per query and kept (a client repeats its
queries, and the check before a search reads the same): its words, what they mean (phrases said as
what they name), the stems it searches for, the kind of action it asks for. The light stemmer
lives here too: the index's texts are read through it when it is built, so that a query's words
meet them."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .vocabulary import ACTIONS, READING, asked_for, meaning, query_words

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
    (:func:`searchable`) and the search of one request. Its words are read in order, each phrase
    as what it also names (:func:`.vocabulary.meaning`), each word through :data:`_WORDS`."""
    said = query_words(query[:MAX_QUERY_CHARS])[:MAX_QUERY_WORDS]
    meant: list[str] = []
    terms: list[str] = []  # the stems of what it means, in order
    stems: list[str] = []  # the stems of its words
    action: str | None = None  # the first kind of action its words say
    paired = False  # whether the word is the second of a pair read
    last = len(said) - 1
    known = _WORDS
    for i, word in enumerate(said):
        if paired:
            paired = False
            continue
        its_stem, its_action, its_meant, its_terms, pairs = known.get(word) or _learnt(word)
        stems.append(its_stem)
        if pairs is not None and i < last:
            pair = pairs.get(said[i + 1])
            if pair is not None:
                meant += pair[0]
                terms += pair[1]
                action = action or pair[2]
                stems.append(pair[3])
                paired = True
                continue
        meant += its_meant
        terms += its_terms
        action = action or its_action
    if action is None or action == "get":
        action = asked_for(action, said)
    return _PLAN(Plan, (tuple(dict.fromkeys(terms)), frozenset(stems), action, _CHANGING.get(action), " ".join(meant)))


#: What a pair of words says, with stems: the words it means, their stems, the kind of action it
#: says, the stem of its second word.
_Pair = tuple[tuple[str, ...], tuple[str, ...], str | None, str]
#: What a word says, with stems: its stem, the kind of action it says alone, the words it means
#: alone and their stems, what the pairs it begins say by their second word (:func:`.vocabulary.meaning`).
_Word = tuple[str, str | None, tuple[str, ...], tuple[str, ...], dict[str, _Pair] | None]
#: The words of queries met, read: at most about :data:`_WORDS_KEPT` (emptied when full).
_WORDS: dict[str, _Word] = {}
_WORDS_KEPT = 16384


def _learnt(word: str) -> _Word:
    """What ``word`` says (:data:`_Word`), kept in :data:`_WORDS`."""
    (meant, action), pairs = meaning(word)
    read = None if pairs is None else {second: (said, tuple(map(stem, said)), its_action, stem(second))
                                       for second, (said, its_action) in pairs.items()}
    if len(_WORDS) >= _WORDS_KEPT:
        _WORDS.clear()
    found = _WORDS[word] = (stem(word), action, meant, tuple(map(stem, meant)), read)
    return found


#: The stem of each kind of action that changes something (:attr:`Plan.changing`).
_CHANGING: dict[str | None, str] = {action: stem(action) for action in ACTIONS if action not in READING}
#: A :class:`Plan` made from its fields by tuple's own constructor (a NamedTuple's runs in Python).
_PLAN = tuple.__new__
