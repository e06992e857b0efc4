"""Prompts: functions an app registers with ``@discovery.prompt`` that turn a few arguments into the
messages a person starts a conversation with (MCP ``prompts/list`` and ``prompts/get``).

A prompt's arguments come from its signature as a tool's do (descriptions from the docstring or
``Annotated``, required when there is no default); they arrive as strings and are turned into the
declared types, so ``Literal``, ``Enum``, numbers and booleans work. A
:class:`~flask_tooldiscovery.tools.model.ToolContext` parameter receives the caller. The function
(sync or async) returns text, a :class:`Message`, an image, audio, a file, a
:class:`~flask_tooldiscovery.tools.results.ResourceLink` or an :class:`EmbeddedResource`, or a list of
those: each item is one message, said by the user unless a :class:`Message` names the assistant.
Nothing is kept between requests: every ``prompts/get`` calls the function, so any worker answers.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from marshmallow import ValidationError

from ..errors import InvalidPromptArguments as InvalidPromptArguments
from ..errors import NoSuchPrompt as NoSuchPrompt
from ..runtime.async_bridge import await_sync
from ..schema.argument_validation import validate_arguments
from ..schema.coerce import coercion
from ..schema.signature import describe_function
from ..tools.function_tools import RegistrationError, valid_tool_name
from ..tools.results import RichBlock, RichResult, mime_type_error
from ..tools.watchers import Watchers
from .access import holds_all, scopes_and_icons
from .completion import NOTHING, Completer, Completion, UnknownArgument, completers

if TYPE_CHECKING:  # pragma: no cover
    from ..tools.model import Identity, ToolContext

PROMPT_OPTIONS = ("name", "title", "description", "scopes", "icons", "complete")
Role = Literal["user", "assistant"]


class EmbeddedResource:
    """A resource's contents carried inside a message: ``EmbeddedResource("docs://guide", text)``
    (text) or with ``bytes`` (sent base64-encoded); ``mime_type`` defaults to ``text/plain`` for
    text and ``application/octet-stream`` for bytes."""

    __slots__ = ("content", "mime_type", "uri")

    def __init__(self, uri: str, content: str | bytes, mime_type: str | None = None) -> None:
        if not isinstance(uri, str) or ":" not in uri:
            raise ValueError(f"an embedded resource needs an absolute URI (scheme:...), not {uri!r}")
        if not isinstance(content, (str, bytes)):
            raise TypeError(f"an embedded resource holds text or bytes, not {type(content).__name__}")
        if mime_type is not None and (error := mime_type_error(mime_type)):
            raise ValueError(error)
        self.uri, self.content = uri, content
        self.mime_type = mime_type or ("text/plain" if isinstance(content, str) else "application/octet-stream")

    def to_json(self) -> dict[str, Any]:
        """MCP's ``EmbeddedResource`` content block (the same in every protocol version)."""
        body: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if isinstance(self.content, str):
            body["text"] = self.content
        else:
            body["blob"] = base64.b64encode(self.content).decode("ascii")
        return {"type": "resource", "resource": body}

    def __repr__(self) -> str:
        return f"EmbeddedResource({self.uri!r}, {self.mime_type!r})"


@dataclass(frozen=True)
class Message:
    """One message of a prompt: ``content`` (text, an image, audio, a file, a resource link or an
    :class:`EmbeddedResource`) said by ``role``, ``"user"`` or ``"assistant"``."""

    content: Any
    role: Role = "user"

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"a message's role is 'user' or 'assistant', not {self.role!r}")

    def to_json(self) -> dict[str, Any]:
        """``{"role", "content"}``, the content in its canonical form: a string, a rich result's
        canonical block, or an embedded resource's block."""
        content = self.content
        if isinstance(content, RichResult):
            return {"role": self.role, "content": content.to_json()}
        if isinstance(content, EmbeddedResource):
            return {"role": self.role, "content": content.to_json()}
        if isinstance(content, str):
            return {"role": self.role, "content": content}
        raise TypeError(f"a message holds text, an Image, Audio, File, ResourceLink or EmbeddedResource, "
                        f"not {type(content).__name__}")


def messages(value: Any) -> list[dict[str, Any]]:
    """What a prompt function returned, as canonical messages (see :meth:`Message.to_json`)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return [(item if isinstance(item, Message) else Message(item)).to_json() for item in items]


def is_embedded(content: Any) -> bool:
    """True for an embedded resource's block in a canonical message."""
    return isinstance(content, dict) and not isinstance(content, RichBlock) and content.get("type") == "resource"


