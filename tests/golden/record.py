"""Rewrite the golden files: ``python tests/golden/record.py`` (from the repository root).

Sends every case of :mod:`tests.golden.cases` to a fresh app and writes one JSON file per dialect,
``tests/golden/<dialect>.json``: a list of ``{"name", "request", "response"}``. Whatever the
imported ``flask_tooldiscovery`` answers becomes what ``tests/test_golden.py`` demands, so record
only from the reference version of the package (the path it is imported from is printed; put a
frozen copy first with ``PYTHONPATH=<copy>``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` importable, after PYTHONPATH
    sys.path.append(str(ROOT))

from tests.golden.cases import DIALECTS, cases_for, golden_path, send  # noqa: E402


def record() -> dict[str, int]:
    import flask_tooldiscovery

    print(f"recording with {flask_tooldiscovery.__file__}", file=sys.stderr)
    counts: dict[str, int] = {}
    for dialect in DIALECTS:
        entries = []
        names: set[str] = set()
        for case in cases_for(dialect):
            if case.name in names:
                raise SystemExit(f"duplicate case name {case.id}")
            names.add(case.name)
            entries.append({"name": case.name, "request": case.request_record(), "response": send(case).record()})
        text = json.dumps(entries, indent=2, ensure_ascii=False) + "\n"
        golden_path(dialect).write_text(text, encoding="utf-8")
        counts[dialect] = len(entries)
    return counts


if __name__ == "__main__":
    counts = record()
    print(", ".join(f"{k}: {v}" for k, v in counts.items()), f"(total {sum(counts.values())})")
