"""How a ``TOOLDISCOVERY_*`` value is read: :class:`SettingsError` and one parser per kind of value.

A parser is ``parse(key, value) -> parsed``: it takes the full key (for its message) and the
config's value, and raises :class:`SettingsError` naming the key when the value cannot be used.
Booleans and numbers accept the strings environment variables carry (``"true"``, ``"0"``...).
The core's keys (:mod:`.settings`) and every dialect's block use them.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from .errors import SettingsError as SettingsError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_bool(key: str, value: Any) -> bool:
    """``True``/``False``, or one of the usual strings; anything else is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise SettingsError(f"{key} must be a boolean (true/false, 1/0, yes/no, on/off), not {value!r}")


def parse_int(key: str, value: Any, minimum: int = 0) -> int:
    """A whole number (or its string) not below ``minimum``."""
    if isinstance(value, bool):
        raise SettingsError(f"{key} must be a whole number, not {value!r}")
    try:
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{key} must be a whole number, not {value!r}") from None
    if isinstance(value, float) and value != number:
        raise SettingsError(f"{key} must be a whole number, not {value!r}")
    if number < minimum:
        raise SettingsError(f"{key} must be at least {minimum}, not {number}")
    return number


def parse_float(key: str, value: Any, minimum: float = 0.0) -> float:
    """A number (or its string) not below ``minimum``."""
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{key} must be a number, not {value!r}") from None
    if isinstance(value, bool) or number != number or number < minimum:
        raise SettingsError(f"{key} must be a number of at least {minimum:g}, not {value!r}")
    return number


