"""The tool registry: decorated functions and tools providers, kept in registration order.

A provider (F2 "ToolsProvider") is a list, a sync callable or an async callable returning tool
objects: dicts, objects with attributes, or pydantic v2 / v1 models. Callables are resolved on
every request; the library never caches their answer.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ToolDiscoveryError
from .async_bridge import await_sync
from .json_schema import InvalidSchemaError, check_schema
from .model import METADATA_OPTIONS, Tool, parse_version
from .results import mime_type_error
from .schema_sources import resolve_input_schema, resolve_output_schema
from .signature import describe_function

if TYPE_CHECKING:  # pragma: no cover
    from ..serving.identity import Identity

log = logging.getLogger("flask_tooldiscovery")

ToolsProvider = list[Any] | Callable[[], Any]

#: Every keyword ``@discovery.tool(...)`` accepts.
TOOL_OPTIONS = (
    "name", "description", "title", "input_schema", "output_schema", "annotations", "category",
    "tags", "version", "toolkit", "examples", "requirements", "timeout", "scopes", "visible", *METADATA_OPTIONS,
)
#: MCP's tool-name rule (1-128 of letters, digits, "_", "-", "."), ASCII only, no "..": safe in
#: every dialect's URLs and ids.
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def valid_tool_name(name: Any) -> bool:
    """True for a name every dialect can carry safely."""
    return isinstance(name, str) and bool(_NAME.fullmatch(name)) and ".." not in name
_REQUIREMENT_KEYS = {"authorization", "secrets", "user_id"}


#: ``parse_version`` remembered: a tool set reads every tool's version on every request.
_version = functools.lru_cache(maxsize=1024)(parse_version)


class RegistrationError(ToolDiscoveryError, ValueError):
    """A tool cannot be registered (bad option, duplicate name and version, bad schema)."""


class ProviderError(ToolDiscoveryError, RuntimeError):
    """A tools provider raised or returned something that is not a list of tools."""


def _check_options(label: str, options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(TOOL_OPTIONS))
    if unknown:
        raise RegistrationError(
            f"{label}: unknown option(s) {', '.join(unknown)}; known: {', '.join(TOOL_OPTIONS)}"
        )
    if options.get("version") is not None:
        try:
            parse_version(options["version"])
        except ValueError as exc:
            raise RegistrationError(f"{label}: {exc}") from None
    req = options.get("requirements")
    if req is not None and (not isinstance(req, Mapping) or set(req) - _REQUIREMENT_KEYS):
        raise RegistrationError(
            f"{label}: requirements must be a dict with keys among {sorted(_REQUIREMENT_KEYS)}"
        )
    timeout = options.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise RegistrationError(f"{label}: timeout must be a positive number of seconds")
    rate = options.get("rate_limit_per_minute")
    if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0):
        raise RegistrationError(f"{label}: rate_limit_per_minute must be a positive whole number")
    for key in ("tags", "scopes"):
        if options.get(key) is not None and (isinstance(options[key], str)
                                             or not all(isinstance(t, str) for t in options[key])):
            raise RegistrationError(f"{label}: {key} must be a list of strings")
    if options.get("result_mime_type") is not None and (error := mime_type_error(options["result_mime_type"])):
        raise RegistrationError(f"{label}: result_mime_type: {error}")
    if options.get("visible") is not None and not callable(options["visible"]):
        raise RegistrationError(f"{label}: visible must be a callable taking the caller's Identity (or None)")


def _normalize_requirements(req: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Requirements as OXP writes them: ``authorization``/``secrets`` as lists of ``{"id"}``."""
    if not req:
        return None
    out: dict[str, Any] = {}
    for key in ("authorization", "secrets"):
        items = req.get(key)
        if items:
            out[key] = [{"id": i} if isinstance(i, str) else dict(i) for i in items]
    if req.get("user_id"):
        out["user_id"] = True
    return out or None


#: Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_SUBSCHEMA = frozenset(("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                        "additionalItems", "unevaluatedItems", "unevaluatedProperties"))
_SUBSCHEMA_LISTS = frozenset(("allOf", "anyOf", "oneOf", "prefixItems", "items"))
_SUBSCHEMA_MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))


_SAFE_SCALARS = frozenset((str, bool, type(None)))


def _unrepresentable(value: Any) -> Any:
    """The first number in a JSON value that strict readers refuse, or ``None``: a non-finite
    float (JSON has no ``Infinity`` or ``NaN``) or an integer outside int64 (protobuf consumers)."""
    if type(value) in _SAFE_SCALARS:
        return None
    if (isinstance(value, float) and not math.isfinite(value)) or (
            isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63):
        return value
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
    return next((bad for bad in map(_unrepresentable, items) if bad is not None), None)


