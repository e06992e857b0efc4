"""The tool registry: decorated tools and tools providers, kept in registration order, and the
:class:`ToolSet` in force for a request (all versions; each caller's visible view; the fingerprint
every discovery cache keys on)."""

from __future__ import annotations

import hashlib
import json
import logging
import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .function_tools import RegistrationError, valid_tool_name
from .model import CHANGES, Identity, Tool, parse_version, tool_changes
from .providers import ProvidedTools, ProviderError, ToolsProvider, resolve_provider, tool_from_object
from .watchers import Checks, Watchers

log = logging.getLogger("flask_tooldiscovery")


def digest(texts: Iterable[str]) -> str:
    """One short digest of many texts, in order. A fingerprint holds digests, not the texts or
    a tuple of every tool's: caches hash it and the fast path compares it on every request, which
    a tuple as long as the registry makes as slow as the registry is large."""
    h = hashlib.blake2b(digest_size=16)
    for text in texts:
        h.update(text.encode())
        h.update(b"\n")
    return h.hexdigest()


#: How many narrowed views (:meth:`ToolSet.narrowed`) one tool set keeps.
NARROWED_KEPT = 64


def _reads_only(tool: Tool) -> bool:
    return tool.hint("readOnlyHint") is True


@dataclass
class ToolSet:
    """The tools in force for one request, all versions, in registration order."""

    tools: list[Tool] = field(default_factory=list)
    #: Equal for two sets that would be served identically: a digest of every tool's content and
    #: the registry's categories (caches and learned answers key on it).
    fingerprint: Hashable = None
    #: The set this one was narrowed from (a caller's view, a toolset, a read-only mount...): the
    #: registry's whole set, which one search index serves for all of its views; ``None`` when
    #: this set is one.
    base: ToolSet | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        #: True when some tool is not for everyone (``scopes`` or ``visible``).
        self.restricted = any(t.scopes or t.visible for t in self.tools)
        #: True when some tool has a ``visible`` predicate (views are then computed per request).
        self.predicated = self.restricted and any(t.visible for t in self.tools)
        self._views: dict[frozenset[str], ToolSet] = {}
        self._latest: list[Tool] | None = None
        self._for_model: ToolSet | None = None
        self._tagged: dict[frozenset[str], ToolSet] = {}
        self._narrowed: dict[Hashable, ToolSet] = {}
        if self.fingerprint is None:
            self.fingerprint = ("tools", digest(t.fingerprint for t in self.tools))
        self._by_name: dict[str, list[Tool]] = {}
        for tool in self.tools:
            self._by_name.setdefault(tool.name, []).append(tool)
        for versions in self._by_name.values():
            if len(versions) > 1:
                versions.sort(key=lambda t: t.version_tuple)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def _view(self, shown: list[Tool], fingerprint: Hashable) -> ToolSet:
        """The set of ``shown`` (some of this set's tools), narrowed from this set's base."""
        return ToolSet(shown, fingerprint=fingerprint, base=self if self.base is None else self.base)

    def latest(self) -> list[Tool]:
        """One tool per name (its highest version), in the order names were first registered
        (computed once per set: shared, never mutate it)."""
        if self._latest is None:
            self._latest = [versions[-1] for versions in self._by_name.values()]
        return self._latest

    def visible_to(self, identity: Identity | None) -> ToolSet:
        """The tools ``identity`` may see and call: those whose ``scopes`` it holds and whose
        ``visible`` predicate accepts it. Cached per scope set when no predicate is involved."""
        if not self.restricted:
            return self
        held = frozenset(identity.scopes) if identity is not None else frozenset()
        key = held if not self.predicated else None
        if key is not None and key in self._views:
            return self._views[key]
        shown = [t for t in self.tools if set(t.scopes) <= held and (t.visible is None or t.visible(identity))]
        if len(shown) == len(self.tools):  # nothing hidden: the set itself (its caches, its index)
            view = self
        else:
            kept = {id(t) for t in shown}
            hidden = sorted(f"{t.name}@{t.version}" for t in self.tools if id(t) not in kept)
            view = self._view(shown, (self.fingerprint, "hiding", digest(hidden)))
        if key is not None:
            self._views[key] = view
        return view

    def for_model(self) -> ToolSet:
        """The set less the tools only an interface calls (``visibility=["app"]``): what a dialect
        shows where no host stands between its list and the model (built once per set)."""
        if self._for_model is None:
            shown = [t for t in self.tools if t.model_visible]
            self._for_model = self if len(shown) == len(self.tools) else self._view(
                shown, (self.fingerprint, "for model"))
        return self._for_model

    def tagged(self, tags: frozenset[str]) -> ToolSet:
        """The set less the tools that have none of ``tags``: what a toolset serves (built once per
        set and tags)."""
        found = self._tagged.get(tags)
        if found is None:
            shown = [t for t in self.tools if not tags.isdisjoint(t.tags)]
            found = self._tagged[tags] = self if len(shown) == len(self.tools) else self._view(
                shown, (self.fingerprint, "tagged", tuple(sorted(tags))))
        return found

    def narrowed(self, key: Hashable, keep: Callable[[Tool], bool]) -> ToolSet:
        """The set less the tools ``keep`` refuses, built once per set and ``key`` (what names
        ``keep``: its fingerprint is this set's with ``key``); the last :data:`NARROWED_KEPT` kept."""
        found = self._narrowed.get(key)
        if found is None:
            shown = [t for t in self.tools if keep(t)]
            found = self if len(shown) == len(self.tools) else self._view(
                shown, (self.fingerprint, "narrowed", key))
            if len(self._narrowed) >= NARROWED_KEPT:  # a client naming ever new choices keeps no more
                self._narrowed.clear()
            self._narrowed[key] = found
        return found

    def read_only(self) -> ToolSet:
        """The set less the tools not annotated ``readOnlyHint`` (built once per set)."""
        return self.narrowed("read only", _reads_only)

    def get(self, name: str, version: str | None = None) -> Tool | None:
        """The tool ``name`` at ``version`` (exact ``x.y.z``), or its latest version."""
        versions = self._by_name.get(name)
        if not versions:
            return None
        if version is None:
            return versions[-1]
        try:
            wanted = parse_version(version)
        except ValueError:
            return None
        return next((t for t in versions if t.version_tuple == wanted), None)


