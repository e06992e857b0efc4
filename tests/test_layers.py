"""The package's imports run one way, top-down through its layers, with no circle (imports made
only for type checking and imports inside functions included): extension and the CLI, then the
dialects, the serving core, the call services, observability and the lint rules, the tool model, and the
foundation modules (errors, settings, signals) everyone may use."""

from __future__ import annotations

import ast
from pathlib import Path

import flask_tooldiscovery

PACKAGE = Path(flask_tooldiscovery.__file__).resolve().parent
NAME = "flask_tooldiscovery"

#: Each layer and its rank: a module may import modules of its own layer or of a lower rank.
LAYERS = {
    "extension": 6, "registering": 6, "__init__": 6,
    "cli": 5,
    "dialects": 4,
    "serving": 3, "identity": 3,
    "calls": 2, "observe": 2, "lint": 2,
    "tools": 1, "schema": 1, "catalog": 1, "views": 1, "runtime": 1,
    "errors": 0, "settings": 0, "settings_parsers": 0, "signals": 0,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join([NAME, *parts])


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``module`` imports, wherever the import statement stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(NAME))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if not source.startswith(NAME):
                continue
            for alias in node.names:  # "from . import wire" imports a module, not a name
                candidate = f"{source}.{alias.name}"
                found.add(candidate if candidate in known else source)
    return {m for m in found if m in known and m != module}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {m: imports(m, p, known) for m, p in found.items()}


def test_imports_run_down_the_layers() -> None:
    against = sorted(f"{a} -> {b}" for a, targets in graph().items() for b in targets
                     if (LAYERS[layer(a)] < LAYERS[layer(b)] and layer(b) != "__init__") or
                     (layer(b) == "__init__" and a != NAME and b == NAME))
    assert against == [], "imports against the layers:\n" + "\n".join(against)


def test_every_module_is_in_a_layer() -> None:
    assert sorted({layer(m) for m in modules()} - set(LAYERS)) == []


def test_no_import_circle() -> None:
    edges = graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert circles == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_checker_sees_an_import_against_the_layers(tmp_path: Path) -> None:
    """The walk reads TYPE_CHECKING blocks and relative imports (so the tests above can fail)."""
    path = PACKAGE / "tools" / "model.py"
    found = imports(f"{NAME}.tools.model", path, set(modules()))
    assert f"{NAME}.errors" in found
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..serving.pipeline import Pipeline\n"
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    assert imports(f"{NAME}.tools.probe", probe, set(modules())) == {f"{NAME}.serving.pipeline"}


def test_no_module_is_over_400_lines() -> None:
    long = {module_name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}
