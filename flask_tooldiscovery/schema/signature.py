"""A Python function's signature and docstring -> JSON Schema (and back to Python values).

:func:`describe_function` reads type hints and the docstring once, at decoration time, and returns
the input schema, the output schema, the names of injected parameters (those annotated with a type
the tool model registered in :mod:`.hooks`: ``ToolContext``) and a loader
that turns validated JSON arguments into the Python values the function declared
(each annotation's schema and converter come from :mod:`.type_schemas`, the texts from
:mod:`.docstrings`).
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from marshmallow import ValidationError

from ..errors import SignatureError as SignatureError
from .docstrings import parse_docstring
from .hooks import INJECTED, RICH
from .type_schemas import Changes, ReturnSchemaBuilder, SchemaBuilder, UnsupportedType, jsonable_default


@dataclass(frozen=True)
class FunctionDescription:
    """What :func:`describe_function` learned about a function."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    context_params: tuple[str, ...]
    load_arguments: Callable[[Mapping[str, Any]], dict[str, Any]]
    is_async: bool


def is_async_callable(func: Callable[..., Any]) -> bool:
    """True for ``async def`` functions, also behind ``functools.partial`` or ``__call__``."""
    while isinstance(func, functools.partial):
        func = func.func
    if type(func) is types.FunctionType:  # its type's __call__ is a slot wrapper, never a coroutine function
        return inspect.iscoroutinefunction(func)
    return inspect.iscoroutinefunction(func) or (
        callable(func) and inspect.iscoroutinefunction(type(func).__call__)
    )


