"""Calls a person must approve before they run, across requests, workers and hosts.

A tool that needs approval (``requires_approval=True``; also ``destructiveHint`` when
``TOOLDISCOVERY_APPROVE_DESTRUCTIVE`` is on) is not run on first request: the pipeline answers
:class:`ApprovalRequired` with a *sealed* request — the tool, a digest of the arguments, the caller
and the time, signed with the app's ``SECRET_KEY`` (itsdangerous, as Flask's sessions are;
``SECRET_KEY_FALLBACKS`` still verify, for key rotation). Each dialect carries it its own way (MCP's
``requestState``, an error code elsewhere); the client asks its user and sends it back with the
answer. Any worker on any host can then check it: only spent seals are stored. A sealed request
is only good for the same tool, the same arguments and the same caller, until it expires;
tampered, expired or mismatched state is refused with :class:`InvalidApproval`.

Whether a call needs approval is decided once per call, by the app's one approvals service
(:class:`Approvals`, the pipeline's ``approvals``): its :class:`ApprovalGate` travels with the call
to every step that asks, checks or seals (the pipeline's invoke, MCP's streams and rounds of input
requests, Opal's async accept), so none of them decides again.

A sealed request runs its call once. When the call is about to run (the seal checked, the caller
within its rate limit, a call slot taken) or the person declined, the seal is spent
(:mod:`..state.single_use`): in the state store (``TOOLDISCOVERY_STATE_STORAGE_URI``) for every worker
and host at once, else in this process only. Sent again, on any dialect, or declined and then
sent as approved, it is :class:`InvalidApproval`. The digest is over the arguments as the tool
receives them (coerced, validated, loaded: ``5`` and ``5.0`` for an ``int`` are one call).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from flask import current_app
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from ..errors import ApprovalRequired, InvalidApproval, SpendError, Unavailable, UnsealedState
from ..runtime.invoke import prepare
from ..schema.coerce import to_jsonable
from ..settings import Settings
from ..state import single_use
from ..tools.model import Tool, ToolContext

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request

SALT = "flask-tooldiscovery.approval"
#: The request header a JSON dialect's client sends the sealed state back in, once the person approved.
APPROVAL_HEADER = "X-Tool-Approval"
#: Seconds a spent seal is remembered past its lifetime, for hosts whose clocks disagree.
CLOCK_MARGIN = 60


@dataclass(frozen=True)
class Approval:
    """What a client sent back: the sealed ``state`` and whether the person ``approved``."""

    state: str
    approved: bool


def needs_approval(tool: Tool, *, destructive: bool) -> bool:
    """True when ``tool`` must be approved before each call (``destructive``: destructive tools too)."""
    if tool.metadata.get("requires_approval"):
        return True
    return destructive and bool((tool.annotations or {}).get("destructiveHint") is True)


def approved_tools(tools: Sequence[Tool], *, destructive: bool) -> list[str]:
    """The names of ``tools`` that need approval, by :func:`needs_approval`'s rule (at start: what the
    app must spend once; written out, so that each call's decision stays one function call)."""
    return [tool.name for tool in tools if tool.metadata.get("requires_approval")
            or (destructive and (tool.annotations or {}).get("destructiveHint") is True)]


