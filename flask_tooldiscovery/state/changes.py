"""Changes every worker hears of: a list (tools, prompts, resources) changed, or one resource did.

A :class:`Change` published in one worker reaches every open listener of every worker that shares
the state store (:mod:`.store`, one channel): in process (:data:`LOCAL`, the default: the listeners
of this process) or through Redis pub/sub (``TOOLDISCOVERY_STATE_STORAGE_URI``, one channel per
database). A change is a level trigger ("this
changed, read it again if you care"): nothing is kept for a listener that is not listening, and a
listener that falls behind loses the oldest changes first. What a change means to a client is the
dialect's business.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol

from ..observe.logs import log
from .memory import MemoryStore
from .redis_store import shared
from .store import Inbox, StateStore

REDIS_CHANNEL = "flask-tooldiscovery:changes"
Kind = Literal["tools", "prompts", "resources", "resource"]
KINDS: tuple[Kind, ...] = ("tools", "prompts", "resources", "resource")


@dataclass(frozen=True)
class Change:
    """``kind``: ``tools``, ``prompts`` or ``resources`` (that list changed) or ``resource`` (the
    resource at ``uri`` changed)."""

    kind: Kind
    uri: str | None = None

    def to_bytes(self) -> bytes:
        return json.dumps({"kind": self.kind, "uri": self.uri}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Change | None:
        """The change ``data`` holds (``None``: not one, e.g. written by something else)."""
        try:
            raw = json.loads(data)
        except ValueError:
            return None
        kind, uri = (raw.get("kind"), raw.get("uri")) if isinstance(raw, dict) else (None, None)
        if kind not in KINDS or (kind == "resource") != isinstance(uri, str):
            return None
        return cls(kind, uri if kind == "resource" else None)


class Listener(Protocol):
    def get(self, timeout: float) -> Change | None:
        """The next change, or ``None`` after ``timeout`` seconds without one."""


class _Heard:
    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    def get(self, timeout: float) -> Change | None:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = max(deadline - time.monotonic(), 0.0)
            try:
                data = self.inbox.get(left)
            except Exception as exc:  # redis.RedisError: unreachable
                log.warning("flask-tooldiscovery: state storage unreachable while listening for changes: %s",
                            type(exc).__name__)
                time.sleep(min(left, 1.0))
                return None
            change = None if data is None else Change.from_bytes(data)
            if change is not None:
                return change
            if data is None or time.monotonic() >= deadline:
                return None


class ChangeBus:
    """The listeners of every worker sharing ``store`` (its channel)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._listening = 0
        self._lock = threading.Lock()

    @property
    def listening(self) -> int:
        """How many listen in this process now."""
        with self._lock:
            return self._listening

    def publish(self, change: Change) -> bool:
        """Tell every listener; False when the change surely reached nobody (storage unreachable)."""
        try:
            self.store.publish(REDIS_CHANNEL, change.to_bytes())
        except Exception as exc:
            log.warning("flask-tooldiscovery: state storage unreachable, change not announced: %s",
                        type(exc).__name__)
            return False
        return True

    @contextmanager
    def listen(self) -> Iterator[Listener]:
        """Hear every change published while the ``with`` block runs (from the moment it starts)."""
        with self.store.listen(REDIS_CHANNEL) as inbox:
            with self._lock:
                self._listening += 1
            try:
                yield _Heard(inbox)
            finally:
                with self._lock:
                    self._listening -= 1


#: The listeners of this process.
LOCAL = ChangeBus(MemoryStore())


@functools.cache
def _shared(uri: str) -> ChangeBus:
    return ChangeBus(shared(uri))


def for_uri(uri: str | None) -> ChangeBus:
    """The bus of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one per URI and process."""
    return _shared(uri) if uri else LOCAL


__all__ = ["KINDS", "LOCAL", "Change", "ChangeBus", "Kind", "Listener", "for_uri"]