class ToolRegistry:
    """Decorated tools and providers, in the order they were registered."""

    def __init__(self) -> None:
        self._entries: list[tuple[str, Any]] = []
        self._keys: set[tuple[str, tuple[int, int, int]]] = set()
        self._has_providers = False
        self._static: ToolSet | None = None
        #: Provider tools given as dicts, read once per content (canonical JSON -> Tool).
        self._provided: OrderedDict[str, Tool] = OrderedDict()
        #: What each provider (by its position among the entries) answered last, as read.
        self._answers: dict[int, _Answer] = {}
        #: The last tool set resolved with providers: ((tool changes, registry version), what each
        #: entry gave as read, the set).
        self._last: tuple[tuple[int, int], list[list[Tool]], ToolSet] | None = None
        #: How many provided objects were read (serialised or made into a ``Tool``): a dict the same
        #: provider answered last time, unchanged, is only compared with its copy and not counted.
        self.reads = 0
        self._lock = threading.Lock()
        #: Bumped on every registration and category.
        self.version = 0
        #: Told when a tool or a provider is added (the tool list changed).
        self.watchers = Watchers()
        #: Asked about each tool before it is registered (an app's checks, added at ``init_app``):
        #: one that raises refuses the tool.
        self.checks = Checks()
        #: Tool categories declared in code, by id (TDP groups tools by them).
        self.categories: dict[str, dict[str, Any]] = {}
        #: ``tool_changes()`` when the static tool set was built (a tool changed since: built anew).
        self._static_changes = -1
        #: Keys under which two differently named tools may not meet: (label, key, {key: name}).
        self._unique: list[_UniqueKey] = []
        #: Handlers a platform's UI calls and the model never sees (Opal's interactions), by name.
        self.interactions: dict[str, Tool] = {}

    def add_unique_key(self, label: str, key: Callable[[Tool], Hashable]) -> None:
        """Refuse, now and at every later registration, two tools whose names differ but whose
        ``key`` is equal (``label`` names the key in the message, e.g. "OXP id")."""
        unique: list[_UniqueKey] = [(label, key, {})]
        for kind, tool in self._entries:
            if kind == "tool":
                _claim_or_raise(tool, unique)
        self._unique.extend(unique)

    def add_tool(self, tool: Tool) -> Tool:
        """Register a :class:`Tool`; a second one with the same name and version is refused."""
        key = (tool.name, tool.version_tuple)
        if tool.name in self.interactions:
            raise RegistrationError(f"{tool.name!r} is already the name of an interaction")
        if key in self._keys:
            raise RegistrationError(
                f"tool {tool.name!r} version {tool.version} is already registered; give the new "
                f"one another name or another version="
            )
        self.checks.ask(tool)
        _claim_or_raise(tool, self._unique)
        self._keys.add(key)
        self._entries.append(("tool", tool))
        self._static = None
        self.version += 1
        self.watchers.notify()
        return tool

    def add_interaction(self, tool: Tool) -> Tool:
        """Register an interaction (never listed); its name is unique among tools and interactions."""
        if tool.name in self.interactions or any(kind == "tool" and t.name == tool.name for kind, t in self._entries):
            raise RegistrationError(f"{tool.name!r} is already the name of a tool or an interaction")
        self.interactions[tool.name] = tool
        return tool

    def add_provider(self, provider: ToolsProvider) -> None:
        """Register a tools provider (list, sync or async callable)."""
        if not (isinstance(provider, (list, tuple)) or callable(provider)):
            raise RegistrationError(
                "a tools provider is a list, a sync callable or an async callable, not "
                f"{type(provider).__name__}"
            )
        self._entries.append(("provider", provider))
        self._has_providers = True
        self._static = None
        self.version += 1
        self.watchers.notify()

    def add_category(self, id: str, fields: Mapping[str, Any]) -> None:
        """Declare (or redeclare) the category ``id``: every tool set built from now on shows it."""
        self.categories[id] = dict(fields)
        self._static = None
        self.version += 1

    @property
    def registered(self) -> list[Tool]:
        """The tools registered one by one (decorated functions, views), not those of providers."""
        return [tool for kind, tool in self._entries if kind == "tool"]

    @property
    def static(self) -> ToolSet | None:
        """The tools in force when no provider is registered (they cannot change between two
        registrations), else ``None``."""
        if self._has_providers:
            return None
        static = self._static  # built, and no tool changed since: the usual case, read as it is
        return static if static is not None and self._static_changes == CHANGES[0] else self.resolve()

    def _fingerprint(self, tools: list[Tool]) -> Hashable:
        """The content fingerprint of a tool set of these tools: every tool's digest and the
        declared categories (documents show both)."""
        categories = json.dumps(self.categories, sort_keys=True, default=repr) if self.categories else ""
        return ("tools", digest(t.fingerprint for t in tools), categories)

    def resolve(self) -> ToolSet:
        """The tools in force now. Providers are called (their errors raise ProviderError).

        While every provider answers what it answered last (the same dicts with the same content,
        or a :class:`~flask_tooldiscovery.tools.providers.ProvidedTools` of the same version), the
        same tools come back in the same :class:`ToolSet`: its views, documents and search index
        are reused. A dict changed in place, even nested, is read again."""
        if not self._has_providers:
            changes = tool_changes()
            if self._static is None or self._static_changes != changes:
                registered = [t for _, t in self._entries]
                self._static = ToolSet(registered, fingerprint=self._fingerprint(registered))
                self._static_changes = changes
            return self._static
        changes, version = tool_changes(), self.version
        answers: list[list[Tool]] = []
        for position, (kind, entry) in enumerate(self._entries):
            if kind == "tool":
                answers.append([entry])
                continue
            try:
                answers.append(self._read_answer(position, resolve_provider(entry)))
            except ProviderError:
                raise
            except Exception as exc:
                raise ProviderError(f"tools provider {entry!r} failed: {exc}") from exc
        last = self._last
        if last is not None and last[0] == (changes, version) and all(
                a is b or (len(a) == len(b) == 1 and a[0] is b[0]) for a, b in zip(answers, last[1], strict=True)):
            return last[2]  # every provider answered what it answered last: the same set
        tools: list[Tool] = []
        seen: set[tuple[str, tuple[int, int, int]]] = set()
        unique: list[_UniqueKey] = [(label, key_of, dict(names)) for label, key_of, names in self._unique]
        for (kind, _), candidates in zip(self._entries, answers, strict=True):
            for tool in candidates:
                key = (tool.name, tool.version_tuple)
                if key in seen:
                    log.warning("duplicate tool %s@%s from a provider ignored", tool.name, tool.version)
                    continue
                if kind == "provider":
                    if clash := _clash(tool, unique):
                        log.warning("provided tool %r skipped: %s", tool.name, clash)
                        continue
                    _claim(tool, unique)
                seen.add(key)
                tools.append(tool)
        resolved = ToolSet(tools, fingerprint=self._fingerprint(tools))
        self._last = ((changes, version), answers, resolved)
        return resolved

    def _read_answer(self, position: int, answer: list[Any]) -> list[Tool]:
        """The tools of one provider's answer: those read from its last answer when the answer says
        the same version, else each object read (:meth:`_read_provided`)."""
        said = answer.version if isinstance(answer, ProvidedTools) else None
        last = self._answers.get(position)
        if said is not None and last is not None and last.version == said:
            return last.tools
        if last is not None and answer == last.read:  # the very Tool objects read last time (a Tool
            if last.version != said:                  # equals only itself): nothing to read, one pass in C
                self._answers[position] = _Answer(said, last.dicts, last.read, last.tools)
            return last.tools
        before = last.dicts if last is not None else {}
        dicts: dict[int, tuple[dict[str, Any], bytes, Tool]] = {}
        # (a copy first: a provider's own list, changed by another thread, is read as it was)
        read = [self._read_provided(o, before, dicts) for o in list(answer)]
        if last is not None and len(read) == len(last.read) and all(
                a is b for a, b in zip(read, last.read, strict=True)):
            self._answers[position] = _Answer(said, dicts, last.read, last.tools)
            return last.tools  # the same tools as last time: the same list
        candidates = [t for t in read if _valid_name(t.name)]
        for bad in [t for t in read if not _valid_name(t.name)]:
            log.warning("provided tool %r skipped: a tool name is 1-128 ASCII letters, "
                        "digits, '_', '-' and '.', without '..'", bad.name)
        self._answers[position] = _Answer(said, dicts, read, candidates)
        return candidates

    def _read_provided(self, obj: Any, before: dict[int, tuple[dict[str, Any], bytes, Tool]] | None = None,
                       dicts: dict[int, tuple[dict[str, Any], bytes, Tool]] | None = None) -> Tool:
        """:func:`tool_from_object`, once per distinct content of a plain dict (a provider called
        on every request usually answers the same dicts): the same ``Tool`` object comes back, with
        its fingerprint and wire dumps already made. The very dict the provider answered last time
        (``before``, by identity) is only written with ``marshal`` (exact: key order and types
        count) and compared with what it was; another is looked up by its JSON text. Anything else
        is read every time."""
        image = None
        if type(obj) is dict and before is not None and dicts is not None:
            try:  # its content, exactly (key order and types too): a few times quicker than JSON
                image = marshal.dumps(obj, 2)  # version 2: no back-references, so the same bytes
            except ValueError:  # something marshal cannot write (a model, a str subclass...)
                image = None
            known = before.get(id(obj))
            if image is not None and known is not None and known[0] is obj and known[1] == image:
                dicts[id(obj)] = known
                return known[2]
        self.reads += 1
        if type(obj) is not dict:
            return tool_from_object(obj)
        try:
            key = json.dumps(obj, separators=(",", ":"))  # key order counts: it is shown
        except (TypeError, ValueError):  # not plain JSON (models, objects inside): read it as it is
            return tool_from_object(obj)
        tool = self._provided.get(key)
        if tool is None:
            tool = tool_from_object(obj)
            with self._lock:
                self._provided[key] = tool
                while len(self._provided) > self.MAX_PROVIDED:
                    self._provided.popitem(last=False)
        if dicts is not None and image is not None:
            dicts[id(obj)] = (obj, image, tool)
        return tool

    #: How many distinct provided dicts are remembered (the oldest are forgotten first).
    MAX_PROVIDED = 50_000