def _check_defaults(label: str, schema: Any, path: tuple[str, ...] = ()) -> None:
    """Refuse a ``default`` anywhere in ``schema`` that a wire format cannot carry."""
    if not isinstance(schema, Mapping):
        return
    if "default" in schema and (bad := _unrepresentable(schema["default"])) is not None:
        where = "the input schema" if len(path) < 2 else \
            f"{'parameter' if path[0] == 'properties' else path[0]} {path[1]!r}"
        raise RegistrationError(
            f"{label}: {where} has a default holding {bad!r} (at /{'/'.join((*path, 'default'))}); defaults "
            f"must be finite numbers and integers within int64 (-2**63 .. 2**63-1) to be sent as JSON"
        )
    for key, sub in schema.items():
        if key in _SUBSCHEMA_MAPS and isinstance(sub, Mapping):
            for name, item in sub.items():
                _check_defaults(label, item, (*path, key, str(name)))
        elif key in _SUBSCHEMA_LISTS and isinstance(sub, list):
            for i, item in enumerate(sub):
                _check_defaults(label, item, (*path, key, str(i)))
        elif key in _SUBSCHEMA:
            _check_defaults(label, sub, (*path, key))


def tool_from_function(func: Callable[..., Any], options: Mapping[str, Any]) -> Tool:
    """Build a :class:`Tool` from a decorated function and its ``@tool(...)`` options."""
    label = f"tool {options.get('name') or getattr(func, '__name__', func)!r}"
    _check_options(label, options)
    explicit = options.get("input_schema") is not None
    desc = describe_function(func, name=options.get("name"), derive_input=not explicit,
                             result_mime_type=options.get("result_mime_type"))
    name = desc.name
    label = f"tool {name!r}"
    if not valid_tool_name(name):
        raise RegistrationError(
            f"{label}: a tool name is 1-128 ASCII letters, digits, '_', '-' and '.', without '..'"
        )
    input_schema, load = desc.input_schema, desc.load_arguments
    try:
        if explicit:
            input_schema, explicit_load = resolve_input_schema(
                options["input_schema"], what=f"{label}: input_schema"
            )
            load = explicit_load or (lambda args: dict(args))
        output_schema = (
            resolve_output_schema(options["output_schema"], what=f"{label}: output_schema")
            if options.get("output_schema") is not None
            else desc.output_schema
        )
        check_schema(input_schema, what=f"{label}: input_schema")
    except InvalidSchemaError as exc:
        raise RegistrationError(str(exc)) from None
    _check_defaults(label, input_schema)

    metadata = {k: options[k] for k in METADATA_OPTIONS if options.get(k) is not None}
    description = options.get("description") or desc.description
    return Tool(
        name=name,
        description=description.strip(),
        input_schema=input_schema,
        output_schema=output_schema,
        title=options.get("title"),
        annotations=dict(options["annotations"]) if options.get("annotations") else None,
        version=str(options.get("version") or "1.0.0"),
        toolkit=options.get("toolkit"),
        category=options.get("category"),
        tags=list(options.get("tags") or []),
        examples=list(options.get("examples") or []),
        requirements=_normalize_requirements(options.get("requirements")),
        timeout=options.get("timeout"),
        metadata=metadata,
        scopes=tuple(options.get("scopes") or ()),
        visible=options.get("visible"),
        func=func,
        is_async=desc.is_async,
        context_params=desc.context_params,
        load_arguments=load,
    )


def _is_v2_model(obj: Any) -> bool:
    return not isinstance(obj, type) and callable(getattr(obj, "model_dump", None))


def _is_v1_model(obj: Any) -> bool:
    return (not isinstance(obj, type) and not _is_v2_model(obj)
            and callable(getattr(obj, "dict", None)) and hasattr(type(obj), "__fields__"))


_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))


def _plain(obj: Any) -> Any:
    """F2's serialization rules: pydantic v2, then v1, then dicts recursively, else as is."""
    kind = type(obj)
    if kind in _JSON_SCALARS:  # JSON's own types are no models: no attribute look-ups
        return obj
    if kind is dict:
        return {k: _plain(v) for k, v in obj.items() if v is not None}
    if kind is list:
        return [_plain(v) for v in obj]
    if _is_v2_model(obj):
        return _plain(obj.model_dump(exclude_none=True, by_alias=True))
    if _is_v1_model(obj):
        return _plain(obj.dict(exclude_none=True, by_alias=True))
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def _read(obj: Any, *keys: str) -> Any:
    for key in keys:
        value = obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)
        if value is not None:
            return _plain(value)
    return None


