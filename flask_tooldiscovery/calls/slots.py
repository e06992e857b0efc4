"""How many tool calls may run at once in one worker process: :class:`Slots`."""

from __future__ import annotations

import threading

from ..errors import Busy


class Slots:
    """How many tool calls may run at once in this worker process (0: no limit).

    Over the limit a call is refused at once with :class:`~flask_tooldiscovery.errors.Busy`, so
    discovery and health always find a free thread while slow tools run.

    The free slots are tokens in a list: a call takes one with ``list.pop`` and gives it back with
    ``list.append``, each atomic, so no call waits on a lock nor takes one (two ``with lock``
    blocks cost a plain call about 2%). Only a change of the limit takes the lock: the gunicorn
    hook sets it once the worker has forked, before it serves; were calls holding slots then,
    they stay counted (a lowered limit owes the slots held past it, kept back as they are freed).
    """

    def __init__(self, limit: int, retry_after: float) -> None:
        self.retry_after = retry_after
        self._lock = threading.Lock()  # changes of the limit, and slots owed to a lowered one
        self._free: list[None] = []
        self._owed = 0
        self._limit = 0
        self.limit = limit

    @property
    def limit(self) -> int:
        """Tool calls that may run at once (0: no limit)."""
        return self._limit

    @limit.setter
    def limit(self, limit: int) -> None:
        with self._lock:
            held = self._limit - len(self._free) + self._owed if self._limit else 0
            self._free[:] = [None] * max(0, limit - held)
            self._owed = max(0, held - limit) if limit else 0
            self._limit = limit

    def hold(self) -> Held:
        """Hold one slot for the ``with`` block."""
        return Held(self)

    def take(self) -> None:
        """Take a slot, or :class:`~flask_tooldiscovery.errors.Busy` when none is free."""
        if self._limit:
            try:
                self._free.pop()
            except IndexError:
                raise Busy(retry_after=self.retry_after) from None

    def free(self) -> None:
        """Give a slot back."""
        if self._limit:
            if self._owed:
                self._repay()
            else:
                self._free.append(None)

    def _repay(self) -> None:
        with self._lock:
            if self._owed:
                self._owed -= 1
                return
        self._free.append(None)


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
