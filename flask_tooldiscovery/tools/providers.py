"""Tools providers and the tool objects they return.

A provider (F2 "ToolsProvider") is a list, a sync callable or an async callable returning tool
objects: dicts, objects with attributes, or pydantic v2 / v1 models. Callables are resolved on
every request; the library never caches their answer, only what it read of it (the registry reads
an unchanged dict, or a :class:`ProvidedTools` of an unchanged version, once).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from typing import Any

from ..errors import ProviderError as ProviderError
from ..schema.json_schema import JSON_SCALARS
from .function_tools import normalize_requirements
from .model import METADATA_OPTIONS, Tool, parse_version

ToolsProvider = list[Any] | Callable[[], Any]


class ProvidedTools(list[Any]):
    """A provider's answer that says its version: ``ProvidedTools(tools, version=etag)``. While a
    provider answers the same ``version`` (any hashable but ``None``: an ETag, an ``updated_at``, a
    counter), the registry reuses the tools it read from the first answer of that version without
    looking at them again; a new version is read afresh on the request that gets it. Change the
    version whenever a tool changes, even in place: an unchanged version is taken at its word."""

    def __init__(self, tools: Iterable[Any] = (), version: Hashable = None) -> None:
        super().__init__(tools)
        self.version = version


def _is_v2_model(obj: Any) -> bool:
    return not isinstance(obj, type) and callable(getattr(obj, "model_dump", None))


def _is_v1_model(obj: Any) -> bool:
    return (not isinstance(obj, type) and not _is_v2_model(obj)
            and callable(getattr(obj, "dict", None)) and hasattr(type(obj), "__fields__"))


def _plain(obj: Any) -> Any:
    """F2's serialization rules: pydantic v2, then v1, then dicts recursively, else as is."""
    kind = type(obj)
    if kind in JSON_SCALARS:  # JSON's own types are no models: no attribute look-ups
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
        requirements=normalize_requirements(_read(data, "requirements")),
        timeout=_read(data, "timeout"),
        metadata=metadata,
        scopes=tuple(str(s) for s in _read(data, "scopes") or ()),
    )


#: Waits for an awaitable from a sync caller and returns its result.
Awaiter = Callable[[Awaitable[Any]], Any]
#: What awaits an async provider's answer: the runtime's async bridge, which installs itself here
#: (:func:`await_with`) when it is imported, as the package's face does first.
AWAITER: list[Awaiter] = []


def await_with(awaiter: Awaiter) -> None:
    """Await async providers' answers with ``awaiter`` from now on."""
    AWAITER[:] = [awaiter]


def resolve_provider(provider: Any) -> list[Any]:
    """F2's resolution: a list is used as is (the list itself: the registry compares it with what
    it read last, and copies it only to read it again); otherwise call it, awaiting an awaitable
    result (a :class:`ProvidedTools` answer comes back as it is, its version with it)."""
    if type(provider) is list:
        return provider
    if isinstance(provider, (list, tuple)):
        return list(provider)
    result = provider()
    if inspect.isawaitable(result):
        result = AWAITER[0](result)
    if isinstance(result, ProvidedTools):
        return result
    if result is None:
        return []
    if not isinstance(result, Iterable) or isinstance(result, (str, bytes, Mapping)):
        raise ProviderError(f"tools provider returned {type(result).__name__}, not a list")
    return result if type(result) is list else list(result)