def tool_from_object(obj: Any) -> Tool:
    """Read a provider's tool object (dict keys or attributes; pydantic models dumped first)."""
    if isinstance(obj, Tool):
        return obj
    data = _plain(obj) if _is_v2_model(obj) or _is_v1_model(obj) else obj
    name = _read(data, "name")
    if not isinstance(name, str) or not name:
        raise ProviderError(f"a provided tool has no name: {type(obj).__name__}")
    schema = _read(data, "inputSchema", "input_schema", "parameters")
    annotations = _read(data, "annotations")
    metadata = {k: v for k in METADATA_OPTIONS if (v := _read(data, k)) is not None}
    version = _read(data, "version") or "1.0.0"
    try:
        parse_version(version)
    except ValueError:
        version = "1.0.0"
    return Tool(
        name=name,
        description=str(_read(data, "description") or ""),
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
        output_schema=_read(data, "outputSchema", "output_schema"),
        title=_read(data, "title"),
        annotations=annotations if isinstance(annotations, dict) and annotations else None,
        version=str(version),
        toolkit=_read(data, "toolkit"),
        category=_read(data, "category"),
        tags=list(_read(data, "tags") or []),
        examples=list(_read(data, "examples") or []),
        requirements=_normalize_requirements(_read(data, "requirements")),
        timeout=_read(data, "timeout"),
        metadata=metadata,
        scopes=tuple(str(s) for s in _read(data, "scopes") or ()),
    )


def resolve_provider(provider: Any) -> list[Any]:
    """F2's resolution: a list is used as is; otherwise call it, awaiting an awaitable result."""
    if isinstance(provider, (list, tuple)):
        return list(provider)
    result = provider()
    if inspect.isawaitable(result):
        result = await_sync(result)
    if result is None:
        return []
    if not isinstance(result, Iterable) or isinstance(result, (str, bytes, Mapping)):
        raise ProviderError(f"tools provider returned {type(result).__name__}, not a list")
    return list(result)


@dataclass
class ToolSet:
    """The tools in force for one request, all versions, in registration order."""

    tools: list[Tool] = field(default_factory=list)
    #: Equal for two sets that would be served identically: the registry's version for
    #: registered tools alone, a digest of every tool otherwise (caches key on it).
    fingerprint: Hashable = None

    def __post_init__(self) -> None:
        #: True when some tool is not for everyone (``scopes`` or ``visible``).
        self.restricted = any(t.scopes or t.visible for t in self.tools)
        #: True when some tool has a ``visible`` predicate (views are then computed per request).
        self.predicated = self.restricted and any(t.visible for t in self.tools)
        self._views: dict[frozenset[str], ToolSet] = {}
        self._latest: list[Tool] | None = None
        if self.fingerprint is None:
            self.fingerprint = ("tools", tuple(t.fingerprint for t in self.tools))
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
        hidden = tuple(sorted((t.name, t.version) for t in self.tools if t not in shown))
        view = ToolSet(shown, fingerprint=(self.fingerprint, hidden))
        if key is not None:
            self._views[key] = view
        return view

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
        self._lock = threading.Lock()
        #: Bumped on every registration; part of every cache key.
        self.version = 0
        #: Keys under which two differently named tools may not meet: (label, key, {key: name}).
        self._unique: list[_UniqueKey] = []

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
        if key in self._keys:
            raise RegistrationError(
                f"tool {tool.name!r} version {tool.version} is already registered; give the new "
                f"one another name or another version="
            )
        _claim_or_raise(tool, self._unique)
        self._keys.add(key)
        self._entries.append(("tool", tool))
        self._static = None
        self.version += 1
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

    @property
    def static(self) -> ToolSet | None:
        """The tools in force when no provider is registered (they cannot change between two
        registrations), else ``None``."""
        return None if self._has_providers else self.resolve()

    def resolve(self) -> ToolSet:
        """The tools in force now. Providers are called (their errors raise ProviderError)."""
        if not self._has_providers:
            if self._static is None:
                self._static = ToolSet([t for _, t in self._entries], fingerprint=("registry", id(self), self.version))
            return self._static
        tools: list[Tool] = []
        seen: set[tuple[str, tuple[int, int, int]]] = set()
        unique: list[_UniqueKey] = [(label, key_of, dict(names)) for label, key_of, names in self._unique]
        for kind, entry in self._entries:
            if kind == "tool":
                candidates = [entry]
            else:
                try:
                    candidates = [self._read_provided(o) for o in resolve_provider(entry)]
                    for bad in [t for t in candidates if not valid_tool_name(t.name)]:
                        log.warning("provided tool %r skipped: a tool name is 1-128 ASCII letters, "
                                    "digits, '_', '-' and '.', without '..'", bad.name)
                    candidates = [t for t in candidates if valid_tool_name(t.name)]
                except ProviderError:
                    raise
                except Exception as exc:
                    raise ProviderError(f"tools provider {entry!r} failed: {exc}") from exc
            for tool in candidates:
                key = (tool.name, _version(tool.version))
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
        return ToolSet(tools)

    def _read_provided(self, obj: Any) -> Tool:
        """:func:`tool_from_object`, once per distinct content of a plain dict (a provider called
        on every request usually answers the same dicts): the same ``Tool`` object comes back, with
        its fingerprint and wire dumps already made. Anything else is read every time."""
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
        return tool

    #: How many distinct provided dicts are remembered (the oldest are forgotten first).
    MAX_PROVIDED = 50_000


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
