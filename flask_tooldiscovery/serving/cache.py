"""Discovery at the speed of static bytes: serialized documents cached per tool-set fingerprint
(a digest of the content: tools, categories, the visible set), with a strong ``ETag``; each
tool's wire translation computed once per content; tool look-ups by any dialect's id from one
index per tool set. (:mod:`.fastpath` goes further: it answers repeated anonymous requests
without Flask.)

Nothing here knows a dialect: dialects hand in a serializer (or a key function) and a name for it.
A cache belongs to one dialect of one app (its settings are fixed), so a key needs only the tool
set's fingerprint and the caller's own parts (which document, which page...).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..tools.model import Tool
from ..tools.registry import ToolSet


@dataclass(frozen=True)
class Document:
    """A serialized discovery document: its bytes, strong ``ETag`` (a quoted digest) and media type."""

    body: bytes
    etag: str
    mimetype: str = "application/json"

    @classmethod
    def of(cls, body: bytes, mimetype: str = "application/json") -> Document:
        """Wrap ``body`` with its ``ETag``."""
        return cls(body, '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"', mimetype)


class WireCache:
    """Bounded caches of one dialect of one app (thread-safe; workers never share them)."""

    def __init__(self, max_documents: int = 256) -> None:
        self._documents: OrderedDict[Hashable, Document] = OrderedDict()
        self._max = max_documents
        self._lock = threading.Lock()
        self._dumps: dict[str, weakref.WeakKeyDictionary[Tool, tuple[str, Any]]] = {}
        self._indexes: OrderedDict[Hashable, dict[Hashable, list[Tool]]] = OrderedDict()
        #: The last tool set each index was asked for, and its index: found by identity, so a call
        #: costs the same whatever the size of the set's fingerprint (a provider's, a view's).
        self._last_index: dict[str, tuple[ToolSet, dict[Hashable, list[Tool]]]] = {}

    def document(self, key: Hashable, toolset: ToolSet, build: Callable[[], bytes | Document]) -> Document:
        """The document ``build()`` makes for ``toolset`` (its bytes, or a :class:`Document` that
        names its own media type), built once per fingerprint and ``key``."""
        full = (toolset.fingerprint, key)
        with self._lock:
            found = self._documents.get(full)
            if found is not None:
                self._documents.move_to_end(full)
                return found
        built = build()
        document = built if isinstance(built, Document) else Document.of(built)
        with self._lock:
            self._documents[full] = document
            while len(self._documents) > self._max:
                self._documents.popitem(last=False)
        return document

    def dump(self, what: str, tool: Tool, build: Callable[[Tool], Any]) -> Any:
        """``build(tool)``, computed once per tool content and ``what`` (shared: never mutate it)."""
        dumps = self._dumps.get(what)
        if dumps is None:  # one table per kind of dump: a weak reference per tool, no dict per tool
            with self._lock:
                dumps = self._dumps.setdefault(what, weakref.WeakKeyDictionary())
        fingerprint = tool.fingerprint
        found = dumps.get(tool)
        if found is None or found[0] != fingerprint:  # new, or the tool was changed since
            found = dumps[tool] = (fingerprint, build(tool))
        return found[1]

    def index(self, what: str, toolset: ToolSet, key: Callable[[Tool], Hashable]) -> dict[Hashable, list[Tool]]:
        """``{key(tool): [tools, lowest version first]}`` for ``toolset``, built once per fingerprint
        (shared: never mutate it). The same set asked again is answered without hashing its
        fingerprint; another set object with a known fingerprint (a provider's same list, a request
        later) gets the index built for it; any other set gets a new one."""
        last = self._last_index.get(what)
        if last is not None and last[0] is toolset:
            return last[1]
        full = (toolset.fingerprint, what)
        with self._lock:
            found = self._indexes.get(full)
        if found is not None:
            self._last_index[what] = (toolset, found)
            return found
        index: dict[Hashable, list[Tool]] = {}
        for tool in toolset:
            index.setdefault(key(tool), []).append(tool)
        for versions in index.values():
            versions.sort(key=lambda t: t.version_tuple)
        with self._lock:
            self._indexes[full] = index
            while len(self._indexes) > 16:
                self._indexes.popitem(last=False)
        self._last_index[what] = (toolset, index)
        return index


__all__ = ["Document", "WireCache"]
