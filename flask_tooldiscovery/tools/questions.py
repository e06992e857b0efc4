"""A tool asking its caller for input while it runs, and the questions a tool declares it asks first.

A tool asks with :meth:`~.model.ToolContext.elicit` (alias :meth:`~.model.ToolContext.ask`: a form
the person fills), :meth:`~.model.ToolContext.sample` (a message from the caller's model),
:meth:`~.model.ToolContext.list_roots` (the caller's roots), or :meth:`~.model.ToolContext.ask_all`
(several at once, one round). Each :class:`Question`
is a message and the JSON schema of a flat form (MCP's ``requestedSchema``), and each
:class:`Answer` says what the person did (``accept`` with the form's ``content``, ``decline`` or
``cancel``); a :class:`SamplingRequest` is answered by a :class:`Sampled` message, a
:class:`RootsRequest` by a list of :class:`Root`. Who answers depends on how the call runs: an MCP
2026-07-28 call answers an ``InputRequiredResult`` and runs again with the answers; a handshake-era
MCP call streamed as SSE asks on its stream; an MCP task parks (``input_required``) until its
client answers with ``tasks/update``. Where nobody can answer, asking raises :class:`CannotAsk`
(a tool may catch it and carry on without); uncaught, the call ends with a tool error saying so.

A tool may declare the questions it needs before it runs (the ``questions`` option: ``{key:
{"message": ..., "schema": ...}}``): an MCP 2026-07-28 client is asked them before the call runs
(or before its task is created), and the tool reads the answers with ``ctx.ask(..., key=key)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..errors import CannotAnswer as CannotAnswer
from ..errors import CannotAsk as CannotAsk

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


@dataclass(frozen=True)
class SamplingRequest:
    """A request for one message from the caller's language model (MCP ``sampling/createMessage``):
    ``messages`` as MCP writes them (``{"role", "content": {"type": "text", "text"}}``)."""

    messages: tuple[Mapping[str, Any], ...]
    max_tokens: int = 1000
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_preferences: Mapping[str, Any] | None = None
    key: str | None = None

    def to_params(self) -> dict[str, Any]:
        """The request's MCP ``params``."""
        params: dict[str, Any] = {"messages": [dict(m) for m in self.messages], "maxTokens": self.max_tokens}
        for name, value in (("systemPrompt", self.system_prompt), ("temperature", self.temperature),
                            ("stopSequences", list(self.stop_sequences) or None),
                            ("modelPreferences", dict(self.model_preferences or {}) or None)):
            if value is not None:
                params[name] = value
        return params


@dataclass(frozen=True)
class RootsRequest:
    """A request for the caller's roots (MCP ``roots/list``)."""

    key: str | None = None


@dataclass(frozen=True)
class Sampled:
    """The message the caller's model wrote: ``content`` as MCP writes it (``{"type": "text", ...}``)."""

    role: str
    content: Mapping[str, Any]
    model: str = ""
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The message's text (empty when it is not text)."""
        return str(self.content.get("text", "")) if self.content.get("type") == "text" else ""


@dataclass(frozen=True)
class Root:
    """One of the caller's roots: a ``file://`` URI and its name."""

    uri: str
    name: str | None = None


#: What a tool may ask its caller, and the capability (MCP's name) a caller needs to answer it.
InputRequest = Question | SamplingRequest | RootsRequest
KINDS: dict[type, str] = {Question: "elicitation", SamplingRequest: "sampling", RootsRequest: "roots"}
#: What answers a call's input requests: the requests, each with its key, in; their answers out (in order).
Asker = Callable[[Sequence[InputRequest]], list[Any]]


class InputRequired(BaseException):
    """The call's round ends: ``requests`` wait for the caller's answers, and the call runs again
    with them (``flask_tooldiscovery.calls.input_rounds``). A ``BaseException``, so that a tool's ``except
    Exception`` or ``except CannotAsk`` (its fallback where nobody can answer) does not swallow it."""

    def __init__(self, requests: Sequence[InputRequest]) -> None:
        super().__init__("This tool waits for its caller's answers.")
        self.requests = list(requests)


