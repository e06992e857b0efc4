"""The canonical tool model: :class:`Tool`, :class:`ToolContext` and :class:`ToolError`.

Every dialect translates from these; none of them knows a wire format.
"""

from __future__ import annotations

import asyncio
import functools
import math
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import ToolError as ToolError
from ..schema.hooks import inject
from .questions import (
    EMPTY_FORM,
    Answer,
    Asker,
    InputRequest,
    Question,
    Root,
    RootsRequest,
    Sampled,
    SamplingRequest,
    keyed,
    refuse,
)

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request


#: The tool options that only some dialects read (TDP metadata and the like).
METADATA_OPTIONS = (
    "enabled_by_default",
    "requires_approval",
    "rate_limit_per_minute",
    "cost_estimate",
    "long_running",
    "idempotent",
    "modifies_state",
    "sensitive_output",
    "auth_requirements",
    "result_mime_type",  # the MIME type of the bytes the tool returns (results.py)
    "task_support",  # "forbidden", "optional" or "required": may a protocol run its calls as tasks (MCP)
    "questions",  # what it asks its caller before it runs (questions.py)
    "always_listed",  # listed even where tool search hides the others (MCP with TOOL_SEARCH)
    "icons", "ui", "visibility",  # its icons ({src, mimeType, sizes, theme}: MCP); its UI, who calls it (ui.py)
)

def _parse_version(version: Any) -> tuple[int, int, int]:
    parts = str(version).split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"version {version!r} is not of the form x.y.z")
    nums = [int(p) for p in parts] + [0] * (3 - len(parts))
    return nums[0], nums[1], nums[2]


#: One tuple per version text, shared by every tool of that version.
_parse_version_text = functools.lru_cache(maxsize=1024)(_parse_version)


def parse_version(version: str) -> tuple[int, int, int]:
    """Parse ``x.y.z`` (or ``x`` / ``x.y``, padded with zeros) into a sortable tuple."""
    return _parse_version_text(version) if isinstance(version, str) else _parse_version(version)


#: Log levels a tool may use with :meth:`ToolContext.log` (syslog's, as MCP names them).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass(frozen=True)
class Progress:
    """A tool's progress report: ``progress`` so far, of ``total`` when known."""

    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class LogEntry:
    """A log line a tool sent to its caller while running."""

    level: str
    message: str


#: What a running tool reports to whoever listens to its call (a streaming dialect).
ToolEvent = Progress | LogEntry


class _Done:
    """The value of :meth:`ToolContext.report_progress` and :meth:`ToolContext.log`: nothing, and
    awaitable too, so ``await ctx.report_progress(...)`` works in async tools as in other SDKs."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()

    def __bool__(self) -> bool:
        return False


_DONE = _Done()


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class Identity:
    """Who is calling, as the credentials the request carried established it (an identity hook, a
    verified token, the CLI's ``--as``)."""

    subject: str | None = None
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)
    #: How: "bearer", "api_key", "jwt", "hook"...
    method: str = ""


#: Guards every :class:`ToolContext`'s cancellation (held for a few instructions; one lock instead of
#: one made per call).
_CANCEL_LOCK = threading.Lock()

#: The key of :attr:`ToolContext.extra` that holds the ``user_id`` a request's body claimed (Opal's
#: ``auth.credentials.user_id``, OXP's ``context.user_id``), verified by nobody.
CLAIMED_USER_ID = "claimed_user_id"