def _is_context(annotation: Any) -> bool:
    """True for a parameter the caller's context is injected into (a type the tool model registered:
    ``ToolContext``), also as ``Annotated[...]`` or ``... | None``."""
    if any(annotation is tp for tp in INJECTED):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_context(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and any(args[0] is tp for tp in INJECTED)
    return False


def _resolved(tp: Any, depth: int = 0) -> bool:
    """True when ``typing.get_type_hints`` would return ``tp`` as it is (or an equal rebuild):
    nothing in it is a string or a forward reference to evaluate."""
    if isinstance(tp, (str, typing.ForwardRef)) or depth > 16:
        return False
    origin = typing.get_origin(tp)
    if origin is None or origin is Literal:  # a class, a value; Literal's arguments are values
        return True
    if origin is typing.Annotated:  # the metadata are left alone; the annotated type is evaluated
        return _resolved(tp.__origin__, depth + 1)
    return all(_resolved(arg, depth + 1) for arg in getattr(tp, "__args__", ()))


@functools.lru_cache(maxsize=4096)
def _annotation_code(text: str) -> types.CodeType:
    return compile(text, "<string>", "eval")


#: What ``typing`` refuses as a parameter or return annotation (left to ``get_type_hints`` to say).
_NOT_ANNOTATIONS: tuple[Any, ...] = (typing.ClassVar, typing.Final, typing.Generic, typing.Protocol)


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """``typing.get_type_hints(func, include_extras=True)`` for a plain function, without its
    costs (it compiles every string annotation anew and rebuilds every generic alias): a string
    is evaluated in the function's globals from a cached compiled form, and the result is used
    when it is a type or a parametrized form holding nothing left to evaluate; in any other case
    (and for anything but a plain function) ``get_type_hints`` answers, errors included."""
    annotations = getattr(func, "__annotations__", None) if type(func) is types.FunctionType else None
    if not isinstance(annotations, dict) or hasattr(func, "__wrapped__"):
        return typing.get_type_hints(func, include_extras=True)
    namespace = getattr(func, "__globals__", {})
    hints: dict[str, Any] = {}
    for name, value in annotations.items():
        if isinstance(value, str):
            try:
                value = eval(_annotation_code(value), namespace, namespace)  # what ForwardRef does
            except Exception:
                return typing.get_type_hints(func, include_extras=True)
        if value is None:
            value = type(None)
        origin = typing.get_origin(value)
        plain = value is Any or (isinstance(value, type) and value not in _NOT_ANNOTATIONS) or (
            origin is not None and origin not in _NOT_ANNOTATIONS)
        if not plain or not _resolved(value):
            return typing.get_type_hints(func, include_extras=True)
        hints[name] = value
    return hints


def describe_function(
    func: Callable[..., Any], *, name: str | None = None, derive_input: bool = True,
    result_mime_type: str | None = None,
) -> FunctionDescription:
    """Read ``func`` once: its input and output schemas, context parameters and argument loader.

    With ``derive_input=False`` (an explicit input schema replaces derivation) parameters are not
    turned into a schema and ``**kwargs`` is allowed; context parameters are still found.
    """
    tool_name = name or getattr(func, "__name__", None) or type(func).__name__
    label = f"tool {tool_name!r} (function {getattr(func, '__qualname__', tool_name)})"
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise SignatureError(f"{label}: cannot read its signature: {exc}") from None
    try:
        hints = _type_hints(func)
    except Exception as exc:  # NameError for unresolvable forward references, and friends
        raise SignatureError(f"{label}: cannot resolve its type hints: {exc}") from None
    description, param_docs, returns_doc = parse_docstring(inspect.getdoc(func))

    builder = SchemaBuilder()
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Callable[[Any], Any]] = {}
    context_params: list[str] = []
    for pname, param in signature.parameters.items():
        if not derive_input:
            if _is_context(hints.get(pname, param.annotation)):
                context_params.append(pname)
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise SignatureError(
                f"{label}: parameter {star}{pname} is not allowed; tools take named parameters only"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise SignatureError(
                f"{label}: parameter {pname!r} is positional-only; tools are called with keywords"
            )
        annotation = hints.get(pname, param.annotation)
        if _is_context(annotation):
            context_params.append(pname)
            continue
        try:
            schema, conv = builder.build(annotation)
        except UnsupportedType as exc:
            raise SignatureError(
                f"{label}: parameter {pname!r} has annotation {annotation!r} that cannot be "
                f"expressed as JSON Schema ({exc})"
            ) from None
        schema = dict(schema)
        if pname in param_docs and "description" not in schema:
            schema["description"] = param_docs[pname]
        if param.default is param.empty:
            required.append(pname)
        else:
            ok, value = jsonable_default(param.default)
            if ok:
                schema["default"] = value
        properties[pname] = schema
        if conv is not None:
            converters[pname] = conv

    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False

    output_schema: dict[str, Any] | None = None
    ret = hints.get("return", signature.return_annotation)
    if ret not in (inspect.Signature.empty, None, type(None)):
        try:
            output_schema = dict(ReturnSchemaBuilder(result_mime_type).build(ret)[0]) or None
        except UnsupportedType:
            output_schema = None
    elif result_mime_type is not None:  # no annotation: the declared MIME type says what it returns
        output_schema = RICH[0].schema_for_mime(result_mime_type)
    if output_schema is not None and returns_doc and "description" not in output_schema:
        output_schema["description"] = returns_doc

    # Each converter with the value types it changes (None: any), so the value a parameter almost
    # always gets (a JSON 3 for an int) costs no call.
    steps: dict[str, tuple[tuple[type, ...] | None, Callable[[Any], Any]]] = {
        key: (conv.types, conv.fn) if isinstance(conv, Changes) else (None, conv)
        for key, conv in converters.items()}

    def load_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not converters:  # plain JSON values all through: nothing to convert
            return dict(arguments)
        loaded, errors = {}, {}
        for key, value in arguments.items():
            step = steps.get(key)
            if step is not None and (step[0] is None or type(value) in step[0]):
                try:
                    value = step[1](value)
                except (ValueError, TypeError) as exc:  # named after the parameter, as validation errors are
                    errors[key] = [str(exc).splitlines()[0] if str(exc) else type(exc).__name__]
            loaded[key] = value
        if errors:
            raise ValidationError(errors)
        return loaded

    return FunctionDescription(
        name=tool_name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        context_params=tuple(context_params),
        load_arguments=load_arguments,
        is_async=is_async_callable(func),
    )
