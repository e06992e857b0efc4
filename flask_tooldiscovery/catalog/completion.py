"""Suggestions for the value of one argument of a prompt or one variable of a resource template
(MCP ``completion/complete``), while a person types it.

A completer is declared beside the prompt or the resource, ``complete={"city": suggest_city}``:
``suggest_city(value, arguments)`` gets what was typed so far and the arguments already chosen
(``{name: value}``; a :class:`~flask_tooldiscovery.tools.model.ToolContext` parameter, if it has
one, receives the caller), sync or async, and returns the suggestions, best first. Without one,
an argument annotated with a
``Literal`` or an ``Enum`` of strings is completed from its values (those starting with what was
typed, case-insensitively). At most :data:`MAX_VALUES` go back; ``total`` says how many there were.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UnknownArgument as UnknownArgument
from ..runtime.async_bridge import await_sync
from ..schema.signature import describe_function
from ..tools.function_tools import RegistrationError

if TYPE_CHECKING:  # pragma: no cover
    from ..tools.model import ToolContext

#: The most values one answer carries (MCP's limit).
MAX_VALUES = 100


@dataclass(frozen=True)
class Completion:
    """One answer: up to ``MAX_VALUES`` (100) ``values``, the ``total`` found, and whether more exist."""

    values: tuple[str, ...]
    total: int

    @property
    def has_more(self) -> bool:
        return self.total > len(self.values)


@dataclass(frozen=True)
class Completer:
    """A declared completer (``func``) or the fixed choices read off an annotation."""

    func: Callable[..., Any] | None = None
    choices: tuple[str, ...] = ()
    context_params: tuple[str, ...] = ()

    def complete(self, value: str, arguments: Mapping[str, str], context: ToolContext) -> Completion:
        if self.func is None:
            typed = value.casefold()
            found = [c for c in self.choices if c.casefold().startswith(typed)]
        else:
            kwargs = {param: context for param in self.context_params}
            result = self.func(value, dict(arguments), **kwargs)
            if inspect.isawaitable(result):
                result = await_sync(result)
            if result is None:
                result = ()
            if isinstance(result, (str, bytes)) or not isinstance(result, Iterable):
                raise TypeError(f"a completer returns a list of strings, not {type(result).__name__}")
            found = [str(v) for v in result]
        return Completion(tuple(found[:MAX_VALUES]), len(found))


#: No suggestions: an argument nobody declared a completer for, and whose type has no choices.
NOTHING = Completer()


def choices_of(annotation: Any) -> tuple[str, ...]:
    """The string values a ``Literal`` or ``Enum`` annotation allows (``Optional`` and
    ``Annotated`` looked through); ``()`` for any other."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return choices_of(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return tuple(str(v) for v in typing.get_args(annotation) if isinstance(v, str))
    if origin in (typing.Union, types.UnionType):
        return tuple(c for arg in typing.get_args(annotation) for c in choices_of(arg))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(str(m.value) for m in annotation if isinstance(m.value, str))
    return ()


def completers(owner: str, func: Callable[..., Any], names: Iterable[str], declared: Any) -> dict[str, Completer]:
    """The completer of each of ``names`` (parameters of ``func``): the one ``declared`` in the
    ``complete`` option, else the choices of its annotation; refuses a declared one for a name
    that is not an argument, or that is not callable."""
    names = tuple(names)
    if declared is None:
        declared = {}
    if not isinstance(declared, Mapping):
        raise RegistrationError(f"{owner}: complete is a dict of argument name -> completer function")
    unknown = sorted(set(declared) - set(names))
    if unknown:
        raise RegistrationError(f"{owner}: complete names {', '.join(map(repr, unknown))}, which "
                                f"{'is' if len(unknown) == 1 else 'are'} not among its arguments "
                                f"({', '.join(names) or 'none'})")
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # unresolvable hints: no choices from them (the function's own checks say why)
        hints = {}
    found: dict[str, Completer] = {}
    for name in names:
        given = declared.get(name)
        if given is not None:
            if not callable(given):
                raise RegistrationError(f"{owner}: the completer of {name!r} is not callable")
            context = describe_function(given, derive_input=False).context_params
            found[name] = Completer(func=given, context_params=context)
        elif choices := choices_of(hints.get(name)):
            found[name] = Completer(choices=choices)
    return found


__all__ = ["MAX_VALUES", "NOTHING", "Completer", "Completion", "UnknownArgument", "choices_of", "completers"]
