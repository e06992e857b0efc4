"""Changes every worker hears of: a list (tools, prompts, resources) changed, or one resource did.

A :class:`Change` published in one worker reaches every open listener of every worker that shares
the state store: in process (:data:`LOCAL`, the default: the listeners of this process) or through
Redis pub/sub (``TOOLDISCOVERY_STATE_STORAGE_URI``, one channel per database). A change is a level trigger ("this
changed, read it again if you care"): nothing is kept for a listener that is not listening, and a
listener that falls behind loses the oldest changes first. What a change means to a client is the
dialect's business.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..observe.logs import log
from .store import redis_client

REDIS_CHANNEL = "flask-tooldiscovery:changes"
#: Changes a listener of this process holds before dropping the oldest.
BACKLOG = 1024
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


class ChangeBus(Protocol):
    def publish(self, change: Change) -> bool:
        """Tell every listener; False when the change surely reached nobody (storage unreachable)."""

    def listen(self) -> AbstractContextManager[Listener]:
        """Hear every change published while the ``with`` block runs (from the moment it starts)."""


class _Queue:
    def __init__(self) -> None:
        self.items: queue.Queue[Change] = queue.Queue(BACKLOG)

    def put(self, change: Change) -> None:
        while True:
            try:
                self.items.put_nowait(change)
                return
            except queue.Full:
                with suppress(queue.Empty):
                    self.items.get_nowait()

    def get(self, timeout: float) -> Change | None:
        try:
            return self.items.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None


class LocalBus:
    """The listeners of this process."""

    def __init__(self) -> None:
        self._listeners: set[_Queue] = set()
        self._lock = threading.Lock()

    @property
    def listening(self) -> int:
        """How many listen in this process now."""
        with self._lock:
            return len(self._listeners)

    def publish(self, change: Change) -> bool:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.put(change)
        return True

    @contextmanager
    def listen(self) -> Iterator[Listener]:
        box = _Queue()
        with self._lock:
            self._listeners.add(box)
        try:
            yield box
        finally:
            with self._lock:
                self._listeners.discard(box)


class _Subscribed:
    def __init__(self, pubsub: Any) -> None:
        self.pubsub = pubsub

    def get(self, timeout: float) -> Change | None:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = deadline - time.monotonic()
            try:
                message = self.pubsub.get_message(ignore_subscribe_messages=True, timeout=max(left, 0.0))
            except Exception as exc:  # redis.RedisError: unreachable
                log.warning("flask-tooldiscovery: state storage unreachable while listening for changes: %s",
                            type(exc).__name__)
                time.sleep(min(max(left, 0.0), 1.0))
                return None
            if message is not None and message.get("type") == "message":
                change = Change.from_bytes(message["data"])
                if change is not None:
                    return change
            if time.monotonic() >= deadline:
                return None


class RedisBus:
    """The listeners of every worker and host sharing one Redis (its pub/sub)."""

    def __init__(self, uri: str) -> None:
        self.client = redis_client(uri)
        # pub/sub channels ignore the database number: the channel names it, so apps on one Redis
        # with different databases hear only their own changes
        self.channel = f"{REDIS_CHANNEL}:{self.client.connection_pool.connection_kwargs.get('db', 0)}"

    def publish(self, change: Change) -> bool:
        try:
            self.client.publish(self.channel, change.to_bytes())
        except Exception as exc:
            log.warning("flask-tooldiscovery: state storage unreachable, change not announced: %s",
                        type(exc).__name__)
            return False
        return True

    @contextmanager
    def listen(self) -> Iterator[Listener]:
        pubsub = self.client.pubsub()
        try:
            pubsub.subscribe(self.channel)
            deadline = time.monotonic() + 5  # listening from now on: Redis confirmed the subscription
            while time.monotonic() < deadline:
                message = pubsub.get_message(timeout=0.5)
                if message is not None and message.get("type") == "subscribe":
                    break
            yield _Subscribed(pubsub)
        finally:
            with suppress(Exception):
                pubsub.close()


LOCAL = LocalBus()
_SHARED: dict[str, RedisBus] = {}
_SHARED_LOCK = threading.Lock()


def for_uri(uri: str | None) -> ChangeBus:
    """The bus of a ``TOOLDISCOVERY_STATE_STORAGE_URI`` (unset: :data:`LOCAL`), one per URI and process."""
    if not uri:
        return LOCAL
    with _SHARED_LOCK:
        return _SHARED.get(uri) or _SHARED.setdefault(uri, RedisBus(uri))


__all__ = ["KINDS", "LOCAL", "Change", "ChangeBus", "Kind", "Listener", "LocalBus", "RedisBus", "for_uri"]
