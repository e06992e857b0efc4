"""npm packages the tests need (Node 22, the MCP conformance suite, the TypeScript client, the MCP
Apps host), installed once into the test cache; outside CI a missing npm or a failed install skips
the test, in CI it fails it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("TOOLDISCOVERY_TEST_CACHE") or Path.home() / ".cache" / "flask-tooldiscovery-tests")


def unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"cannot run in CI: {why}")
    pytest.skip(why)


def installed(folder: str, packages: tuple[str, ...], ready: Callable[[Path], bool], *,
              module: bool = False) -> Path:
    """``CACHE/folder`` with ``packages`` installed by npm unless ``ready(home)`` says they are
    (``module``: its package.json says ``"type": "module"``, for scripts written beside it)."""
    home = CACHE / folder
    if ready(home):
        return home
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not installed")
    home.mkdir(parents=True, exist_ok=True)
    (home / "package.json").write_text('{"private": true, "type": "module"}\n' if module else '{"private": true}\n')
    done = subprocess.run([str(npm), "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
                           str(home), *packages], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not ready(home):
        unavailable(f"npm install {' '.join(packages)} failed: {done.stdout[-1500:]}")
    return home
