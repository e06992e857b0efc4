"""schemathesis over the served OpenAPI document (``/tools/openapi.json``) of the example app, once
per dialect the document can describe: every operation (every tool) is called with what the document
says is valid and invalid, and every answer is checked against it with schemathesis' default checks
(status code, content type, headers and body conformance, valid data accepted, invalid refused,
other methods refused with 405 and ``Allow``), run in-process through the app's WSGI interface.

The run is bounded and repeatable: few examples per operation, derandomized, no deadline. Where
a default check's expectation differs from a dialect's wire contract, the config below widens it
and says why; nothing is switched off without a stronger check put in its place.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

import example_app
from example_app import create_app
from flask_tooldiscovery.signals import tool_failed

DIALECTS = ("utcp", "opal", "oxp", "tdp", "explorer", "mcp")
#: schemathesis' own list of what a valid request may be answered with, and why a dialect's may
#: also be answered otherwise:
#: - 428: a tool that needs a person's approval (create_order, remove_pet) answers every call
#:   without one with 428 and the sealed request, as the document declares for those tools only;
#:   the document cannot make the approval part of a request schemathesis generates.
#: - 422 (utcp only): a tool may refuse arguments its schema allows (an unknown city, no pet of that
#:   id, an empty list it needs one item in): its own error (a ToolError), which UTCP answers 422
#:   (UTCP clients take any 200 as success). Other dialects answer it 200 (oxp, mcp) or 500.
POSITIVE = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx", "428"]
TOOL_ERROR = {"utcp": ["422"]}

#: Every tool failure the example's tools produced during one case: ``(tool, expected)``, where
#: ``expected`` is True for a ToolError the tool raised on purpose.
FAILURES: list[tuple[str, bool]] = []


def _record(app: Flask, tool: Any, outcome: Any = None, **fields: Any) -> None:
    if outcome is None or outcome.status == "failure":
        FAILURES.append((tool.name, outcome is not None and outcome.failure is not None and outcome.failure.expected))


def only_tool_errors(ctx: Any, response: Any, case: Any) -> bool | None:
    """In place of ``not_a_server_error``: no tool may fail unexpectedly (whatever status answers
    it: OXP and MCP answer failures with a 200), and a 5xx answers nothing but a tool's own error
    (a ToolError), which Opal, TDP and the explorer answer 500 by their wire contract."""
    unexpected = [name for name, expected in FAILURES if not expected]
    assert not unexpected, f"{unexpected} failed with an unexpected error (a crash, not a ToolError)"
    if response.status_code >= 500:
        assert FAILURES, f"a {response.status_code} that is not a tool's own error: {response.text[:300]}"
    return None


#: The apps the documents are served by, made at collection: each test connects ``_record`` to their
#: ``tool_failed`` and disconnects it after (a receiver left connected makes every later test's
#: calls observed ones, which test_plain_call counts).
APPS: list[Flask] = []


def _schema(dialect: str) -> Any:
    app = create_app({"TESTING": True, "SECRET_KEY": "fuzz", "TOOLDISCOVERY_OPENAPI_DIALECT": dialect})
    APPS.append(app)
    config = schemathesis.Config.from_dict({"checks": {"positive_data_acceptance": {
        "expected-statuses": POSITIVE + TOOL_ERROR.get(dialect, [])}}})
    return schemathesis.openapi.from_wsgi("/tools/openapi.json", app, config=config)


@pytest.fixture(autouse=True)
def _fresh_failures(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # pack_orders waits 0.3 s per order to show its progress live (up to 6 s a call): its pace is
    # nothing the document says, so the run does not wait for it.
    monkeypatch.setattr(example_app, "PACK_SECONDS", 0)
    FAILURES.clear()
    for app in APPS:
        tool_failed.connect(_record, app, weak=False)
    yield
    tool_failed.disconnect(_record)  # from every app (a sender's disconnect alone leaves it a receiver)
    FAILURES.clear()


def _names_a_callback(case: Any) -> bool:
    """An Opal call naming an ``async_callback`` URL: the server would resolve its host and POST the
    result there (test_opal_async covers that against a local receiver); left out of this hermetic run."""
    callback = case.body.get("async_callback") if isinstance(case.body, dict) else None
    return isinstance(callback, dict) and isinstance(callback.get("url"), str)


@schemathesis.pytest.parametrize(**{dialect: _schema(dialect) for dialect in DIALECTS})
@settings(max_examples=5, derandomize=True, deadline=None, database=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
def test_every_answer_is_the_one_the_served_document_declares(case: Any) -> None:
    if _names_a_callback(case):
        return
    FAILURES.clear()
    case.call_and_validate(excluded_checks=[not_a_server_error], additional_checks=[only_tool_errors])
