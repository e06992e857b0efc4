"""``flask tools check --replay``: each tool's declared ``examples`` run through every mounted
dialect in process (the app's test client, so every guard, credential check and wire translation
applies), and the outcomes compared.

It lives with the dialects because it is the one place that speaks several of them: the core
knows none. Replay speaks each built-in dialect as its clients do (a :class:`Driver` per dialect: the request
it sends, and how it reads the answer back into an :class:`Observed`). Dialects without a driver,
or that run no tools, are left out and named. An example is ``{"input": {...}}`` with an optional
``description`` and ``expected_output``; when that is given, every dialect's value is checked
against it too.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from flask import Flask

from ..dialects.content_blocks import rich_value
from ..tools.invoke import GENERIC_FAILURE
from ..tools.model import Tool


@dataclass
class Observed:
    """What one dialect answered: ``kind`` (ok, invalid, tool_error, failure, refused, unknown,
    http NNN), the values the answer may stand for, and the message."""

    kind: str
    values: list[Any] = field(default_factory=list)
    message: str = ""

    def shown(self) -> str:
        if self.kind == "ok":
            return "ok " + _text(self.values[0] if self.values else None)
        return f"{self.kind}: {self.message}" if self.message else self.kind


def _text(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _failed(message: str) -> str:
    return "failure" if message.startswith(GENERIC_FAILURE[:30]) else "tool_error"


def _status_kind(status: int) -> str:
    return {401: "refused", 403: "refused", 404: "unknown", 415: "refused", 421: "refused", 429: "busy",
            503: "busy"}.get(status, f"http {status}")


def _mcp_result(result: dict[str, Any]) -> Observed:
    text = "".join(c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict))
    if result.get("isError"):
        return Observed("invalid" if text.startswith("Invalid arguments") else _failed(text), message=text)
    values: list[Any] = []
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        values += [structured["result"]] if set(structured) == {"result"} else []
        values.append(structured)
    values += [text, *([rich] if (rich := rich_value(result.get("content"))) is not None else [])]
    with contextlib.suppress(ValueError):
        values.append(json.loads(text))
    return Observed("ok", values)


@dataclass(frozen=True)
class Driver:
    """How replay calls a tool through one dialect mounted at ``prefix``."""

    #: ``(prefix, tool, arguments, settings) -> (path, JSON body)``; always a POST.
    request: Callable[[str, Tool, Any, Any], tuple[str, Any]]
    #: ``(status, JSON body) -> Observed``.
    read: Callable[[int, Any], Observed]
    #: Whether the dialect runs tools with these settings.
    enabled: Callable[[Any], bool] = lambda settings: True


def _opal(status: int, body: Any) -> Observed:
    if status == 200:
        return Observed("ok", [body])
    message = str(body.get("error", "")) if isinstance(body, dict) else ""
    if status == 400 and isinstance(body, dict) and "parameter_errors" in body:
        return Observed("invalid", message=message)
    return Observed(_failed(message) if status == 500 else _status_kind(status), message=message)


def _oxp_request(prefix: str, tool: Tool, args: Any, settings: Any) -> tuple[str, Any]:
    from ..dialects.oxp import tool_id

    return f"{prefix}/tools/call", {"request": {"tool_id": tool_id(tool, settings), "input": args}}


def _oxp(status: int, body: Any) -> Observed:
    if status == 200 and isinstance(body, dict):
        result = body.get("result") or {}
        if result.get("success"):
            return Observed("ok", [result.get("value")])
        message = str((result.get("error") or {}).get("message", ""))
        return Observed(_failed(message), message=message)
    message = str(body.get("message", "")) if isinstance(body, dict) else ""
    return Observed("invalid" if status == 422 else _status_kind(status), message=message)


def _tdp(status: int, body: Any) -> Observed:
    if status == 200 and isinstance(body, dict):
        result = body.get("result")
        values = [result["value"]] if isinstance(result, dict) and set(result) == {"value"} else []
        return Observed("ok", [*values, result])
    message = str((body.get("error") if body.get("success") is False else body.get("message")) or "") \
        if isinstance(body, dict) else ""
    if status == 400:
        return Observed("invalid", message=message)
    return Observed(_failed(message) if status == 500 else _status_kind(status), message=message)


def _explorer(status: int, body: Any) -> Observed:
    if isinstance(body, dict) and "isError" in body:
        return _mcp_result(body)
    return Observed(_status_kind(status), message=str(body.get("error", "")) if isinstance(body, dict) else "")


def _mcp(status: int, body: Any) -> Observed:
    if isinstance(body, dict) and isinstance(body.get("result"), dict):
        return _mcp_result(body["result"])
    error = body.get("error") if isinstance(body, dict) else None
    message = str((error or {}).get("message", ""))
    if status in (401, 403, 415, 421):
        return Observed("refused", message=message)
    return Observed("unknown" if message.startswith("Unknown tool") else f"rpc {(error or {}).get('code')}",
                    message=message)


def _utcp(status: int, body: Any) -> Observed:
    if status == 200:
        return Observed("ok", [body])
    message = str(body.get("error", "")) if isinstance(body, dict) else ""
    kind = {400: "invalid", 422: "tool_error", 500: "failure"}.get(status) or _status_kind(status)
    return Observed(kind, message=message)


DRIVERS: dict[str, Driver] = {
    "opal": Driver(lambda p, t, a, s: (f"{p}/tools/{t.name}", {"parameters": a}), _opal),
    "oxp": Driver(_oxp_request, _oxp),
    "tdp": Driver(lambda p, t, a, s: (f"{p}/api/v1/tools/execute", {"tool_name": t.name, "arguments": a}), _tdp),
    "explorer": Driver(lambda p, t, a, s: (f"{p}/tools/{t.name}/call", a), _explorer,
                       enabled=lambda settings: bool(settings.allow_execute)),
    "mcp": Driver(lambda p, t, a, s: (p or "/", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                 "params": {"name": t.name, "arguments": a}}), _mcp),
    "utcp": Driver(lambda p, t, a, s: (f"{p}/tools/{quote(t.name, safe='')}", a), _utcp),
}


def _plain(value: Any) -> Any:
    """``value`` with whole floats as integers (``5.0`` and ``5`` are one JSON number)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, default=str)


