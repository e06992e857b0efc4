"""Readable resources: functions an app registers with ``@discovery.resource(uri)`` that a client
may read by URI (MCP ``resources/read``), such as the files a tool returns by link
(:class:`~flask_tooldiscovery.tools.results.ResourceLink`).

A resource has a fixed URI (``"config://app"``) or a URI template (RFC 6570 ``{var}``, or
``{+var}`` for values holding ``/``): the function receives each variable as a string argument of
that name, and a :class:`~.tool.ToolContext` parameter if it has one. Nothing is kept between
requests: every read calls the function, so any worker answers any read.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..errors import NoSuchResource as NoSuchResource
from ..runtime.async_bridge import await_sync
from ..schema.signature import describe_function
from ..tools.function_tools import RegistrationError
from ..tools.results import mime_type_error
from ..tools.watchers import Watchers
from .access import holds_all, scopes_and_icons
from .completion import NOTHING, Completer, Completion, UnknownArgument, completers

if TYPE_CHECKING:  # pragma: no cover
    from ..tools.model import Identity, ToolContext

#: ``{name}`` or ``{+name}`` in a URI template (RFC 6570 levels 1 and 2, one variable each).
_VARIABLE = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")
RESOURCE_OPTIONS = ("name", "title", "description", "mime_type", "scopes", "icons", "complete")


@dataclass(frozen=True)
class Resource:
    """One registered resource (or template of resources)."""

    uri: str
    name: str
    func: Callable[..., Any]
    title: str | None = None
    description: str = ""
    mime_type: str | None = None
    #: Scopes a caller needs to list and read it (all of them).
    scopes: tuple[str, ...] = ()
    context_params: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    icons: tuple[dict[str, Any], ...] = ()
    #: The template's variables, in the order the URI names them.
    variables: tuple[str, ...] = ()
    completers: Mapping[str, Completer] = field(default_factory=dict)

    @property
    def is_template(self) -> bool:
        return self.pattern is not None

    def visible_to(self, identity: Identity | None) -> bool:
        return holds_all(self.scopes, identity)

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables in ``uri`` (percent-decoded), or ``None`` when it does not match."""
        if self.pattern is None:
            return {} if uri == self.uri else None
        found = self.pattern.fullmatch(uri)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}

    def read(self, uri: str, arguments: dict[str, str], context: ToolContext) -> Any:
        """Call the function and return what it returned (bytes, text, an Image/Audio/File, a JSON
        value); :class:`NoSuchResource` when it returns ``None``."""
        kwargs: dict[str, Any] = dict(arguments)
        for param in self.context_params:
            kwargs[param] = context
        value = self.func(**kwargs)
        if inspect.isawaitable(value):
            value = await_sync(value)
        if value is None:
            raise NoSuchResource(uri)
        return value

    def complete(self, variable: str, value: str, arguments: Mapping[str, str], context: ToolContext) -> Completion:
        """Suggestions for a template ``variable`` (:class:`~.completion.UnknownArgument` when it has none)."""
        if variable not in self.variables:
            raise UnknownArgument(f"Resource template {self.uri!r} has no variable {variable!r}.")
        return self.completers.get(variable, NOTHING).complete(value, arguments, context)


def _template(uri: str) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    variables = tuple(m.group(2) for m in _VARIABLE.finditer(uri))
    if len(set(variables)) != len(variables):
        raise RegistrationError(f"resource {uri!r}: a template variable appears twice")
    if any(brace in _VARIABLE.sub("", uri) for brace in "{}"):  # a brace outside {name} or {+name}
        raise RegistrationError(f"resource {uri!r}: a template variable is {{name}} or {{+name}}")
    if not variables:
        return (), None
    parts, last = [], 0
    for found in _VARIABLE.finditer(uri):
        parts.append(re.escape(uri[last:found.start()]))
        parts.append(f"(?P<{found.group(2)}>{'.+?' if found.group(1) else '[^/?#]+'})")
        last = found.end()
    return variables, re.compile("".join(parts) + re.escape(uri[last:]))


def resource_from_function(func: Callable[..., Any], uri: str, options: dict[str, Any]) -> Resource:
    """Build a :class:`Resource` from ``@discovery.resource(uri, ...)``; refuses what cannot work."""
    unknown = sorted(set(options) - set(RESOURCE_OPTIONS))
    if unknown:
        raise RegistrationError(f"resource {uri!r}: unknown option(s) {', '.join(unknown)}; "
                                f"known: {', '.join(RESOURCE_OPTIONS)}")
    if not isinstance(uri, str) or not _URI.fullmatch(uri):
        raise RegistrationError(f"resource {uri!r}: a resource URI is absolute (scheme:...), such as 'reports://{{id}}'")
    mime = options.get("mime_type")
    if mime is not None and (error := mime_type_error(mime)):
        raise RegistrationError(f"resource {uri!r}: mime_type: {error}")
    variables, pattern = _template(uri)
    desc = describe_function(func, derive_input=False)
    params = {name: p for name, p in inspect.signature(func).parameters.items() if name not in desc.context_params}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    missing = [v for v in variables if v not in params and not takes_any]
    needed = [name for name, p in params.items() if name not in variables and p.default is inspect.Parameter.empty
              and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    if missing or needed:
        raise RegistrationError(
            f"resource {uri!r}: the function's parameters must be the template's variables "
            f"({', '.join(variables) or 'none'}) and a ToolContext; "
            + (f"no parameter for {', '.join(missing)}" if missing else f"{', '.join(needed)} is not in the URI"))
    scopes, icons = scopes_and_icons(f"resource {uri!r}", options)
    return Resource(uri=uri, name=str(options.get("name") or getattr(func, "__name__", uri)), func=func,
                    title=options.get("title"), description=(options.get("description") or desc.description).strip(),
                    mime_type=mime, scopes=scopes, context_params=desc.context_params,
                    pattern=pattern, icons=icons, variables=variables,
                    completers=completers(f"resource {uri!r}", func, variables, options.get("complete")))


class ResourceRegistry:
    """The resources an extension offers, in registration order."""

    def __init__(self) -> None:
        self._resources: list[Resource] = []
        #: Told when a resource is added (the resource list changed).
        self.watchers = Watchers()

    def add(self, resource: Resource) -> Resource:
        if any(r.uri == resource.uri for r in self._resources):
            raise RegistrationError(f"resource {resource.uri!r} is already registered")
        self._resources.append(resource)
        self.watchers.notify()
        return resource

    def __iter__(self) -> Iterator[Resource]:
        return iter(self._resources)

    def __len__(self) -> int:
        return len(self._resources)

    def visible_to(self, identity: Identity | None) -> list[Resource]:
        return [r for r in self._resources if r.visible_to(identity)]

    def find(self, uri: str, identity: Identity | None) -> tuple[Resource, dict[str, str]]:
        """The resource answering ``uri`` for this caller (fixed URIs first, then templates in
        registration order) and its variables; :class:`NoSuchResource` when none does."""
        ordered = sorted(self.visible_to(identity), key=lambda r: r.is_template)
        for resource in ordered:
            arguments = resource.match(uri)
            if arguments is not None:
                return resource, arguments
        raise NoSuchResource(uri)

    def template(self, uri: str, identity: Identity | None) -> Resource:
        """The resource registered at ``uri`` exactly (a template's own text), if this caller may
        see it; :class:`NoSuchResource` otherwise."""
        for resource in self.visible_to(identity):
            if resource.uri == uri:
                return resource
        raise NoSuchResource(uri)


__all__ = ["NoSuchResource", "Resource", "ResourceRegistry", "resource_from_function"]
