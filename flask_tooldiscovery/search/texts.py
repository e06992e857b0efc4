"""A tool's texts as the index holds them: their words, stemmed (:func:`.query.stem`), each
text analysed once and kept (a parameter's description recurs across the tools of one API; a
changed set of tools is mostly the same texts)."""

from __future__ import annotations

from typing import Any

from .query import stem
from .vocabulary import identifier_words, words

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


def stems(found: list[str]) -> list[str]:
    """``found``'s words stemmed (:func:`.query.stem`), each word through :data:`_STEMS`."""
    known = _STEMS
    if len(known) > _MAX_KEPT:
        known.clear()
    for word in set(found).difference(known):
        known[word] = stem(word)
    get = known.get
    return [get(word) or stem(word) for word in found]


def _analysed(text: str, identifier: bool = False) -> list[str]:
    """The stemmed words of ``text`` (an identifier's when ``identifier``), analysed once per text."""
    found = _ANALYSED.get(text)
    if found is None:
        if len(_ANALYSED) > _MAX_KEPT:
            _ANALYSED.clear()
        found = _ANALYSED[text] = stems(identifier_words(text) if identifier else words(text))
    return found


def param_words(schema: dict[str, Any] | None) -> list[str]:
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
