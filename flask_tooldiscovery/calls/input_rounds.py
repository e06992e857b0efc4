"""Rounds of input requests: a call whose tool asks its caller something the request did not bring
the answer to ends its round with the requests still open (:class:`InputRequired`); the caller
answers them and sends the call again with the answers and the round's sealed state, and the tool
runs again from the start, now finding every answer given so far (MCP 2026-07-28's multi-round-trip
requests; any protocol with rounds may use it).

A tool therefore runs once per round up to the point where it asks: what it does before asking is
done again each round (ask first, act once the answers are in). Several requests asked together
(:meth:`~..tools.model.ToolContext.ask_all`) are one round; requests asked one after another take a
round each.

The round's state carries the answers of the earlier rounds to the next request, sealed like an
approval (:mod:`.approvals`: signed with the app's ``SECRET_KEY``, for this tool, these arguments
and this caller, expiring with ``TOOLDISCOVERY_APPROVAL_TTL``) under a purpose of its own (an
approval's state opens no round and a round's none approval), and spent once (:mod:`..state.single_use`):
sent again, on any worker, it is refused. Nothing is stored while the caller answers. A call that
needs a person's approval is approved once: a round that ends after the approved run carries a
fresh sealed approval of the same call (spent in its turn when the next round runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidAnswer as InvalidAnswer
from ..errors import InvalidApproval
from ..tools.questions import CannotAnswer, InputRequest, InputRequired, kind, reply_of
from .approvals import Sealable, Sealer, sealer

PURPOSE = "input-round"
#: The largest round state opened (the answers of earlier rounds ride in it, compressed).
MAX_STATE = 64 * 1024


class RoundAsker:
    """Answers a call's input requests from the answers of earlier rounds (``given``) and of this
    request (``responses``, raw, checked when asked), for a caller able to answer ``abilities``
    (capability names). Asking what the caller cannot answer raises
    :class:`~..tools.questions.CannotAnswer`, an unanswered request :class:`InputRequired`, a
    malformed answer :class:`InvalidAnswer`; each is also kept here (the call may swallow it)."""

    def __init__(self, given: Mapping[str, Any], responses: Mapping[str, Any] | None,
                 abilities: Iterable[str]) -> None:
        self.given, self.responses = dict(given), dict(responses or {})
        self.abilities = frozenset(abilities)
        self.answers: dict[str, Any] = dict(given)  # raw answers to carry to the next round
        self.pending: list[InputRequest] = []
        self.missing: str | None = None
        self.invalid: str | None = None

    def __call__(self, requests: Sequence[InputRequest]) -> list[Any]:
        for request in requests:
            if kind(request) not in self.abilities:
                self.missing = kind(request)
                raise CannotAnswer(kind(request))
        out, waiting = [], []
        for request in requests:
            key = str(request.key)
            raw = self.responses[key] if key in self.responses else self.given.get(key)
            if raw is None:
                waiting.append(request)
                continue
            try:
                out.append(reply_of(raw, request))
            except ValueError as exc:
                self.invalid = str(exc)
                raise InvalidAnswer(f"Invalid answer to {key!r}: {exc}") from None
            self.answers[key] = raw
        if waiting:
            self.pending = waiting
            raise InputRequired(waiting)
        return out


@dataclass(frozen=True)
class Named:
    """What a round asks for when it is not a tool's call (a prompt): its name (version: none)."""

    name: str
    version: str = ""


def round_sealer(max_age: int, audience: str, of: str = "") -> Sealer:
    """The current app's sealer of round state (:func:`.approvals.sealer`, this purpose): ``of``
    names what other than a tool's call the rounds are of (``"prompts/get"``), so that the state of
    one kind of request opens for no other (a prompt and a tool may share a name)."""
    return sealer(max_age, audience, purpose=f"{PURPOSE}/{of}" if of else PURPOSE, max_state=MAX_STATE)


def seal_round(seal: Sealer, tool: Sealable, arguments: Any, subject: str | None, call_id: str,
               answers: Mapping[str, Any], approval: str | None = None) -> str:
    """The state of a round that ends with ``answers`` given so far (and, for a call the person
    approved, a fresh sealed approval of it, so that the next round runs without asking again)."""
    carried: dict[str, Any] = {"answers": dict(answers), **({"approval": approval} if approval else {})}
    return seal.seal(tool, arguments, subject, call_id, carried=carried)


def open_round(seal: Sealer, state: str, tool: Sealable, arguments: Any, subject: str | None,
               storage: str | None) -> tuple[dict[str, Any], str | None]:
    """The answers a round's ``state`` carries and the approval it carries (if any), once checked
    (this call's, unexpired, untampered) and spent: :class:`~..errors.InvalidApproval` otherwise,
    or when it was spent before."""
    opened = seal.open(state, tool, arguments, subject)
    carried = opened.data.get("x")
    answers = carried.get("answers") if isinstance(carried, Mapping) else None
    if not isinstance(answers, Mapping):
        raise InvalidApproval("round state malformed")
    seal.spend(opened, storage)
    approval = carried.get("approval") if isinstance(carried, Mapping) else None
    return dict(answers), approval if isinstance(approval, str) else None


__all__ = ["MAX_STATE", "PURPOSE", "InputRequired", "InvalidAnswer", "Named", "RoundAsker", "open_round",
           "round_sealer", "seal_round"]
