"""Calls a person must approve before they run, across requests, workers and hosts.

A tool that needs approval (``requires_approval=True``; also ``destructiveHint`` when
``TOOLDISCOVERY_APPROVE_DESTRUCTIVE`` is on) is not run on first request: the pipeline answers
:class:`ApprovalRequired` with a *sealed* request — the tool, a digest of the arguments, the caller
and the time, signed with the app's ``SECRET_KEY`` (itsdangerous, as Flask's sessions are;
``SECRET_KEY_FALLBACKS`` still verify, for key rotation). Each dialect carries it its own way (MCP's
``requestState``, an error code elsewhere); the client asks its user and sends it back with the
answer. Any worker on any host can then check it: nothing is stored. A sealed request is only good
for the same tool, the same arguments and the same caller, until it expires; tampered, expired or
mismatched state is refused with :class:`InvalidApproval`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flask import current_app, has_request_context, request
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from ..errors import BadRequest, CoreError, Unavailable
from ..tools.model import Tool

SALT = "flask-tooldiscovery.approval"
#: The request header a JSON dialect's client sends the sealed state back in, once the person approved.
APPROVAL_HEADER = "X-Tool-Approval"


class ApprovalRequired(CoreError):
    """The tool needs a person's approval first; ``state`` is the sealed request to send back
    with it, ``prompt`` the question to put to the person."""

    status = 428
    default_message = "This tool needs approval before it runs."

    def __init__(self, tool: Tool, state: str, prompt: str) -> None:
        super().__init__(f"Tool {tool.name!r} needs approval before it runs.",
                         extra={"code": "approval_required", "approval_state": state, "prompt": prompt})
        self.tool = tool
        self.state = state
        self.prompt = prompt


class InvalidApproval(BadRequest):
    """The approval state sent back is tampered with, expired, or for another call."""

    default_message = "The approval is invalid or expired; call the tool again to ask anew."

    def __init__(self, reason: str) -> None:
        super().__init__(extra={"code": "invalid_approval"}, reason=reason)


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


def prompt_for(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The question put to the person: the tool and the arguments it would run with."""
    shown = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, default=str)
    if len(shown) > 500:
        shown = shown[:497] + "..."
    return f"Allow the tool {tool.title or tool.name!r} to run with {shown}?"


def digest(arguments: Any) -> str:
    """A digest of the arguments exactly as sent (canonical JSON)."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Sealer:
    """Seals and opens approval state with the app's secret key (and its fallbacks)."""

    def __init__(self, secret_key: str | bytes, fallbacks: Sequence[str | bytes] = (), max_age: int = 600,
                 audience: str = "") -> None:
        # itsdangerous signs with the last key and verifies with all of them. The audience (the
        # server's name) is in the salt: another service sharing the key cannot mint state for this one.
        keys = [k.encode("utf-8") if isinstance(k, str) else k for k in (*fallbacks, secret_key)]
        self._serializer = URLSafeTimedSerializer(keys, salt=f"{SALT}:{audience}" if audience else SALT)
        self.max_age = max_age

    def seal(self, tool: Tool, arguments: Any, subject: str | None, call_id: str) -> str:
        """The sealed request for a call of ``tool`` with ``arguments`` by ``subject``."""
        data = {"t": tool.name, "v": tool.version, "a": digest(arguments), "s": subject, "c": call_id}
        return str(self._serializer.dumps(data))

    def open(self, state: str, tool: Tool, arguments: Any, subject: str | None) -> None:
        """Check ``state`` is this call's, unexpired and untampered; :class:`InvalidApproval` otherwise."""
        if not isinstance(state, str) or not state or len(state) > 4096:
            raise InvalidApproval("approval state missing or oversized")
        try:
            data = self._serializer.loads(state, max_age=self.max_age)
        except SignatureExpired:
            raise InvalidApproval("approval state expired") from None
        except BadSignature:
            raise InvalidApproval("approval state tampered with or signed by another key") from None
        if not isinstance(data, dict):
            raise InvalidApproval("approval state malformed")
        if data.get("t") != tool.name or data.get("v") != tool.version:
            raise InvalidApproval("approval state is for another tool")
        if data.get("a") != digest(arguments):
            raise InvalidApproval("approval state is for other arguments")
        if data.get("s") != subject:
            raise InvalidApproval("approval state is for another caller")


def sealer(max_age: int, audience: str) -> Sealer:
    """The current app's :class:`Sealer`: its ``SECRET_KEY`` (and ``SECRET_KEY_FALLBACKS``); without
    a key, :class:`~flask_tooldiscovery.errors.Unavailable` (approvals cannot be checked)."""
    app = current_app
    if not app.secret_key:
        raise Unavailable("This tool needs approval, and approvals are not set up on this server.",
                          reason="approvals need the app's SECRET_KEY")
    fallbacks = app.config.get("SECRET_KEY_FALLBACKS") or ()
    return Sealer(app.secret_key, list(fallbacks), max_age=max_age, audience=audience)


def carried_approval() -> Approval | None:
    """The approval the current request carries: the sealed state a client sends back in the
    ``X-Tool-Approval`` header once the person approved (``None`` without one)."""
    if not has_request_context():
        return None
    state = request.headers.get(APPROVAL_HEADER, "").strip()
    return Approval(state, True) if state else None


def approved(tool: Tool, arguments: Any, subject: str | None, call_id: str, approval: Approval | None, *,
             max_age: int, audience: str) -> bool:
    """Whether a call of a tool that needs approval may run: ``True`` with an approval of this very
    call, ``False`` when the person declined it. Without an approval, :class:`ApprovalRequired`
    carries the sealed request to send back; a forged, expired or other call's one is
    :class:`InvalidApproval`."""
    seal = sealer(max_age, audience)
    if approval is None:
        raise ApprovalRequired(tool, seal.seal(tool, arguments, subject, call_id),
                               prompt_for(tool, arguments if isinstance(arguments, dict) else {}))
    seal.open(approval.state, tool, arguments, subject)
    return approval.approved


__all__ = ["APPROVAL_HEADER", "Approval", "ApprovalRequired", "InvalidApproval", "Sealer", "approved",
           "carried_approval", "digest", "needs_approval", "prompt_for", "sealer"]
