"""How many tool calls may run at once in one worker process: :class:`Slots`."""

from __future__ import annotations

import threading

from ..errors import Busy


class Slots:
    """How many tool calls may run at once in this worker process (0: no limit).

    Over the limit a call is refused at once with :class:`~flask_tooldiscovery.errors.Busy`, so
    discovery and health always find a free thread while slow tools run.
    """

    def __init__(self, limit: int, retry_after: float) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self._lock = threading.Lock()  # a count under a lock: never waits, unlike a semaphore's condition
        self._held = 0

    def hold(self) -> Held:
        """Hold one slot for the ``with`` block."""
        return Held(self)

    def take(self) -> None:
        """Take a slot, or :class:`~flask_tooldiscovery.errors.Busy` when none is free."""
        if self.limit:
            with self._lock:
                if self._held >= self.limit:
                    raise Busy(retry_after=self.retry_after)
                self._held += 1

    def free(self) -> None:
        """Give a slot back."""
        if self.limit:
            with self._lock:
                self._held -= 1


class Held:
    """One held call slot (:meth:`Slots.hold`): taken on entry, freed on exit."""

    __slots__ = ("_slots",)

    def __init__(self, slots: Slots) -> None:
        self._slots = slots

    def __enter__(self) -> None:
        self._slots.take()

    def __exit__(self, *exc: object) -> None:
        self._slots.free()


__all__ = ["Held", "Slots"]