def parse_str(key: str, value: Any) -> str | None:
    """A string, or ``None`` for unset (an empty string counts as unset)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{key} must be a string, not {type(value).__name__}")
    return value or None


def parse_base64(key: str, value: Any) -> str | None:
    """A non-empty base64 string (a secret's bytes), or ``None`` for unset; never echoed in the error."""
    text = parse_str(key, value)
    if text is None:
        return None
    try:
        if base64.b64decode(text.strip(), validate=True):
            return text.strip()
    except (binascii.Error, ValueError):
        pass
    raise SettingsError(f"{key} must be base64 (standard alphabet, padded) of a non-empty secret")


def parse_list(key: str, value: Any) -> tuple[str, ...]:
    """A list of strings, or one comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise SettingsError(f"{key} must be a list of strings or a comma-separated string")
    items = []
    for item in value:
        if not isinstance(item, str):
            raise SettingsError(f"{key} must hold strings, not {item!r}")
        if item.strip():
            items.append(item.strip())
    return tuple(dict.fromkeys(items))


def parse_names(key: str, value: Any) -> tuple[str, ...]:
    """A list of names (no whitespace in one), or one comma-separated string."""
    names = parse_list(key, value)
    if wrong := [name for name in names if len(name.split()) != 1]:
        raise SettingsError(f"{key} holds names (a list, or comma-separated), not {wrong[0]!r}")
    return names


def parse_prefix(key: str, value: Any) -> str:
    """A URL prefix: ``""`` or a path starting with ``/`` (a trailing ``/`` is dropped)."""
    text = parse_str(key, value) or ""
    if text and not text.startswith("/"):
        raise SettingsError(f"{key} must start with '/', not {text!r}")
    return text.rstrip("/")


def parse_mapping(key: str, value: Any) -> Mapping[str, Any]:
    """A dict (read-only once parsed)."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise SettingsError(f"{key} must be a dict, not {type(value).__name__}")
    return MappingProxyType(dict(value))


def parse_categories(key: str, value: Any) -> tuple[Mapping[str, Any], ...]:
    """A list of ``{"id", "name", ...}`` dicts."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise SettingsError(f"{key} must be a list of dicts with 'id' and 'name'")
    out = []
    for item in value:
        if not isinstance(item, Mapping) or not item.get("id") or not item.get("name"):
            raise SettingsError(f"{key}: every category needs 'id' and 'name', not {item!r}")
        out.append(MappingProxyType(dict(item)))
    return tuple(out)


Parser = Callable[[str, Any], Any]


def whole_number(minimum: int = 0) -> Callable[[str, Any], int]:
    """A parser of whole numbers not below ``minimum``."""
    return lambda key, value: parse_int(key, value, minimum)


def number(minimum: float = 0.0) -> Callable[[str, Any], float]:
    """A parser of numbers not below ``minimum``."""
    return lambda key, value: parse_float(key, value, minimum)


def choice(*choices: str) -> Callable[[str, Any], str]:
    """A parser of one of ``choices`` (case-insensitive, answered lower-case)."""

    def parse(key: str, value: Any) -> str:
        text = str(value or "").strip().lower()
        if text not in choices:
            raise SettingsError(f"{key} must be one of {', '.join(choices)}, not {value!r}")
        return text

    return parse


def matching(pattern: str, what: str, *, lower: bool = False) -> Callable[[str, Any], str]:
    """A parser of strings matching ``pattern`` (``what`` says what one is, for the message)."""
    compiled = re.compile(pattern)

    def parse(key: str, value: Any) -> str:
        text = (parse_str(key, value) or "").strip()
        text = text.lower() if lower else text
        if not compiled.fullmatch(text):
            raise SettingsError(f"{key} must be {what}, not {value!r}")
        return text

    return parse


def parse_switch_or_size(key: str, value: Any) -> int | None:
    """Off (``None``: unset, false), always on (``0``: true) or on past a size (a whole number
    above 0: on when there are more than that many)."""
    if value is None or value is False or (type(value) is int and value == 0) or (
            isinstance(value, str) and value.strip().lower() in ("", "false", "0")):
        return None
    if value is True or (isinstance(value, str) and value.strip().lower() == "true"):
        return 0
    return parse_int(key, value, 1)


def optional(parse: Parser) -> Parser:
    """``parse``, with ``None`` for an unset or empty value."""

    def parse_or_none(key: str, value: Any) -> Any:
        return None if value is None or value == "" else parse(key, value)

    return parse_or_none


def parse_url(key: str, value: Any, *, query: bool = False) -> str | None:
    """An absolute http(s) URL without a fragment (nor a query unless ``query``), or ``None``."""
    text = (parse_str(key, value) or "").strip()
    if not text:
        return None
    try:
        parts = urlsplit(text)
        wrong = parts.scheme not in ("http", "https") or not parts.hostname or "#" in text \
            or bool(parts.query and not query)
    except ValueError:
        wrong = True
    if wrong:
        what = "" if query else "query or "
        raise SettingsError(f"{key} must be an absolute http(s) URL without {what}fragment, not {value!r}")
    return text


#: The URL schemes of a Redis server, and how to install the client they need.
REDIS_SCHEMES = ("redis", "rediss", "unix")
REDIS_INSTALL = "pip install 'flask-tooldiscovery[redis]'"


def parse_redis_url(key: str, value: Any) -> str:
    """A Redis URL (``redis://``, ``rediss://``, ``unix://``) this process can use (redis-py
    installed); ``""`` when unset."""
    uri = parse_str(key, value) or ""
    if not uri:
        return ""
    if urlsplit(uri).scheme not in REDIS_SCHEMES:
        raise SettingsError(f"{key} must be a redis://, rediss:// or unix:// URL, not {uri!r}")
    try:
        import redis  # noqa: F401
    except ImportError:
        raise SettingsError(f"{key} is set, which needs redis-py: {REDIS_INSTALL}") from None
    return uri


def parse_urls(key: str, value: Any) -> tuple[str, ...]:
    """A list of URLs (see :func:`parse_url`), or one comma-separated string."""
    return tuple(parse_url(key, item) or "" for item in parse_list(key, value))


def parse_url_with_query(key: str, value: Any) -> str | None:
    """An absolute http(s) URL that may have a query (see :func:`parse_url`), or ``None``."""
    return parse_url(key, value, query=True)


_ICON_SRC = re.compile(r"^(https?://[^\s]+|data:[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+(;[^,\s]*)?,[^\s]*)$", re.IGNORECASE)
_ICON_MIME = re.compile(r"^image/[A-Za-z0-9][A-Za-z0-9.+-]*$")
_ICON_SIZE = re.compile(r"^(any|[1-9][0-9]*x[1-9][0-9]*)$")
_ICON_KEYS = ("src", "mimeType", "sizes", "theme")


def icons(value: Any) -> tuple[dict[str, Any], ...]:
    """Icons as MCP's ``Icon`` (2025-11-25) writes them: ``{"src", "mimeType"?, "sizes"?, "theme"?}``,
    ``src`` an http(s) URL or a ``data:`` URI (a bare string is taken as ``src``); ``ValueError``
    saying what is wrong otherwise. Kept in the order given (copy one before changing it)."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValueError("icons are a list of {'src', 'mimeType', 'sizes', 'theme'} dicts (or URL strings)")
    out = []
    for item in value:
        icon = {"src": item} if isinstance(item, str) else dict(item) if isinstance(item, Mapping) else None
        if icon is None or sorted(set(icon) - set(_ICON_KEYS)):
            raise ValueError(f"an icon is a dict with keys among {', '.join(_ICON_KEYS)} (or a URL), not {item!r}")
        src, mime, sizes, theme = (icon.get(k) for k in _ICON_KEYS)
        if not isinstance(src, str) or not _ICON_SRC.fullmatch(src):
            raise ValueError(f"an icon's src is an http(s) URL or a data: URI, not {src!r}")
        if mime is not None and (not isinstance(mime, str) or not _ICON_MIME.fullmatch(mime)):
            raise ValueError(f"an icon's mimeType is an image MIME type (such as 'image/png'), not {mime!r}")
        if sizes is not None and (isinstance(sizes, str) or not isinstance(sizes, Iterable)
                                  or not all(isinstance(s, str) and _ICON_SIZE.fullmatch(s) for s in sizes)):
            raise ValueError(f"an icon's sizes are a list of 'WxH' strings (such as '48x48') or 'any', not {sizes!r}")
        if theme is not None and theme not in ("light", "dark"):
            raise ValueError(f"an icon's theme is 'light' or 'dark', not {theme!r}")
        if sizes is not None:
            icon["sizes"] = list(sizes)
        out.append({k: icon[k] for k in _ICON_KEYS if icon.get(k) is not None})
    return tuple(out)


def parse_icons(key: str, value: Any) -> tuple[dict[str, Any], ...]:
    """A list of icons (see :func:`icons`)."""
    try:
        return icons(value)
    except ValueError as exc:
        raise SettingsError(f"{key}: {exc}") from None


#: A toolset's name: it is a segment of its URLs (``/mcp/x/<name>``), so letters, digits, ``-`` and ``_``.
TOOLSET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
#: The dialects a toolset is mounted under when it names none.
TOOLSET_DIALECTS = ("mcp",)


@dataclass(frozen=True)
class Toolset:
    """A named part of the tools, mounted under each of ``dialects`` at a URL of its own
    (``TOOLDISCOVERY_TOOLSETS``, ``discovery.mount_toolset``): the tools with one of ``tags``."""

    name: str
    tags: frozenset[str]
    dialects: tuple[str, ...] = TOOLSET_DIALECTS
    title: str | None = None
    description: str | None = None


def toolset(key: str, name: Any, value: Any) -> Toolset:
    """The toolset ``name`` from its options (``tags``, ``dialects``, ``title``, ``description``),
    or :class:`SettingsError` saying what is wrong, under ``key``."""
    if not isinstance(name, str) or not TOOLSET_NAME.fullmatch(name):
        raise SettingsError(f"{key}: a toolset name is part of its URLs: letters, digits, '-' and '_' (at most 64, "
                            f"starting with a letter or digit), not {name!r}")
    if not isinstance(value, Mapping):
        raise SettingsError(f"{key}[{name!r}] must be a dict such as {{'tags': ['issues']}}, not {value!r}")
    if unknown := sorted(set(value) - {"tags", "dialects", "title", "description"}):
        raise SettingsError(f"{key}[{name!r}]: unknown option(s) {', '.join(map(repr, unknown))}; a toolset "
                            "takes tags, dialects, title and description")
    tags = parse_list(f"{key}[{name!r}]['tags']", value.get("tags"))
    if not tags:
        raise SettingsError(f"{key}[{name!r}] needs 'tags': the tags of its tools (a non-empty list)")
    dialects = parse_names(f"{key}[{name!r}]['dialects']", value.get("dialects", TOOLSET_DIALECTS))
    if not dialects:
        raise SettingsError(f"{key}[{name!r}]['dialects'] is empty: name the dialects it is mounted under")
    title, description = value.get("title"), value.get("description")
    for option, text in (("title", title), ("description", description)):
        if text is not None and not isinstance(text, str):
            raise SettingsError(f"{key}[{name!r}][{option!r}] must be a string, not {text!r}")
    return Toolset(name, frozenset(tags), tuple(d.lower() for d in dialects), title or None, description or None)


def parse_toolsets(key: str, value: Any) -> Mapping[str, Toolset]:
    """A dict of toolsets by name (see :func:`toolset`)."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise SettingsError(f"{key} must be a dict of toolsets, such as {{'issues': {{'tags': ['issues']}}}}")
    return MappingProxyType({name: toolset(key, name, options) for name, options in value.items()})


__all__ = [
    "TOOLSET_DIALECTS", "TOOLSET_NAME", "Parser", "SettingsError", "Toolset", "choice", "icons", "matching",
    "number", "optional", "parse_base64", "parse_bool", "parse_categories", "parse_float", "parse_icons", "parse_int",
    "parse_list", "parse_mapping", "parse_names", "parse_prefix", "parse_str", "parse_toolsets", "parse_url",
    "parse_url_with_query", "parse_urls", "toolset", "whole_number",
]
