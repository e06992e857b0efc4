"""The MCP protocol revisions this server speaks, their two eras, and what each revision has.

Every revision is named here once, and every "does this revision have X" is answered here; the
rest of the dialect asks these predicates instead of comparing dates. A revision is its date
(``"2025-06-18"``), and dates compare as text in time order.

The two eras:

- the **handshake era** (2024-11-05 .. 2025-11-25): a client starts with ``initialize``, declares
  its capabilities there once, and gets an ``Mcp-Session-Id`` (:mod:`.sessions`); a call asks its
  caller on its own SSE stream;
- the **stateless era** (2026-07-28): no handshake; every request carries its revision and client
  capabilities in the ``params._meta`` envelope and the routing headers, ``server/discover``
  replaces ``initialize``, and a call asks its caller in rounds of ``InputRequiredResult``.
"""

from __future__ import annotations

from typing import Literal

R2024_11_05 = "2024-11-05"
#: Streamable HTTP (a call's SSE stream), progress messages, audio content, JSON-RPC batches.
R2025_03_26 = "2025-03-26"
#: Elicitation (form, no ``mode``), resource links, OAuth resource servers; batches removed.
R2025_06_18 = "2025-06-18"
#: Elicitation ``mode``, experimental tasks (``params.task``, ``tasks/result``).
R2025_11_25 = "2025-11-25"
#: The stateless era: ``server/discover``, the ``_meta`` envelope, routing headers, input rounds.
R2026_07_28 = "2026-07-28"

#: The handshake era's revisions, oldest first.
HANDSHAKE_REVISIONS = (R2024_11_05, R2025_03_26, R2025_06_18, R2025_11_25)
#: The stateless era's revisions, oldest first.
STATELESS_REVISIONS = (R2026_07_28,)
#: Every revision served, oldest first.
SUPPORTED = HANDSHAKE_REVISIONS + STATELESS_REVISIONS
#: The newest revision (its content blocks are the newest).
LATEST = STATELESS_REVISIONS[-1]
#: What ``initialize`` answers a client asking for a revision it does not know.
LATEST_HANDSHAKE = HANDSHAKE_REVISIONS[-1]
#: The revision of a request that names none (the streamable HTTP transport's rule).
DEFAULT = R2025_03_26

Era = Literal["handshake", "stateless"]
HANDSHAKE: Era = "handshake"
STATELESS: Era = "stateless"


def has_batches(revision: str) -> bool:
    """Whether ``revision`` has JSON-RPC batches (2025-03-26; gone from 2025-06-18 on)."""
    return revision < R2025_06_18


def streams_requests(revision: str) -> bool:
    """Whether a handshake-era call's own SSE stream may carry requests to its client (streamable
    HTTP, 2025-03-26 .. 2025-11-25; the stateless era asks in rounds instead)."""
    return R2025_03_26 <= revision < R2026_07_28


def has_audio_content(revision: str) -> bool:
    """Whether ``revision`` has ``AudioContent`` blocks (2025-03-26 on; before, audio is embedded)."""
    return revision >= R2025_03_26


def has_resource_links(revision: str) -> bool:
    """Whether ``revision`` has ``ResourceLink`` content (2025-06-18 on; before, an embedded ``text/uri-list``)."""
    return revision >= R2025_06_18


def has_progress_message(revision: str) -> bool:
    """Whether ``revision``'s progress notifications have a ``message``."""
    return revision >= R2025_03_26


def has_elicitation(revision: str) -> bool:
    """Whether ``revision`` has ``elicitation/create``."""
    return revision >= R2025_06_18


def has_elicitation_mode(revision: str) -> bool:
    """Whether ``revision``'s ``elicitation/create`` names its ``mode`` (``form``)."""
    return revision >= R2025_11_25


def has_tasks(revision: str) -> bool:
    """Whether ``revision`` has tasks (2025-11-25's experimental ones, the stateless era's extension)."""
    return revision >= R2025_11_25


def has_handshake_tasks(revision: str) -> bool:
    """Whether ``revision`` has 2025-11-25's experimental tasks (``params.task``, ``tasks/result``,
    the ``tasks`` capability), which the stateless era replaced by its tasks extension."""
    return R2025_11_25 <= revision < R2026_07_28


def logs_by_default(revision: str) -> bool:
    """Whether a streamed call that names no log level gets ``info`` and above (the handshake era;
    the stateless era sends log lines only to calls that name a level)."""
    return revision < R2026_07_28


def disconnect_cancels(revision: str) -> bool:
    """Whether a client closing a call's stream cancels the call (the stateless era's MUST; before
    it a disconnection is no cancellation)."""
    return revision >= R2026_07_28


def has_cache_hints(revision: str) -> bool:
    """Whether ``revision``'s results carry ``ttlMs`` and ``cacheScope``."""
    return revision >= R2026_07_28


def not_found_is_invalid_params(revision: str) -> bool:
    """Whether an unknown resource is -32602 (SEP-2164, the stateless era) rather than -32002."""
    return revision >= R2026_07_28


__all__ = [
    "DEFAULT",
    "HANDSHAKE",
    "HANDSHAKE_REVISIONS",
    "LATEST",
    "LATEST_HANDSHAKE",
    "R2024_11_05",
    "R2025_03_26",
    "R2025_06_18",
    "R2025_11_25",
    "R2026_07_28",
    "STATELESS",
    "STATELESS_REVISIONS",
    "SUPPORTED",
    "Era",
    "disconnect_cancels",
    "has_batches",
    "has_cache_hints",
    "has_elicitation",
    "has_elicitation_mode",
    "has_handshake_tasks",
    "has_progress_message",
    "has_tasks",
    "logs_by_default",
    "not_found_is_invalid_params",
    "streams_requests",
]
