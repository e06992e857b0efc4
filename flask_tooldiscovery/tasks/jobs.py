"""What an engine carries to where a task runs: a :class:`CallJob` (run the task's call) or a
:class:`FinishJob` (one attempt of what its dialect does once it ended).

A job crosses processes and hosts (Celery's broker, the outbox), so it travels as plain JSON:
:meth:`CallJob.to_wire` and :func:`job_from_wire`. What a call job holds of its request (the
arguments, the caller's identity, secrets and credentials, the headers it carries) travels
sealed (:mod:`.sealing`), beside the few fields that route it in clear. The wire dict names its
version (``"v"``); a message an earlier release queued (no ``"v"``, everything in clear) still
reads, and one of a version this release does not know is refused with
:class:`_JobVersionError` rather than run half-understood.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolDiscoveryError
from .sealing import Sealer, _Unsealable

#: The version of the job's wire dict this release writes (2: what the call holds of its request, sealed).
WIRE_VERSION = 2
#: The versions it reads (0: an earlier release's message, which named none; 1: in clear).
READABLE = frozenset({0, 1, 2})
#: The fields of a call job that travel sealed: what the call holds of its request.
SEALED = ("arguments", "user_id", "secrets", "authorization", "extra", "headers", "remote_addr", "identity")
_COMPACT = json.JSONEncoder(separators=(",", ":"), default=str)


class _JobVersionError(ToolDiscoveryError, ValueError):
    """A job whose wire version this release cannot read (queued by a newer release)."""


@dataclass(frozen=True)
class CallJob:
    """Run task ``task``'s call: its tool and version, arguments, the call's ids, and what the
    call's request and caller gave it (identity, secrets, authorization, headers)."""

    task: str
    dialect: str
    tool: str
    version: str
    arguments: Any = None
    call_id: str = ""
    trace_id: str | None = None
    user_id: str | None = None
    #: The dialect's finisher to run once the call ended (``None``: none).
    then: str | None = None
    #: The caller's rate limit was counted when the task was accepted.
    charged: bool = False
    secrets: dict[str, Any] = field(default_factory=dict)
    authorization: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    remote_addr: str | None = None
    #: The caller's identity (``subject``, ``scopes``, ``claims``, ``method``), or ``None``.
    identity: dict[str, Any] | None = None

    kind = "call"

    @property
    def job_id(self) -> str:
        """The engine's id for this job (one per task)."""
        return self.task

    def to_wire(self, sealer: Sealer) -> dict[str, Any]:
        """The job as plain JSON, with its version; what it holds of its request sealed."""
        private = _COMPACT.encode({name: getattr(self, name) for name in SEALED}).encode()
        return {"v": WIRE_VERSION, "kind": self.kind, "task": self.task, "dialect": self.dialect, "tool": self.tool,
                "version": self.version, "call_id": self.call_id, "trace_id": self.trace_id, "then": self.then,
                "charged": self.charged, "sealed": sealer.seal(private)}


@dataclass(frozen=True)
class FinishJob:
    """Attempt ``attempt`` of what task ``task``'s dialect does once it ended (its finisher)."""

    task: str
    dialect: str
    attempt: int = 1

    kind = "finish"

    @property
    def job_id(self) -> str:
        return f"{self.task}:then:{self.attempt}"

    def to_wire(self, sealer: Sealer | None = None) -> dict[str, Any]:
        """The job as plain JSON (nothing in it is secret: ``sealer`` is not needed)."""
        return {"v": WIRE_VERSION, "kind": self.kind, "task": self.task, "dialect": self.dialect,
                "attempt": self.attempt, "job_id": self.job_id}


Job = CallJob | FinishJob


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def job_from_wire(data: Any, sealer: Sealer | None) -> Job:
    """The job of a wire dict (this release's, or an earlier one's), its sealed part opened with
    ``sealer``; :class:`_JobVersionError` for a version it cannot read,
    :class:`~.sealing._Unsealable` for a sealed part no key opens, :class:`ValueError` for what
    is no job."""
    if not isinstance(data, dict) or not isinstance(data.get("task"), str):
        raise ValueError("not a flask-tooldiscovery job: no task id")
    version = data.get("v", 0)
    if version not in READABLE:
        raise _JobVersionError(f"job of task {data['task']} has wire version {version!r}, which this release of "
                              f"flask-tooldiscovery cannot read (it reads {sorted(READABLE)}): upgrade the workers")
    if data.get("kind") == "finish":
        return FinishJob(task=data["task"], dialect=str(data.get("dialect") or ""),
                         attempt=int(data.get("attempt") or 1))
    if "sealed" in data:
        if sealer is None:
            raise _Unsealable(f"job of task {data['task']} is sealed, and this app has no SECRET_KEY to open it")
        opened = json.loads(sealer.open(str(data["sealed"])))
        data = {**data, **{name: opened.get(name) for name in SEALED}}
    identity = data.get("identity")
    return CallJob(
        task=data["task"], dialect=str(data.get("dialect") or ""), tool=str(data.get("tool") or ""),
        version=str(data.get("version") or ""), arguments=data.get("arguments"),
        call_id=str(data.get("call_id") or data["task"]), trace_id=data.get("trace_id"), user_id=data.get("user_id"),
        then=data.get("then"), charged=bool(data.get("charged")), secrets=_dict(data.get("secrets")),
        authorization=_dict(data.get("authorization")), extra=_dict(data.get("extra")),
        headers={str(k): str(v) for k, v in _dict(data.get("headers")).items()},
        remote_addr=data.get("remote_addr"), identity=dict(identity) if isinstance(identity, dict) else None)


__all__ = ["READABLE", "SEALED", "WIRE_VERSION", "CallJob", "FinishJob", "Job", "job_from_wire"]