@dataclass(frozen=True)
class PromptArgument:
    """One argument as ``prompts/list`` shows it."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    """One registered prompt."""

    name: str
    func: Callable[..., Any]
    title: str | None = None
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()
    input_schema: dict[str, Any] = field(default_factory=dict)
    load_arguments: Callable[[Mapping[str, Any]], dict[str, Any]] = dict
    context_params: tuple[str, ...] = ()
    #: Scopes a caller needs to list, get and complete it (all of them).
    scopes: tuple[str, ...] = ()
    icons: tuple[dict[str, Any], ...] = ()
    completers: Mapping[str, Completer] = field(default_factory=dict)

    def visible_to(self, identity: Identity | None) -> bool:
        return holds_all(self.scopes, identity)

    def render(self, arguments: Any, context: ToolContext) -> list[dict[str, Any]]:
        """Check ``arguments`` (strings turned into the declared types;
        :class:`~flask_tooldiscovery.errors.InvalidPromptArguments` saying what is wrong), call the
        function and return its canonical messages."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidPromptArguments(f"The arguments of prompt {self.name!r} are an object of strings.")
        values = coercion(self.input_schema)(arguments)
        errors = validate_arguments(self.input_schema, values, limit=10)
        if errors:
            missing = [e.parameter for e in errors if e.keyword == "required" and e.parameter]
            said = (f"Missing required argument(s): {', '.join(missing)}" if missing
                    else "; ".join(e.message for e in errors))
            raise InvalidPromptArguments(f"Invalid arguments for prompt {self.name!r}: {said}.")
        try:
            kwargs = self.load_arguments(values)
        except ValidationError as exc:
            raise InvalidPromptArguments(f"Invalid arguments for prompt {self.name!r}: {exc.messages}.") from None
        for param in self.context_params:
            kwargs[param] = context
        value = self.func(**kwargs)
        if inspect.isawaitable(value):
            value = await_sync(value)
        return messages(value)

    def complete(self, argument: str, value: str, arguments: Mapping[str, str], context: ToolContext) -> Completion:
        """Suggestions for ``argument`` (:class:`~.completion.UnknownArgument` when it has none of that name)."""
        if argument not in {a.name for a in self.arguments}:
            raise UnknownArgument(f"Prompt {self.name!r} has no argument {argument!r}.")
        return self.completers.get(argument, NOTHING).complete(value, arguments, context)


def prompt_from_function(func: Callable[..., Any], options: Mapping[str, Any]) -> Prompt:
    """Build a :class:`Prompt` from ``@discovery.prompt(...)``; refuses what cannot work."""
    label = f"prompt {options.get('name') or getattr(func, '__name__', func)!r}"
    unknown = sorted(set(options) - set(PROMPT_OPTIONS))
    if unknown:
        raise RegistrationError(f"{label}: unknown option(s) {', '.join(unknown)}; known: {', '.join(PROMPT_OPTIONS)}")
    desc = describe_function(func, name=options.get("name"))
    if not valid_tool_name(desc.name):
        raise RegistrationError(f"{label}: a prompt name is 1-128 ASCII letters, digits, '_', '-' and '.'")
    scopes, icons = scopes_and_icons(label, options)
    properties: dict[str, Any] = desc.input_schema.get("properties") or {}
    required = set(desc.input_schema.get("required") or ())
    arguments = tuple(PromptArgument(name, str(schema.get("description") or ""), name in required)
                      for name, schema in properties.items())
    return Prompt(name=desc.name, func=func, title=options.get("title"),
                  description=(options.get("description") or desc.description).strip(), arguments=arguments,
                  input_schema=desc.input_schema, load_arguments=desc.load_arguments,
                  context_params=desc.context_params, scopes=scopes, icons=icons,
                  completers=completers(label, func, properties, options.get("complete")))


class PromptRegistry:
    """The prompts an extension offers, in registration order."""

    def __init__(self) -> None:
        self._prompts: dict[str, Prompt] = {}
        #: Told when a prompt is added (the prompt list changed).
        self.watchers = Watchers()

    def add(self, prompt: Prompt) -> Prompt:
        if prompt.name in self._prompts:
            raise RegistrationError(f"prompt {prompt.name!r} is already registered")
        self._prompts[prompt.name] = prompt
        self.watchers.notify()
        return prompt

    def __iter__(self) -> Iterator[Prompt]:
        return iter(self._prompts.values())

    def __len__(self) -> int:
        return len(self._prompts)

    def visible_to(self, identity: Identity | None) -> list[Prompt]:
        return [p for p in self._prompts.values() if p.visible_to(identity)]

    def find(self, name: str, identity: Identity | None) -> Prompt:
        """The prompt ``name`` if this caller may see it, else :class:`NoSuchPrompt`."""
        prompt = self._prompts.get(name)
        if prompt is None or not prompt.visible_to(identity):
            raise NoSuchPrompt(name)
        return prompt


__all__ = ["EmbeddedResource", "InvalidPromptArguments", "Message", "NoSuchPrompt", "Prompt", "PromptArgument",
           "PromptRegistry", "is_embedded", "messages", "prompt_from_function"]