def agree(a: Observed, b: Observed) -> bool:
    """Same kind, and for successes a value both answers may stand for."""
    if a.kind != b.kind:
        return False
    return a.kind != "ok" or bool({_canonical(v) for v in a.values} & {_canonical(v) for v in b.values})


@dataclass
class Replay:
    """One example of one tool, as every dialect answered it."""

    tool: str
    example: str
    answers: dict[str, Observed]
    expected: Any = None
    has_expected: bool = False

    def differences(self) -> list[str]:
        """Sentences naming where the answers differ (from each other, or from the expected output)."""
        out = []
        names = list(self.answers)
        groups: list[list[str]] = []
        for name in names:
            for group in groups:
                if agree(self.answers[group[0]], self.answers[name]):
                    group.append(name)
                    break
            else:
                groups.append([name])
        if self.answers and all(o.kind == "refused" for o in self.answers.values()):
            out.append("every dialect refused the call (send credentials with --header 'Authorization: ...')")
        if len(groups) > 1:
            out.append("; ".join(f"{', '.join(g)}: {self.answers[g[0]].shown()}" for g in groups))
        if self.has_expected:
            wrong = [n for n, o in self.answers.items()
                     if o.kind != "ok" or _canonical(self.expected) not in {_canonical(v) for v in o.values}]
            if wrong:
                out.append(f"expected {_text(self.expected)}, but {', '.join(wrong)} answered otherwise")
        return out


def _approval_state(body: Any) -> str | None:
    """The sealed state of a call that needs approval: a 428 body's, or an MCP result's ``_meta``."""
    if not isinstance(body, dict):
        return None
    result = body.get("result")
    meta = result.get("_meta") if isinstance(result, dict) else None
    found = (meta.get("flask-tooldiscovery/approval") or {}) if isinstance(meta, dict) else body
    state = found.get("approval_state") if isinstance(found, dict) else None
    return state if isinstance(state, str) else None


def replay(app: Flask, ext: Any, tools: Iterable[Tool], *, headers: dict[str, str] | None = None,
           include_destructive: bool = False) -> tuple[list[Replay], list[str]]:
    """Every example of ``tools`` through every mounted dialect that runs tools; the replays and
    notes on what was left out."""
    settings = ext.state(app).settings
    notes: list[str] = []
    dialects = []
    for name in settings.dialects:
        dialect = ext.dialect(name)
        driver = DRIVERS.get(name)
        if driver is None:
            if dialect.runs_tools(settings):
                notes.append(f"{name}: no replay driver; left out")
        elif not (dialect.runs_tools(settings) and driver.enabled(settings)):
            notes.append(f"{name}: does not run tools with these settings; left out")
        else:
            dialects.append((name, driver, settings.prefixes.get(name, dialect.default_prefix)))
    hosts = [h for h in settings.allowed_hosts or () if h != "*" and not h.startswith(".")]
    client = app.test_client()
    base = f"http://{hosts[0]}" if hosts else "http://localhost"
    results = []
    for tool in tools:
        if not tool.examples:
            continue
        if not include_destructive and (tool.hint("destructiveHint") or tool.metadata.get("requires_approval")):
            notes.append(f"{tool.name}: destructive or needs approval; not replayed (--include-destructive)")
            continue
        for i, example in enumerate(tool.examples):
            arguments = example.get("input", {}) if isinstance(example, dict) else {}
            answers = {}
            for name, driver, prefix in dialects:
                path, body = driver.request(prefix, tool, arguments, settings)
                with app.app_context():  # a fresh g per call: the CLI's app context would be shared
                    response = client.post(path, json=body, base_url=base, headers=headers or {})
                state = _approval_state(response.get_json(silent=True))
                if state:  # --include-destructive: whoever replays approves the call
                    with app.app_context():
                        response = client.post(path, json=body, base_url=base,
                                               headers={**(headers or {}), "X-Tool-Approval": state})
                answers[name] = driver.read(response.status_code, response.get_json(silent=True))
            label = str(example.get("description") or f"example {i + 1}") if isinstance(example, dict) else f"#{i + 1}"
            has_expected = isinstance(example, dict) and "expected_output" in example
            results.append(Replay(f"{tool.name}@{tool.version}", label, answers,
                                  example.get("expected_output") if has_expected else None, has_expected))
    return results, notes


__all__ = ["DRIVERS", "Driver", "Observed", "Replay", "agree", "replay"]
