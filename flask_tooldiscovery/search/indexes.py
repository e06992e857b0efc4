"""The search indexes of an app, one per tool set (a caller's visible set has a fingerprint of its
own, so nobody finds a tool they cannot see), built when first searched and kept while recently
used; and what a search may ask (:func:`check`), said the same way to every dialect."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from ..errors import BadRequest
from ..tools.registry import ToolSet
from .index import MAX_QUERY_CHARS, SearchIndex, searchable
from .semantic import Meaning

#: The most tools one search answers.
MAX_LIMIT = 50
#: The default number of tools a search answers.
DEFAULT_LIMIT = 5


def check(query: object, limit: object) -> tuple[str, int]:
    """``(query, limit)`` when they can be searched, else :class:`~flask_tooldiscovery.errors.BadRequest`
    saying what is wrong (an empty, too long or binary query, one with no word to search for; a
    limit that is not 1 to 50)."""
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("The query must be a non-empty string.")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"The query is longer than {MAX_QUERY_CHARS} characters.")
    if any((ord(c) < 32 and c not in "\t\n\r") or "\ud800" <= c <= "\udfff" for c in query) or "\ufffd" in query:
        # (a lone surrogate: half a UTF-16 pair from JSON, or undecodable bytes of a command line)
        raise BadRequest("The query must be text, without control characters.")
    if not searchable(query):
        raise BadRequest("The query has no word to search for.")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"The limit must be an integer from 1 to {MAX_LIMIT}.")
    return query, limit


class SearchIndexes:
    """Indexes by tool-set fingerprint, the ``size`` most recently used (thread-safe; a set is
    indexed once even when several requests ask for it at the same time); with ``meaning``, they
    also rank by meaning (:mod:`.semantic`)."""

    def __init__(self, size: int = 16, meaning: Meaning | None = None) -> None:
        self._size = size
        #: Ranking by meaning for every index (``TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC``), else ``None``.
        self._meaning = meaning
        self._indexes: OrderedDict[Hashable, SearchIndex] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def of(self, toolset: ToolSet) -> SearchIndex:
        """The index of ``toolset``'s latest versions."""
        key = toolset.fingerprint
        with self._lock:
            found = self._indexes.get(key)
            if found is not None:
                self._indexes.move_to_end(key)
                return found
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                found = self._indexes.get(key)
            if found is None:
                found = SearchIndex.build(toolset.latest(), self._meaning)
                with self._lock:
                    self._indexes[key] = found
                    while len(self._indexes) > self._size:
                        self._indexes.popitem(last=False)
                    self._building.pop(key, None)
        return found

    def search(self, toolset: ToolSet, query: object, limit: object = DEFAULT_LIMIT) -> list[str]:
        """The names of the ``limit`` tools of ``toolset`` that best match ``query``, best first;
        :class:`~flask_tooldiscovery.errors.BadRequest` for what cannot be searched."""
        text, count = check(query, limit)
        return [hit.name for hit in self.of(toolset).search(text, count)]
