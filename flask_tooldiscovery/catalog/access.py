"""Who may see a prompt or a resource: the ``scopes`` and ``icons`` options both registrations
take, read and checked the same way, and the visibility rule both apply."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..settings_parsers import icons as read_icons
from ..tools.function_tools import RegistrationError

if TYPE_CHECKING:
    from ..tools.model import Identity


def scopes_and_icons(label: str, options: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """The registration's ``scopes`` (a list of strings) and ``icons`` (as MCP lists them);
    :class:`~flask_tooldiscovery.tools.function_tools.RegistrationError` naming ``label`` when either is malformed."""
    scopes = options.get("scopes") or ()
    if isinstance(scopes, str) or not all(isinstance(s, str) for s in scopes):
        raise RegistrationError(f"{label}: scopes must be a list of strings")
    try:
        icons = read_icons(options.get("icons"))
    except ValueError as exc:
        raise RegistrationError(f"{label}: {exc}") from None
    return tuple(scopes), icons


def holds_all(scopes: Iterable[str], identity: Identity | None) -> bool:
    """Whether ``identity`` holds every one of ``scopes`` (nobody holds any scope)."""
    held = set(identity.scopes) if identity is not None else set()
    return set(scopes) <= held