@dataclass
class _Answer:
    """What one provider answered last, as read: the version it said, the plain dicts it answered
    by identity (the dict, its content as ``marshal`` writes it, its tool), and what it read."""

    version: Hashable
    dicts: dict[int, tuple[dict[str, Any], bytes, Tool]]
    #: Every object read, in order, and the tools kept of them (those with a valid name).
    read: list[Tool]
    tools: list[Tool]


@lru_cache(maxsize=65536)
def _valid_name(name: str) -> bool:
    return valid_tool_name(name)


#: A key under which two differently named tools may not meet: its label, the key of a tool, and
#: the names seen so far by key.
_UniqueKey = tuple[str, Callable[[Tool], Hashable], dict[Hashable, str]]


def _clash(tool: Tool, unique: list[_UniqueKey]) -> str | None:
    """Why ``tool`` may not join the tools recorded in ``unique``, or ``None``."""
    for label, key, seen in unique:
        other = seen.get(key(tool))
        if other is not None and other != tool.name:
            return f"tools {other!r} and {tool.name!r} have the same {label} {key(tool)!r}"
    return None


def _claim(tool: Tool, unique: list[_UniqueKey]) -> None:
    for _, key, seen in unique:
        seen[key(tool)] = tool.name


def _claim_or_raise(tool: Tool, unique: list[_UniqueKey]) -> None:
    if clash := _clash(tool, unique):
        raise RegistrationError(f"{clash}; rename one")
    _claim(tool, unique)
