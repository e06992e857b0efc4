"""Golden wire output: every case of ``tests/golden/cases.py``, replayed against a fresh app, must
answer the recorded status, headers (Content-Type, WWW-Authenticate, Allow, Cache-Control,
Access-Control-*) and body text, byte for byte once the per-request values (timestamps,
durations, generated ids) are normalized. Re-record with ``python tests/golden/record.py`` only
when a change of the wire output is intended."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.golden.cases import CASES, DIALECTS, Case, golden_path, send


def _load() -> list[tuple[str, dict[str, Any]]]:
    entries = []
    for dialect in DIALECTS:
        path = golden_path(dialect)
        if path.exists():
            entries += [(f"{dialect}/{e['name']}", e) for e in json.loads(path.read_text(encoding="utf-8"))]
    return entries


GOLDEN = _load()
CASES_BY_ID: dict[str, Case] = {c.id: c for c in CASES}


def test_golden_files_cover_exactly_the_cases() -> None:
    missing = [d for d in DIALECTS if not golden_path(d).exists()]
    assert missing == [], f"golden files missing for {missing}: run tests/golden/record.py"
    recorded = [case_id for case_id, _ in GOLDEN]
    assert len(recorded) == len(set(recorded)), "a case is recorded twice"
    assert sorted(recorded) == sorted(CASES_BY_ID), "cases.py and the golden files list different cases"


@pytest.mark.parametrize(("case_id", "golden"), GOLDEN, ids=[case_id for case_id, _ in GOLDEN])
def test_wire_output_is_unchanged(case_id: str, golden: dict[str, Any]) -> None:
    case = CASES_BY_ID.get(case_id)
    assert case is not None, f"{case_id} is recorded but no longer in cases.py"
    assert case.request_record() == golden["request"], "the request changed since it was recorded"
    result = send(case)
    expected = golden["response"]
    assert result.status == expected["status"]
    assert result.headers == expected["headers"]
    assert result.normalized == expected.get("normalized", [])
    assert result.body == expected["body"]
