"""``flask tools check --replay``: each tool's declared ``examples`` run through every mounted
dialect in process (the app's test client, so every guard, credential check and wire translation
applies), and the outcomes compared.

Each dialect is spoken as its clients speak it, by the :class:`~..dialects.driver.Driver` its
:class:`~..dialects.Dialect` declares: the request it sends, and how it reads the answer back into
an :class:`~..dialects.driver.Observation`. Dialects without a driver, or that run no tools, are
left out and named. An example is ``{"input": {...}}`` with an optional ``description`` and
``expected_output``; when that is given, every dialect's value is checked against it too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flask import Flask

from ..dialects.driver import Observation
from ..tools.model import Tool


def shown(observed: Observation) -> str:
    """An observation in a few words: ``ok`` and its value, else its kind and message."""
    if observed.kind == "ok":
        return "ok " + _text(observed.value)
    return f"{observed.kind}: {observed.message}" if observed.message else observed.kind


def _text(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


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


def agree(a: Observation, b: Observation) -> bool:
    """Same kind, and for successes a value both answers may stand for."""
    if a.kind != b.kind:
        return False
    return a.kind != "ok" or bool({_canonical(v) for v in a.values} & {_canonical(v) for v in b.values})


@dataclass
class Replay:
    """One example of one tool, as every dialect answered it."""

    tool: str
    example: str
    answers: dict[str, Observation]
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
            out.append("; ".join(f"{', '.join(g)}: {shown(self.answers[g[0]])}" for g in groups))
        if self.has_expected:
            wrong = [n for n, o in self.answers.items()
                     if o.kind != "ok" or _canonical(self.expected) not in {_canonical(v) for v in o.values}]
            if wrong:
                out.append(f"expected {_text(self.expected)}, but {', '.join(wrong)} answered otherwise")
        return out


def replay(app: Flask, ext: Any, tools: Iterable[Tool], *, headers: dict[str, str] | None = None,
           include_destructive: bool = False) -> tuple[list[Replay], list[str]]:
    """Every example of ``tools`` through every mounted dialect that runs tools; the replays and
    notes on what was left out."""
    settings = ext.state(app).settings
    notes: list[str] = []
    dialects = []
    for name in settings.dialects:
        dialect = ext.dialect(name)
        if dialect.driver is None:
            if dialect.runs_tools(settings):
                notes.append(f"{name}: no replay driver; left out")
        elif not dialect.runs_tools(settings):
            notes.append(f"{name}: does not run tools with these settings; left out")
        else:
            dialects.append((name, dialect.driver, settings.prefixes.get(name, dialect.default_prefix)))
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
                call = driver.call_tool(prefix, tool, arguments, settings)
                with app.app_context():  # a fresh g per call: the CLI's app context would be shared
                    response = client.open(call.path, method=call.method, json=call.json, base_url=base,
                                           headers=headers or {})
                state = driver.approval_state(response.get_json(silent=True))
                if state:  # --include-destructive: whoever replays approves the call
                    with app.app_context():
                        response = client.open(call.path, method=call.method, json=call.json, base_url=base,
                                               headers={**(headers or {}), "X-Tool-Approval": state})
                answers[name] = driver.read(response.status_code, response.get_json(silent=True))
            label = str(example.get("description") or f"example {i + 1}") if isinstance(example, dict) else f"#{i + 1}"
            has_expected = isinstance(example, dict) and "expected_output" in example
            results.append(Replay(f"{tool.name}@{tool.version}", label, answers,
                                  example.get("expected_output") if has_expected else None, has_expected))
    return results, notes


__all__ = ["Replay", "agree", "replay", "shown"]
