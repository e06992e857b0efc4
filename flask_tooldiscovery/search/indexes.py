"""The search indexes of an app: one per base tool set (the registry's whole set, by its content
fingerprint: a tool that changes makes a new one), built when first searched and kept while
recently used; a view of that set (what a caller may see, a toolset, a read-only mount, a request's
narrowing headers) is searched in its base's index through a :class:`~.index.Mask` of the tools it
shows, made once per view's fingerprint and kept, so nobody finds a tool they cannot see and no
caller's view costs a build. And what a search may ask (:func:`check`), said the same way to every
dialect.

What is kept: the :data:`INDEXES_KEPT` indexes most recently searched (base sets, and the rare view
that holds an older version of a tool than its base: it is indexed on its own), and the
:data:`MASKS_KEPT` masks most recently used, each one byte per tool of its base: about 1.2 KiB at
1,223 tools and 10 KiB at 10,000 (bench/bench_masks.py), so at most about 1.3 and 11 MiB for the
1,024 kept. A mask pushed out is made again when next needed, in well under a millisecond per
thousand tools; an index pushed out costs a build (about a second at 10,000 tools), which only a
change of the tools asks for."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Hashable

from ..errors import BadRequest
from ..tools.registry import ToolSet
from .index import MAX_QUERY_CHARS, Mask, SearchIndex
from .query import searchable
from .semantic import Meaning

#: The most tools one search answers.
MAX_LIMIT = 50
#: The default number of tools a search answers.
DEFAULT_LIMIT = 5
#: How many indexes, and how many views' masks, are kept (the least recently used go first).
INDEXES_KEPT = 8
MASKS_KEPT = 1024


#: What a query that is text has none of: control characters but tab and line ends, a lone
#: surrogate (half a UTF-16 pair from JSON, or undecodable bytes of a command line), U+FFFD.
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffd]")


def check(query: object, limit: object) -> tuple[str, int]:
    """``(query, limit)`` when they can be searched, else :class:`~flask_tooldiscovery.errors.BadRequest`
    saying what is wrong (an empty, too long or binary query, one with no word to search for; a
    limit that is not 1 to 50)."""
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("The query must be a non-empty string.")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"The query is longer than {MAX_QUERY_CHARS} characters.")
    if not (query.isascii() and query.isprintable()) and _NOT_TEXT.search(query):
        raise BadRequest("The query must be text, without control characters.")
    if not searchable(query):  # (the search's own plan, made once: the search finds it kept)
        raise BadRequest("The query has no word to search for.")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"The limit must be an integer from 1 to {MAX_LIMIT}.")
    return query, limit


class SearchIndexes:
    """Indexes by base tool-set fingerprint and views' masks by view fingerprint, the most recently
    used (thread-safe; a set is indexed once even when several requests ask for it at the same
    time); with ``meaning``, they also rank by meaning (:mod:`.semantic`)."""

    def __init__(self, size: int = INDEXES_KEPT, meaning: Meaning | None = None, masks: int = MASKS_KEPT) -> None:
        self._size = size
        self._masks_kept = masks
        #: Ranking by meaning for every index (``TOOLDISCOVERY_TOOL_SEARCH_SEMANTIC``), else ``None``.
        self._meaning = meaning
        self._indexes: OrderedDict[Hashable, SearchIndex] = OrderedDict()
        #: By view fingerprint: the index it was made for and its mask (``None``: the view needs an
        #: index of its own).
        self._masks: OrderedDict[Hashable, tuple[SearchIndex, Mask | None]] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}
        #: How many indexes were built (tests count them).
        self.builds = 0
        #: The tool set :meth:`of` answered last, and its answer.
        self._last: tuple[ToolSet, SearchIndex, Mask | None] | None = None

    def of(self, toolset: ToolSet) -> tuple[SearchIndex, Mask | None]:
        """The index that serves ``toolset``'s latest versions, and the mask that shows only them
        (``None``: the index holds only them). The set asked for last is answered again without a
        look-up (a set's content never changes: a changed tool makes a new set): what is kept stays
        in the order of last use, as the set was the last used."""
        last = self._last
        if last is not None and last[0] is toolset:
            return last[1], last[2]
        found = self._of(toolset)
        self._last = (toolset, *found)
        return found

    def _of(self, toolset: ToolSet) -> tuple[SearchIndex, Mask | None]:
        base = toolset if toolset.base is None else toolset.base
        index = self._index(base)
        if base is toolset:
            return index, None
        key = toolset.fingerprint
        with self._lock:
            kept = self._masks.get(key)
            if kept is not None and kept[0] is index:
                self._masks.move_to_end(key)
                mask = kept[1]
            else:
                kept = None
        if kept is None:
            mask = index.mask(toolset.latest())
            with self._lock:
                self._masks[key] = (index, mask)
                while len(self._masks) > self._masks_kept:
                    self._masks.popitem(last=False)
        return (index, mask) if mask is not None else (self._index(toolset), None)

    def _index(self, toolset: ToolSet) -> SearchIndex:
        """The index of ``toolset``'s latest versions, built if not kept."""
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
                    self.builds += 1
                    self._indexes[key] = found
                    while len(self._indexes) > self._size:
                        self._indexes.popitem(last=False)
                    self._building.pop(key, None)
        return found

    def search(self, toolset: ToolSet, query: object, limit: object = DEFAULT_LIMIT) -> list[str]:
        """The names of the ``limit`` tools of ``toolset`` that best match ``query``, best first;
        :class:`~flask_tooldiscovery.errors.BadRequest` for what cannot be searched."""
        text, count = check(query, limit)
        index, mask = self.of(toolset)
        return [hit.name for hit in index.search(text, count, mask)]
