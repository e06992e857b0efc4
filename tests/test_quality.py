"""The package stays typed and lint-clean: CI fails on a ruff finding or a ``mypy --strict`` error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", "flask_tooldiscovery", "tests", "example_app", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = run("mypy", "--strict", "flask_tooldiscovery")
    assert result.returncode == 0, result.stdout + result.stderr
