"""A fresh machine passes, honestly: the suite runs in a virtual environment of its own (README's
test command and ``.ci/run`` create it without the machine's site packages), and everything a test
or a documentation page imports is brought by what ``setup.cfg`` declares: the ``test`` extra and
what its requirements require in turn. Nothing installed by hand can make the suite pass."""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_docs import PAGES, blocks_of

ROOT = Path(__file__).resolve().parent.parent

#: Top-level names that are this checkout's own code, or modules a test writes before importing.
LOCAL = {"flask_tooldiscovery", "tests", "example_app", "conftest"}
#: Imported on purpose without being declared, and why.
ABSENT_ON_PURPOSE = {
    "pymemcache": "test_operating shows the install line init_app gives when a storage's driver is missing",
}


def declared_distributions(name: str = "flask-tooldiscovery", extras: frozenset[str] = frozenset({"test"})) -> set[str]:
    """The distributions installing ``name[extras]`` brings: its requirements for those extras and,
    in turn, theirs (each with the extras it was asked for), as the installed metadata says."""
    found: set[str] = set()
    todo = [(name, extras)]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        dist_name, wanted = todo.pop()
        key = (canonicalize_name(dist_name), wanted)
        if key in seen:
            continue
        seen.add(key)
        found.add(key[0])
        try:
            requires = metadata.distribution(dist_name).requires or []
        except metadata.PackageNotFoundError:
            continue  # declared, not installed here: the import check below says which import misses
        for line in requires:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (wanted or {""})):
                continue
            todo.append((req.name, frozenset(req.extras)))
    return found


def imported_names(source: str) -> Iterator[str]:
    """The top-level module names ``source`` imports, absolute imports, ``importorskip`` and
    ``import_module`` of a literal name included (a skip for a missing package hides it too)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in {"importorskip", "import_module"}):
            yield node.args[0].value.split(".")[0]


def sources() -> Iterator[tuple[str, str]]:
    """``(where, source)`` of every test module, the example app, and every Python block of the docs."""
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "example_app").rglob("*.py")]):
        yield path.relative_to(ROOT).as_posix(), path.read_text()
    for page in PAGES:
        for language, source, line in blocks_of(page.read_text()):
            if language == "python":
                yield f"{page.relative_to(ROOT).as_posix()}:{line}", source


def saved_modules() -> set[str]:
    """Modules a docs page saves ("Save this as ``name.py``") or a test writes (``name.py`` in a string)."""
    names = set()
    for page in PAGES:
        names.update(re.findall(r"Save this as ``(\w+)\.py``", page.read_text()))
    for path in (ROOT / "tests").rglob("*.py"):
        names.update(re.findall(r"[\"'/](\w+)\.py[\"']", path.read_text()))
    return names


def test_every_import_of_the_tests_and_the_docs_comes_from_a_declared_requirement() -> None:
    declared = declared_distributions()
    providers = metadata.packages_distributions()
    local = LOCAL | saved_modules() | {p.stem for p in (ROOT / "tests").rglob("*.py")} \
        | {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
    missing: dict[str, list[str]] = {}
    for where, source in sources():
        try:
            names = set(imported_names(source))
        except SyntaxError:
            continue  # a page's fragment that is not a whole program (test_docs says which run)
        for name in names - set(sys.stdlib_module_names) - local - set(ABSENT_ON_PURPOSE):
            dists = {canonicalize_name(d) for d in providers.get(name, [])}
            if not dists & declared:
                missing.setdefault(name, []).append(where)
    assert missing == {}, "imported, but no requirement of the test extra brings it (add it to setup.cfg):\n" + \
        "\n".join(f"  {name}: {', '.join(where[:3])}" for name, where in sorted(missing.items()))


def test_the_checker_sees_an_undeclared_import() -> None:
    """The check above can fail: a name no declared requirement provides is reported."""
    assert set(imported_names("import scipy\nimport pytest\npytest.importorskip('pandas')\n")) == \
        {"scipy", "pytest", "pandas"}
    declared = declared_distributions()
    assert "pytest" in declared and "flask" in declared and "scipy" not in declared
    assert "hiredis" in declared  # redis[hiredis]: a requirement's own extras are followed


def test_the_suite_runs_in_an_environment_of_its_own() -> None:
    """Under CI (``.ci/run``, README's test command) the interpreter is a virtual environment's,
    made without the machine's site packages."""
    if not os.environ.get("CI"):
        pytest.skip("outside CI the suite may run wherever its reader likes; .ci/run makes the environment")
    assert sys.prefix != sys.base_prefix, "not in a virtual environment"
    config = (Path(sys.prefix) / "pyvenv.cfg").read_text()
    assert re.search(r"^include-system-site-packages\s*=\s*false\s*$", config, re.M), config
    assert not any(p.startswith(sys.base_prefix) and "site-packages" in p for p in sys.path), sys.path