@dataclass
class ToolContext:
    """What a tool may know about the call it serves, and how it reports to and asks its caller.

    Annotate a parameter with ``ToolContext`` and it is filled in at call time; it never appears
    in an input schema.
    """

    call_id: str
    dialect: str | None = None
    trace_id: str | None = None
    #: Who is calling: the identity's subject when a credential named the caller, else the user id
    #: the body claimed (``None`` when neither); the claim itself is ``extra["claimed_user_id"]``.
    user_id: str | None = None
    #: Secrets sent with the call, by id (OXP ``context.secrets``).
    secrets: dict[str, str] = field(default_factory=dict)
    #: Authorization tokens sent with the call, by provider id (OXP ``context.authorization``).
    authorization: dict[str, str] = field(default_factory=dict)
    #: Dialect-specific data: Opal's ``auth``, ``environment`` and ``x-opal-*`` headers, MCP ``_meta``,
    #: the body's ``claimed_user_id``...
    extra: dict[str, Any] = field(default_factory=dict)
    #: The request the call came on. Over HTTP it is Flask's request, and ``flask.has_request_context()``
    #: is True while the tool runs. A task (wherever it runs) and ``flask tools call`` run with no
    #: request context (``has_request_context()`` is False, ``flask.request`` is unbound): a task's
    #: ``request`` is a detached ``Request`` holding what the task carried of the request it came on,
    #: its allowed ``headers`` (never a credential) and ``remote_addr``, with no body, its URL the
    #: dialect's mount on ``SERVER_NAME`` (else ``localhost``); ``flask tools call``'s is ``None``.
    request: Request | None = None
    #: Who is calling, when the dialect's credentials established it.
    identity: Identity | None = None
    #: Receives the tool's progress reports and log lines (set by dialects that stream them).
    listener: Callable[[ToolEvent], None] | None = field(default=None, repr=False, compare=False)
    #: Answers the tool's questions (``ask``), where its caller can answer (``tools/questions.py``).
    asker: Asker | None = field(default=None, repr=False, compare=False)
    _cancelled: bool = field(default=False, repr=False, compare=False)
    #: What to run when the call is cancelled (``None`` until something asks: most calls never do).
    _cancel_callbacks: list[Callable[[], None]] | None = field(default=None, repr=False, compare=False)
    #: How many requests without a key the call asked so far (they are keyed ``input-1``, ``input-2``...).
    _unkeyed: int = field(default=0, init=False, repr=False, compare=False)

    # -- while the tool runs ---------------------------------------------------------------------

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> _Done:
        """Tell the caller how far the tool got (``progress`` of ``total``). Callers that cannot
        receive it (a plain JSON answer) never see it. Usable from sync and async tools (the value
        may be awaited or ignored)."""
        event = Progress(_finite("progress", progress), None if total is None else _finite("total", total),
                         None if message is None else str(message))
        if self.listener is not None:
            self.listener(event)
        return _DONE

    def log(self, level: str, message: str) -> _Done:
        """Send a log line to the caller (``level``: ``"debug"``, ``"info"``... ``"emergency"``, as MCP names them)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        if self.listener is not None:
            self.listener(LogEntry(level, str(message)))
        return _DONE

    # -- asking the caller (tools/questions.py): CannotAsk where nobody can answer ends the call as a
    # tool error saying so, unless the tool catches it ------------------------------------------------

    def ask(self, message: str, schema: Mapping[str, Any] | None = None, *, key: str | None = None) -> Answer:
        """Ask the caller to fill a form (``schema``; none: accept or decline) and wait for the answer."""
        answer: Answer = self.ask_all(Question(message, schema or dict(EMPTY_FORM), key))[0]
        return answer

    def elicit(self, message: str, schema: Mapping[str, Any] | None = None, *, key: str | None = None) -> Answer:
        """Ask the person to fill a form (MCP elicitation, form mode): the same as :meth:`ask`."""
        return self.ask(message, schema, key=key)

    def sample(self, prompt: str | Sequence[Mapping[str, Any]], *, max_tokens: int = 1000,
               system_prompt: str | None = None, temperature: float | None = None,
               model_preferences: Mapping[str, Any] | None = None, key: str | None = None) -> Sampled:
        """Ask the caller's model for a message: ``prompt`` (a user message) or MCP ``messages``."""
        messages = ({"role": "user", "content": {"type": "text", "text": prompt}},) if isinstance(prompt, str) \
            else tuple(prompt)
        sampled: Sampled = self.ask_all(SamplingRequest(messages, max_tokens, system_prompt, temperature,
                                                        model_preferences=model_preferences, key=key))[0]
        return sampled

    def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The caller's roots (the folders or files it lets tools see)."""
        roots: list[Root] = self.ask_all(RootsRequest(key))[0]
        return roots

    def ask_all(self, *requests: InputRequest) -> list[Any]:
        """Ask several things at once (questions, sampling and roots requests: one round where the
        protocol has rounds); their answers, in order. Requests without a key are keyed
        ``input-1``, ``input-2``... in the order the call asks them."""
        start = self._unkeyed
        requests_ = keyed(requests, start)
        self._unkeyed = start + sum(r.key is None for r in requests)
        return (self.asker or refuse)(requests_)

    def can_ask(self, capability: str) -> bool:
        """Whether the caller can be asked this kind of request (``"elicitation"``, ``"sampling"``
        or ``"roots"``) as far as the call knows: ``False`` when asking surely fails."""
        if self.asker is None:
            return False
        known = getattr(self.asker, "abilities", None)
        return True if known is None else capability in known

    @property
    def cancelled(self) -> bool:
        """True once the caller gave up on the call: a sync tool that runs long should poll it
        (or call :meth:`check_cancelled`); an async tool is cancelled for it."""
        return self._cancelled

    def check_cancelled(self) -> None:
        """Raise :class:`asyncio.CancelledError` when the call was cancelled (the call then ends
        as cancelled)."""
        if self._cancelled:
            raise asyncio.CancelledError("the call was cancelled")

    def cancel(self) -> None:
        """Cancel the call (dialects do this when the caller gives up); idempotent."""
        with _CANCEL_LOCK:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._cancel_callbacks = self._cancel_callbacks, None
        for callback in callbacks or ():
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the call is cancelled (now, if it already is); returns the
        function that unregisters it."""
        with _CANCEL_LOCK:
            if not self._cancelled:
                if self._cancel_callbacks is None:
                    self._cancel_callbacks = []
                self._cancel_callbacks.append(callback)

                def remove() -> None:
                    with _CANCEL_LOCK:
                        if self._cancel_callbacks is not None and callback in self._cancel_callbacks:
                            self._cancel_callbacks.remove(callback)

                return remove
        callback()
        return lambda: None

    @property
    def scopes(self) -> tuple[str, ...]:
        """The caller's scopes (empty when anonymous)."""
        return self.identity.scopes if self.identity is not None else ()

    @property
    def claims(self) -> Mapping[str, Any]:
        """The caller's token claims (empty when anonymous or not a token)."""
        return self.identity.claims if self.identity is not None else {}

    def secret(self, secret_id: str, default: str | None = None) -> str | None:
        """The value of the secret ``secret_id``, or ``default``."""
        return self.secrets.get(secret_id, default)

    def token(self, provider_id: str, default: str | None = None) -> str | None:
        """The authorization token for ``provider_id``, or ``default``."""
        return self.authorization.get(provider_id, default)

    def __repr__(self) -> str:  # secrets and tokens never end up in logs through repr()
        return (
            f"ToolContext(call_id={self.call_id!r}, dialect={self.dialect!r}, "
            f"trace_id={self.trace_id!r}, user_id={self.user_id!r}, "
            f"secrets=<{len(self.secrets)}>, authorization=<{len(self.authorization)}>)"
        )


