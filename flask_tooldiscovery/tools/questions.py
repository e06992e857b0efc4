"""A tool asking its caller for input while it runs, and the questions a tool declares it asks first.

A tool asks with :meth:`~.model.ToolContext.ask` (one question) or
:meth:`~.model.ToolContext.ask_all` (several at once); each :class:`Question` is a message and the
JSON schema of a flat form (MCP's ``requestedSchema``), and each :class:`Answer` says what the
person did (``accept`` with the form's ``content``, ``decline`` or ``cancel``). Who answers depends
on how the call runs: an MCP task parks (``input_required``) until its client answers with
``tasks/update``; a call whose caller sent the answers along (an MCP 2026-07-28 retry with
``inputResponses``) reads them there. Where nobody can answer, asking raises a
:class:`~.model.ToolError` that says so, and the call ends with it.

A tool may declare the questions it needs before it runs (the ``questions`` option: ``{key:
{"message": ..., "schema": ...}}``): an MCP 2026-07-28 client is asked them before the call runs
(or before its task is created), and the tool reads the answers with ``ctx.ask(..., key=key)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..errors import ToolDiscoveryError

ACTIONS = ("accept", "decline", "cancel")
#: A form with no field: the person accepts or declines.
EMPTY_FORM: Mapping[str, Any] = {"type": "object", "properties": {}}
#: A tool option's name for the questions a tool asks before it runs.
OPTION = "questions"


@dataclass(frozen=True)
class Question:
    """One question: ``message`` shown to the person, ``schema`` the form (a JSON schema of an
    object with primitive properties), ``key`` its name in this call (given by the asker when
    ``None``: questions asked again under the same key get the answer already given)."""

    message: str
    schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_FORM))
    key: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "schema": dict(self.schema)}


@dataclass(frozen=True)
class Answer:
    """What the person did with one question: ``action`` (``accept``, ``decline`` or ``cancel``)
    and, on ``accept``, the form's ``content``."""

    action: str
    content: Mapping[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, **({"content": dict(self.content)} if self.accepted else {})}


#: What answers a call's questions: the questions, each with its key, in; their answers out (in order).
Asker = Callable[[Sequence[Question]], list[Answer]]


class CannotAsk(ToolDiscoveryError, RuntimeError):
    """The call cannot ask its caller (nobody can answer where it runs)."""


def keyed(questions: Sequence[Question]) -> list[Question]:
    """``questions`` each with a key: those without one are ``input-1``, ``input-2``... in order."""
    out, n = [], 0
    for q in questions:
        if q.key is None:
            n += 1
            q = Question(q.message, q.schema, f"input-{n}")
        out.append(q)
    return out


def declared(options: Mapping[str, Any]) -> dict[str, Question]:
    """The questions a tool declares (its ``questions`` option), by key."""
    raw = options.get(OPTION) or {}
    return {k: Question(str(v["message"]), dict(v.get("schema") or EMPTY_FORM), k) for k, v in raw.items()}


def form_error(schema: Any) -> str | None:
    """Why ``schema`` is not a form a client can show (``None``: it is one)."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return "a form's schema is a JSON schema of type 'object'"
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping) or any(
            not isinstance(p, Mapping) or p.get("type") not in ("string", "number", "integer", "boolean", "array")
            for p in properties.values()):
        return "each property of a form is a string, number, integer, boolean or array of strings"
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        return f"not a valid JSON schema: {exc.message}"
    return None


def options_error(value: Any) -> str | None:
    """Why a ``questions`` option is malformed (``None``: it is well formed)."""
    if not isinstance(value, Mapping):
        return "questions must be a dict of {key: {'message': str, 'schema': form schema}}"
    for key, spec in value.items():
        if not isinstance(key, str) or not key or not isinstance(spec, Mapping) \
                or not isinstance(spec.get("message"), str) or set(spec) - {"message", "schema"}:
            return f"question {key!r} must be {{'message': str, 'schema': form schema}}"
        if "schema" in spec and (error := form_error(spec["schema"])) is not None:
            return f"question {key!r}: {error}"
    return None


def answer_of(raw: Any, question: Question) -> Answer:
    """A client's answer to ``question`` (``{"action", "content"}``), checked: an ``accept``'s
    content must fill the form; :class:`ValueError` says what is wrong."""
    if not isinstance(raw, Mapping) or raw.get("action") not in ACTIONS:
        raise ValueError(f"the answer to {question.key!r} must be an object whose action is one of "
                         f"{', '.join(ACTIONS)}")
    if raw["action"] != "accept":
        return Answer(raw["action"])
    content = raw.get("content") if raw.get("content") is not None else {}
    if not isinstance(content, Mapping):
        raise ValueError(f"the answer to {question.key!r} must carry its form's content as an object")
    problems = sorted(Draft202012Validator(dict(question.schema)).iter_errors(dict(content)), key=str)
    if problems:
        where = "/".join(str(p) for p in problems[0].absolute_path)
        raise ValueError(f"the answer to {question.key!r} does not fill its form: "
                         f"{where + ': ' if where else ''}{problems[0].message}")
    return Answer("accept", dict(content))


def from_answers(answers: Mapping[str, Answer], nobody: str) -> Asker:
    """An asker that only knows ``answers`` (sent along with the call): a question without one
    raises :class:`CannotAsk` with ``nobody`` (why nobody can answer it now)."""

    def ask(questions: Sequence[Question]) -> list[Answer]:
        missing = [q.key for q in questions if q.key not in answers]
        if missing:
            raise CannotAsk(nobody)
        return [answers[str(q.key)] for q in questions]

    return ask


NOBODY = ("This tool asks its caller for input while it runs, which this call cannot do: its client can answer "
          "only as an MCP 2026-07-28 client running it as a task (or sending the answers with the call).")


def refuse(questions: Sequence[Question]) -> list[Answer]:
    """The asker of a call nobody can answer."""
    raise CannotAsk(NOBODY)


class Asking:
    """What :class:`~.model.ToolContext` asks its caller with. :class:`CannotAsk` (where nobody can
    answer) ends the call as a tool error saying so."""

    asker: Asker | None

    def ask(self, message: str, schema: Mapping[str, Any] | None = None, *, key: str | None = None) -> Answer:
        """Ask the caller to fill a form (``schema``; none: accept or decline) and wait for the answer."""
        return self.ask_all(Question(message, schema or dict(EMPTY_FORM), key))[0]

    def ask_all(self, *questions: Question) -> list[Answer]:
        """Ask several questions at once; their answers, in order."""
        return (self.asker or refuse)(keyed(questions))


__all__ = ["ACTIONS", "EMPTY_FORM", "NOBODY", "OPTION", "Answer", "Asker", "Asking", "CannotAsk", "Question",
           "answer_of", "declared", "form_error", "from_answers", "keyed", "options_error", "refuse"]