def kind(request: InputRequest) -> str:
    """``elicitation``, ``sampling`` or ``roots``: the capability answering ``request`` needs."""
    return KINDS[type(request)]


def with_key(request: InputRequest, key: str) -> InputRequest:
    """``request`` under ``key``."""
    return replace(request, key=key)


def keyed(questions: Sequence[InputRequest], start: int = 0) -> list[InputRequest]:
    """``questions`` each with a key: those without one are ``input-<start+1>``, ``input-<start+2>``..."""
    out, n = [], start
    for q in questions:
        if q.key is None:
            n += 1
            q = with_key(q, f"input-{n}")
        out.append(q)
    return out


def sampled_of(raw: Any) -> Sampled:
    """A client's ``CreateMessageResult``, checked (:class:`ValueError` says what is wrong)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("content"), (Mapping, list)) \
            or raw.get("role") not in ("user", "assistant"):
        raise ValueError("a sampling answer is an object with a role and content")
    content = raw["content"]
    first = content[0] if isinstance(content, list) and content else content
    return Sampled(str(raw["role"]), dict(first) if isinstance(first, Mapping) else {}, str(raw.get("model") or ""),
                   raw.get("stopReason") if isinstance(raw.get("stopReason"), str) else None)


def roots_of(raw: Any) -> list[Root]:
    """A client's ``ListRootsResult``, checked (:class:`ValueError` says what is wrong)."""
    roots = raw.get("roots") if isinstance(raw, Mapping) else None
    if not isinstance(roots, list) or not all(isinstance(r, Mapping) and isinstance(r.get("uri"), str)
                                              for r in roots):
        raise ValueError("a roots answer is an object whose roots are objects with a uri")
    return [Root(r["uri"], r.get("name") if isinstance(r.get("name"), str) else None) for r in roots]


def reply_of(raw: Any, request: InputRequest) -> Any:
    """A client's answer to ``request``, checked and typed (:class:`ValueError` says what is wrong)."""
    if isinstance(request, Question):
        return answer_of(raw, request)
    return sampled_of(raw) if isinstance(request, SamplingRequest) else roots_of(raw)


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


class FromAnswers:
    """An asker that only knows ``answers`` (sent along with the call): a question without one
    raises :class:`CannotAsk` with ``nobody`` (why nobody can answer it now). It can answer form
    questions when it has answers (:meth:`.model.ToolContext.can_ask`), nothing else."""

    def __init__(self, answers: Mapping[str, Answer], nobody: str) -> None:
        self.answers, self.nobody = dict(answers), nobody
        self.abilities = frozenset({"elicitation"} if answers else ())

    def __call__(self, questions: Sequence[InputRequest]) -> list[Any]:
        if any(q.key not in self.answers for q in questions):
            raise CannotAsk(self.nobody)
        return [self.answers[str(q.key)] for q in questions]


def from_answers(answers: Mapping[str, Answer], nobody: str) -> Asker:
    """A :class:`FromAnswers` asker."""
    return FromAnswers(answers, nobody)


NOBODY = ("This tool asks its caller for input while it runs, which this call cannot do: its client can answer "
          "over MCP only (2026-07-28 input requests; earlier, a call answered as a stream from 2025-03-26 on).")


def refuse(questions: Sequence[InputRequest]) -> list[Any]:
    """The asker of a call nobody can answer."""
    raise CannotAsk(NOBODY)


__all__ = ["ACTIONS", "EMPTY_FORM", "KINDS", "NOBODY", "OPTION", "Answer", "Asker", "CannotAnswer",
           "CannotAsk", "FromAnswers", "InputRequest", "InputRequired", "Question", "Root", "RootsRequest", "Sampled",
           "SamplingRequest", "answer_of", "declared", "form_error", "from_answers", "keyed", "kind", "options_error",
           "refuse", "reply_of", "roots_of", "sampled_of", "with_key"]