def prompt_for(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The question put to the person: the tool and the arguments it would run with."""
    shown = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, default=str)
    if len(shown) > 500:
        shown = shown[:497] + "..."
    return f"Allow the tool {tool.title or tool.name!r} to run with {shown}?"


def plain(value: Any) -> Any:
    """``value`` as canonical JSON data: what a tool receives (enums, dataclasses, dates...) in
    plain form, a float that is a whole number as that integer, a set's members in one order."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=_canonical_text)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    try:
        return plain(to_jsonable(value))  # dates, UUIDs, decimals, pydantic models...
    except (TypeError, ValueError):
        return str(value)


#: One encoder for canonical text (``json.dumps`` with options builds one per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _canonical_text(value: Any) -> str:
    return _CANONICAL.encode(value)


def digest(arguments: Any) -> str:
    """A digest of the arguments as the tool receives them (their :func:`plain` canonical JSON)."""
    return hashlib.sha256(_canonical_text(plain(arguments)).encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Opened:
    """A checked seal: the call it is for, and when it was sealed (epoch seconds)."""

    data: Mapping[str, Any]
    sealed_at: float

    @property
    def key(self) -> str:
        """What identifies the seal once spent: its content, not its text (a signature has more
        than one spelling that verifies)."""
        return hashlib.sha256(f"{_canonical_text(self.data)}@{self.sealed_at:.0f}".encode()).hexdigest()


class Sealable(Protocol):
    """What a seal is for besides the arguments and the caller: a :class:`~..tools.model.Tool`, or
    anything else with a name and a version that may be sealed (a prompt asking its caller)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...


class Sealer:
    """Seals and opens approval state with the app's secret key (and its fallbacks)."""

    def __init__(self, secret_key: str | bytes, fallbacks: Sequence[str | bytes] = (), max_age: int = 600,
                 audience: str = "", *, purpose: str = "", max_state: int = 4096) -> None:
        # itsdangerous signs with the last key and verifies with all of them. The audience (the
        # server's name) is in the salt: another service sharing the key cannot mint state for this one;
        # so is the purpose: a seal made for one use (an approval, a round of input requests) opens for no other.
        keys = [k.encode("utf-8") if isinstance(k, str) else k for k in (*fallbacks, secret_key)]
        salt = SALT + (f"/{purpose}" if purpose else "")
        self._serializer = URLSafeTimedSerializer(keys, salt=f"{salt}:{audience}" if audience else salt)
        self.max_age, self.max_state = max_age, max_state

    def seal(self, tool: Sealable, arguments: Any, subject: str | None, call_id: str,
             carried: Mapping[str, Any] | None = None) -> str:
        """The sealed request for a call of ``tool`` with ``arguments`` by ``subject`` (with what
        the call ``carried`` to its next request, opened as ``data["x"]``)."""
        data = {"t": tool.name, "v": tool.version, "a": digest(arguments), "s": subject, "c": call_id,
                "n": secrets.token_urlsafe(12), **({"x": dict(carried)} if carried is not None else {})}
        return str(self._serializer.dumps(data))

    def open(self, state: str, tool: Sealable, arguments: Any, subject: str | None) -> Opened:
        """Check ``state`` is this call's, unexpired and untampered (:class:`InvalidApproval`
        otherwise); what it holds."""
        if not isinstance(state, str) or not state or len(state) > self.max_state:
            raise InvalidApproval("approval state missing or oversized")
        try:
            data, sealed_at = self._serializer.loads(state, max_age=self.max_age, return_timestamp=True)
        except SignatureExpired:
            raise InvalidApproval("approval state expired") from None
        except BadSignature:
            raise UnsealedState("approval state tampered with or signed by another key") from None
        if not isinstance(data, dict):
            raise InvalidApproval("approval state malformed")
        if data.get("t") != tool.name or data.get("v") != tool.version:
            raise InvalidApproval("approval state is for another tool")
        if data.get("a") != digest(arguments):
            raise InvalidApproval("approval state is for other arguments")
        if data.get("s") != subject:
            raise InvalidApproval("approval state is for another caller")
        return Opened(data, sealed_at.timestamp())

    def spend(self, opened: Opened, storage: str | None) -> None:
        """Spend the seal ``opened`` (in the state store at ``storage``, else in this process):
        :class:`InvalidApproval` when it was spent before; when that cannot be decided,
        :class:`~flask_tooldiscovery.errors.Unavailable` (nothing runs)."""
        ttl = self.max_age - (time.time() - opened.sealed_at) + CLOCK_MARGIN
        try:
            first = single_use.for_uri(storage).spend(opened.key, ttl)
        except SpendError as exc:
            raise Unavailable("This tool's approval cannot be checked right now; try again later.",
                              reason=f"approvals cannot be spent: {exc}") from None
        if not first:
            raise InvalidApproval("approval state already used")


def sealer(max_age: int, audience: str, *, purpose: str = "", max_state: int = 4096) -> Sealer:
    """The current app's :class:`Sealer`: its ``SECRET_KEY`` (and ``SECRET_KEY_FALLBACKS``); without
    a key, :class:`~flask_tooldiscovery.errors.Unavailable` (approvals cannot be checked)."""
    app = current_app
    if not app.secret_key:
        raise Unavailable("This tool asks its caller for input, which is not set up on this server." if purpose
                          else "This tool needs approval, and approvals are not set up on this server.",
                          reason="approvals and rounds of input requests need the app's SECRET_KEY")
    fallbacks = app.config.get("SECRET_KEY_FALLBACKS") or ()
    return Sealer(app.secret_key, list(fallbacks), max_age=max_age, audience=audience, purpose=purpose,
                  max_state=max_state)


def carried_approval(request: Request | None) -> Approval | None:
    """The approval a call's ``request`` carries: the sealed state a client sends back in the
    ``X-Tool-Approval`` header once the person approved (``None`` without one, or without a request)."""
    if request is None:
        return None
    state = request.headers.get(APPROVAL_HEADER, "").strip()
    return Approval(state, True) if state else None


@dataclass(frozen=True)
class CheckedApproval:
    """An approval sent back for this very call, checked: whether the person ``approved``; it is
    good until :meth:`spend` (once, when the call is about to run or was declined)."""

    approved: bool
    opened: Opened
    sealer: Sealer
    storage: str | None

    def spend(self) -> None:
        """Spend it (in the state store at ``storage``, else in this process); spent before:
        :class:`InvalidApproval`."""
        self.sealer.spend(self.opened, self.storage)


def check_approval(tool: Tool, arguments: Any, subject: str | None, call_id: str, approval: Approval | None, *,
                   max_age: int, audience: str, storage: str | None = None) -> CheckedApproval:
    """The approval of a call of a tool that needs one, with ``arguments`` as the tool will receive
    them, checked: without an approval, :class:`ApprovalRequired` carries the sealed request to send
    back; a forged, expired or other call's one is :class:`InvalidApproval`. Spend what this
    returns before the call runs (or once it is declined): a spent one is refused ever after."""
    seal = sealer(max_age, audience)
    if approval is None:
        raise ApprovalRequired(tool, seal.seal(tool, arguments, subject, call_id),
                               prompt_for(tool, plain(arguments) if isinstance(arguments, Mapping) else {}))
    return CheckedApproval(approval.approved, seal.open(approval.state, tool, arguments, subject), seal, storage)


def _subject(context: ToolContext) -> str | None:
    """Whose approval it is: the identity's subject, else the user the call names."""
    return context.user_id if context.identity is None else context.identity.subject


@dataclass(frozen=True)
class ApprovalGate:
    """The approval of one call of ``tool``, decided once (:meth:`Approvals.gate`): whether it
    ``required`` a person's approval and, when it does, the checks and seals every way of asking
    shares. Hand it to each step of the call instead of deciding again."""

    tool: Tool
    required: bool
    settings: Settings

    def _ready(self, arguments: Any, coerce: bool | None) -> tuple[Any, bool]:
        """``arguments`` as the tool will receive them (the approval is for those), and whether
        they fit (those that do not are answered unrun, as invalid, by the call)."""
        settings = self.settings
        ready, errors = prepare(self.tool, arguments, coerce=settings.coerce_arguments if coerce is None else coerce,
                                max_errors=settings.max_validation_errors)
        return ready, not errors

    def check(self, arguments: Any, context: ToolContext, approval: Approval | None, *,
              coerce: bool | None = None) -> CheckedApproval | None:
        """The approval this call carries (``approval``: the caller hands in the one its request
        carries, :func:`carried_approval`), checked (:func:`check_approval`: none at all is
        :class:`ApprovalRequired` with the sealed request). ``None`` when the call needs none, or its
        arguments do not fit."""
        if not self.required:
            return None
        ready, fits = self._ready(arguments, coerce)
        if not fits:
            return None
        settings = self.settings
        return check_approval(self.tool, ready, _subject(context), context.call_id, approval,
                              max_age=settings.approval_ttl, audience=settings.server_name,
                              storage=settings.state_storage_uri)

    def seal_again(self, arguments: Any, context: ToolContext) -> str | None:
        """For a call that needs approval, which ran (so it was approved) and must come back (it
        asked its caller): a fresh sealed approval of this very call, for its next request
        (``None``: it needs none, or its arguments do not fit)."""
        if not self.required:
            return None
        ready, fits = self._ready(arguments, None)
        settings = self.settings
        return sealer(settings.approval_ttl, settings.server_name).seal(
            self.tool, ready, _subject(context), context.call_id) if fits else None


class Approvals:
    """The approvals service of one app: :meth:`gate` decides, once per call, whether the call
    needs a person's approval (``requires_approval``; ``destructiveHint`` too when
    ``TOOLDISCOVERY_APPROVE_DESTRUCTIVE`` is on)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def gate(self, tool: Tool) -> ApprovalGate:
        """The approval of a call of ``tool``: the one place the decision is made, once per call
        (the gate it makes is kept with what the tool works out from its content, for the next
        call that decides the same)."""
        required = needs_approval(tool, destructive=self.settings.approve_destructive)
        derived = tool._derived
        gate: ApprovalGate | None = derived.get(self)
        if gate is None or gate.required is not required:
            gate = derived[self] = ApprovalGate(tool, required, self.settings)
        return gate


__all__ = ["APPROVAL_HEADER", "Approval", "ApprovalGate", "Approvals", "CheckedApproval",
           "Opened", "Sealable", "Sealer", "approved_tools",
           "carried_approval", "check_approval", "digest", "needs_approval", "plain", "prompt_for", "sealer"]