inject(ToolContext)  # the schema engine leaves a ToolContext parameter out of a tool's input schema


def _defines(node: Any) -> bool:
    """True when a ``$defs`` or ``definitions`` key appears anywhere in ``node`` (what
    :func:`~flask_tooldiscovery.schema.json_schema.inline_refs` would resolve or drop)."""
    if isinstance(node, dict):
        return "$defs" in node or "definitions" in node or any(
            _defines(v) for v in node.values() if isinstance(v, (dict, list)))
    return isinstance(node, list) and any(_defines(v) for v in node if isinstance(v, (dict, list)))


#: The fields of a :class:`Tool` that some dialect shows (its fingerprint digests them).
SHOWN_FIELDS = ("name", "description", "input_schema", "output_schema", "title", "annotations", "version",
                "toolkit", "category", "tags", "examples", "requirements", "timeout", "metadata", "scopes")
#: What a :class:`Tool` works out once from its shown fields (dropped when one of them is assigned).
_DERIVED = ("fingerprint", "resolved_input_schema", "_derived")
#: How many times a shown tool was changed by assignment, in this process (see ``Tool.__setattr__``).
_CHANGES = [0]


#: The count :func:`tool_changes` answers, as a one-item list a hot path may read (``CHANGES[0]``).
CHANGES = _CHANGES


def tool_changes() -> int:
    """A count that moves whenever a tool some dialect has shown is changed by assignment."""
    return _CHANGES[0]


