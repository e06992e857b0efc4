"""Who is told when a registry changes (a tool, a resource, a prompt added after the app started).

A registry holds a :class:`Watchers`; the serving core of each app that uses it watches it to
announce the change to clients. Each watcher is a bound method held weakly: an app that is gone
is not kept alive by the registry it used, and is no longer told.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable

log = logging.getLogger("flask_tooldiscovery")


class Watchers:
    """Bound methods called (in the changing thread) after each change."""

    def __init__(self) -> None:
        self._methods: list[weakref.WeakMethod[Callable[[], object]]] = []
        self._lock = threading.Lock()

    def watch(self, method: Callable[[], object]) -> None:
        """Call ``method`` (a bound method) after each change while its object lives."""
        with self._lock:
            self._methods.append(weakref.WeakMethod(method))

    def notify(self) -> None:
        """Tell every living watcher; one that raises is logged and does not stop the others."""
        with self._lock:
            refs = list(self._methods)
            self._methods = [ref for ref in refs if ref() is not None]
        for ref in refs:
            method = ref()
            if method is None:
                continue
            try:
                method()
            except Exception:  # a watcher's failure is not the registration's
                log.exception("flask-tooldiscovery: a registry watcher failed")


class Checks:
    """Bound methods a registry asks about each thing before it is registered: one that raises
    refuses it (the error reaches the caller). Held weakly, as :class:`Watchers` are."""

    def __init__(self) -> None:
        self._methods: list[weakref.WeakMethod[Callable[[object], object]]] = []
        self._lock = threading.Lock()

    def add(self, method: Callable[[object], object]) -> None:
        """Ask ``method`` (a bound method) about each new thing while its object lives."""
        with self._lock:
            self._methods = [ref for ref in self._methods if ref() is not None]
            self._methods.append(weakref.WeakMethod(method))

    def ask(self, thing: object) -> None:
        """Ask every living check about ``thing``; the first that raises stops the others."""
        with self._lock:
            refs = list(self._methods)
        for ref in refs:
            method = ref()
            if method is not None:
                method(thing)


__all__ = ["Checks", "Watchers"]