@dataclass(eq=False)
class Tool:
    """One tool as every dialect sees it.

    Decorated functions and tools read from providers both become ``Tool`` objects. ``func`` is the
    Python callable for decorated tools; provider tools are run by the extension's
    ``call_handler``.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    version: str = "1.0.0"
    toolkit: str | None = None
    category: str | None = None
    tags: list[str] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)
    requirements: dict[str, Any] | None = None
    timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Scopes a caller needs to see and call this tool (all of them).
    scopes: tuple[str, ...] = ()
    #: ``visible(identity) -> bool``: whether a caller (``None``: anonymous) sees and may call it.
    visible: Callable[[Identity | None], bool] | None = None
    func: Callable[..., Any] | None = None
    is_async: bool = False
    #: Names of parameters that receive the :class:`ToolContext`.
    context_params: tuple[str, ...] = ()
    #: Turns validated JSON arguments into the Python values the function expects.
    load_arguments: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        # A tool changed by assignment after it was shown: what was worked out from it (its
        # fingerprint, resolved schema, compiled checks) is dropped, and every tool set built
        # before it is told (its content fingerprint is worked out anew). Nested values changed
        # in place (tool.input_schema["x"] = ...) are not seen: assign a new value instead.
        object.__setattr__(self, name, value)
        if name in SHOWN_FIELDS:
            cached = self.__dict__
            if "fingerprint" in cached:
                _CHANGES[0] += 1
            for key in _DERIVED:
                cached.pop(key, None)

    @cached_property
    def fingerprint(self) -> str:
        """A digest of everything a dialect may show of this tool (equal tools, equal digests)."""
        import hashlib
        import json

        shown = {k: getattr(self, k) for k in SHOWN_FIELDS}
        # Key order is kept: dialects show a schema's properties in the order they were given.
        text = json.dumps(shown, default=repr, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    @cached_property
    def _derived(self) -> dict[object, Any]:
        # What the call path works out once from this tool's content (its compiled argument
        # check, its coercion, its approval gate), each under a key of its own; emptied when a
        # shown field is assigned. The package's own, not part of the public API.
        return {}

    @property
    def description_or_title(self) -> str:
        """A non-empty description for wire formats that require one: the description, else the
        title, else a sentence naming the tool."""
        return (self.description or "").strip() or self.title or f"The {self.name} tool."

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        """The version as a sortable ``(major, minor, patch)``."""
        return parse_version(self.version)

    @cached_property
    def resolved_input_schema(self) -> dict[str, Any]:
        """The input schema with local ``$ref`` pointers inlined (computed once per tool object; shared,
        never mutate it). A schema defining nothing to inline is its own resolved form: the same
        object, not a second copy of it."""
        from ..schema.json_schema import inline_refs

        schema = self.input_schema or {}
        if not _defines(schema):
            return schema
        resolved: dict[str, Any] = inline_refs(schema)
        return resolved

    def missing_requirements(self, *, secrets: Mapping[str, Any], authorization: Mapping[str, Any],
                             user_id: Any) -> dict[str, Any]:
        """The requirements this tool declares that a call lacks, OXP-style (empty when none)."""
        req = self.requirements
        if not req:
            return {}
        missing: dict[str, Any] = {}
        auth = [{"id": a["id"], "url": str(a.get("url", ""))} for a in req.get("authorization", [])
                if not authorization.get(a["id"])]
        if auth:
            missing["authorization"] = auth
        needed = [{"id": s["id"]} for s in req.get("secrets", []) if not secrets.get(s["id"])]
        if needed:
            missing["secrets"] = needed
        if req.get("user_id") and not user_id:
            missing["user_id"] = True
        return missing

    @property
    def visibility(self) -> tuple[str, ...] | None:
        """Who may call it, as declared (``visibility=["app"]``: only its UI); ``None``: undeclared,
        i.e. the model and the app."""
        value = self.metadata.get("visibility") if self.metadata else None
        return tuple(value) if value else None

    @property
    def model_visible(self) -> bool:
        """False for a tool only an interface may call (``visibility`` without ``"model"``)."""
        visibility = self.visibility
        return visibility is None or "model" in visibility

    def hint(self, name: str, default: bool | None = None) -> bool | None:
        """An MCP annotation hint (``readOnlyHint``...), or ``default`` when the tool has none."""
        if not self.annotations:
            return default
        value = self.annotations.get(name)
        return default if value is None else bool(value)

    def __repr__(self) -> str:
        return f"<Tool {self.name}@{self.version} ({'function' if self.func else 'provider'})>"
