"""The package's imports run one way, with no circle (imports made only for type checking and
imports inside functions included), along edges listed here one by one: each package says which
packages it may import. From the top: the public face and the extension, the CLI, the dialects,
the serving core and identity, the call services, observability and the lint rules, the catalog,
views and the call runtime, the tool model, the schema engine, and the foundation modules
(errors, settings, signals) everyone may use. A dialect reaches ``serving`` (and ``identity``,
split from it), the declared faces of the services behind it (``tasks.runner``, and the ``__init__``
of ``catalog``, ``calls`` and ``state``), its lint target, the public face of the tool model and
the JSON-Schema reading helpers it is made of, nothing else.

An edge today's code has and the design forbids is listed in :data:`KNOWN_EXCEPTIONS`, one import
a line, so that it is seen and the list can only shrink: a listed import that is gone fails too."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import flask_tooldiscovery

PACKAGE = Path(flask_tooldiscovery.__file__).resolve().parent
NAME = "flask_tooldiscovery"

#: What every package may import.
FOUNDATION = {"errors", "settings", "settings_parsers", "signals"}

#: The packages each package may import besides its own modules. A package is a folder of the
#: library or one of its top-level modules; an entry names a package, or one module of it
#: (``"observe.logs"``). An entry ``"catalog.__init__"`` names a package's face alone (its ``__init__``,
#: whose docstring declares it the contract), not the modules behind it. A new package adds its row
#: here (and a test below fails until it does).
ALLOWED: dict[str, set[str]] = {
    # The public face puts the public names together; the extension builds everything at init_app.
    "__init__": {"extension", "dialects", "identity", "catalog", "runtime", "schema", "tools", *FOUNDATION},
    "extension": {"cli", "dialects", "serving", "identity", "tasks", "calls", "state", "observe", "catalog", "views",
                  "runtime", "tools", *FOUNDATION},
    # ``flask tools``: runs calls through the dialects' pipelines, outside a request.
    "cli": {"dialects", "serving", "calls", "lint", "schema", "tools", *FOUNDATION},
    # A dialect reaches serving (identity was part of it) and the tool model's public face, names
    # its lint target (the Dialect contract's lint_tool), and logs on the library's logger.
    # The tasks service is reached as serving is, through its face alone (tasks.runner: start, read,
    # answer and cancel a task, and the record's types; its docstring states it), never the records.
    # The catalog (prompts, resources, skills, completion, tool UIs) is handed to a dialect by serving
    # (core.prompts, core.resources, core.skills); the types it reads them with come from the catalog's
    # face (catalog.__init__), never the modules behind it.
    # The tool model is made of JSON Schemas, and a dialect's wire translation reads them node by
    # node with the schema engine's reading helpers (schema.json_schema: split_nullable,
    # primary_type, inline_refs; pure functions over JSON that know no tool), as lint and the CLI do.
    # The call services and the state a dialect's wire carries (a streamed call, an approval, rounds
    # of input requests; a mailbox for a client's answer, a change to notify) come from their faces
    # (calls.__init__, state.__init__), whose docstrings state the contract, never the modules behind.
    "dialects": {"serving", "identity", "tasks.runner", "catalog.__init__", "calls.__init__", "state.__init__",
                 "lint", "tools", "schema.json_schema", "observe.logs", *FOUNDATION},
    # The serving core: the pipeline orchestrates identity, the call services, the runtime.
    "serving": {"identity", "calls", "state", "observe", "catalog", "runtime", "search", "tools", *FOUNDATION},
    # Calls that outlive their request: run through the serving core's pipelines, kept in the state store.
    "tasks": {"serving", "calls", "state", "observe", "runtime", "tools", *FOUNDATION},
    # Identity; its authorization server keeps records in the state store, fetches client metadata
    # documents by the callback rules, and logs on the library's logger.
    "identity": {"runtime", "tools", "state", "calls.outbound", "observe.logs", *FOUNDATION},
    # The call services (approvals, limits, slots, streaming, input rounds, where outbound requests may go).
    "calls": {"state", "observe", "runtime", "schema", "tools", *FOUNDATION},
    # The state store's interface and the records kept in it (once, single use, rendezvous, changes).
    "state": {"observe.logs", *FOUNDATION},
    # Logs, metrics, tracing: told of calls, never calling into the services.
    "observe": {"runtime", "tools", *FOUNDATION},
    # The tool-quality rules of flask tools check: targets and each protocol's rules, on the tool model.
    "lint": {"schema", "tools", *FOUNDATION},
    # What else can be registered, views as tools, and the call runtime: above the tool model.
    "catalog": {"runtime", "schema", "tools", *FOUNDATION},
    "views": {"schema", "tools", *FOUNDATION},
    # The tool-search index: over the tool model only (the serving core asks it, per visible set).
    "search": {"tools", *FOUNDATION},
    "runtime": {"schema", "tools", *FOUNDATION},
    # The tool model is made of schemas; the schema engine knows no tool.
    "tools": {"schema", *FOUNDATION},
    "schema": {*FOUNDATION},
    # The foundation.
    "settings": {"errors", "settings_parsers"},
    "settings_parsers": {"errors"},
    "errors": set(),
    "signals": set(),
}

#: Imports today's code makes that the edges above forbid: debts to pay, never to add to. Remove a
#: line when its import goes (the test below says which are gone).
KNOWN_EXCEPTIONS: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([NAME, *parts])


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> str:
    """The package ``module`` belongs to (``__init__``: the public face)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def short(module: str) -> str:
    return module.removeprefix(f"{NAME}.") if module != NAME else "__init__"


def package_of(module: str, path: Path) -> str:
    """The package a relative import in ``module`` (read from ``path``) starts from."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def source_of(node: ast.ImportFrom, package: str) -> str:
    """The absolute module ``from ... import`` ``node`` reads, in ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    return ".".join([*base[: len(base) - (node.level - 1)], *([node.module] if node.module else [])])


def imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``module`` imports, wherever the import statement stands."""
    package = package_of(module, path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(NAME))
        elif isinstance(node, ast.ImportFrom):
            source = source_of(node, package)
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


def allowed(source: str, target: str) -> bool:
    """May module ``source`` import module ``target`` by :data:`ALLOWED`?"""
    here, there = layer(source), layer(target)
    if here == there:
        return target != NAME
    name = short(target)
    return any(name == entry.removesuffix(".__init__") if entry.endswith(".__init__")
               else name == entry or name.startswith(f"{entry}.") for entry in ALLOWED.get(here, ()))


def edges() -> list[str]:
    """Every import between two packages, as ``"source -> target"``."""
    return sorted(f"{short(a)} -> {short(b)}" for a, targets in graph().items() for b in targets
                  if layer(a) != layer(b) or b == NAME)


def test_every_package_has_a_row() -> None:
    missing = sorted({layer(m) for m in modules()} - set(ALLOWED))
    assert missing == [], f"packages with no row in ALLOWED (say what they may import): {missing}"


def test_imports_follow_the_allowed_edges() -> None:
    against = [e for a, targets in graph().items() for b in targets
               if not allowed(a, b) and (e := f"{short(a)} -> {short(b)}") not in KNOWN_EXCEPTIONS]
    rows = sorted({layer(f"{NAME}.{e.split(' -> ')[0]}") for e in against})
    assert against == [], ("imports no edge allows (ALLOWED in tests/test_layers.py):\n" + "\n".join(sorted(against))
                           + "".join(f"\n{p} may import: {', '.join(sorted(ALLOWED.get(p, ())))}" for p in rows))


def test_known_exceptions_only_shrink() -> None:
    """A listed exception that the code no longer has is taken off the list; none is allowed anyway."""
    present = set(edges())
    gone = sorted(KNOWN_EXCEPTIONS - present)
    assert gone == [], "no longer imported, remove from KNOWN_EXCEPTIONS:\n" + "\n".join(gone)
    needless = sorted(e for e in KNOWN_EXCEPTIONS
                      if allowed(*(f"{NAME}.{m}" for m in e.split(" -> "))))
    assert needless == [], "allowed by ALLOWED anyway, remove from KNOWN_EXCEPTIONS:\n" + "\n".join(needless)


def test_the_allowed_edges_run_one_way() -> None:
    """ALLOWED orders the packages: no package may reach itself through the edges it lists."""
    reach = {p: {e.split(".")[0] for e in entries} - {p} for p, entries in ALLOWED.items()}
    circles = []
    for start in reach:
        seen, todo = set(), list(reach[start])
        while todo:
            nxt = todo.pop()
            if nxt == start:
                circles.append(start)
                break
            if nxt not in seen:
                seen.add(nxt)
                todo.extend(reach.get(nxt, ()))
    assert circles == [], f"packages that may import themselves through others: {sorted(circles)}"


#: What the dialects share: the Dialect contract (``dialects`` itself), the content blocks and the
#: call drivers. Every other module of ``dialects/`` belongs to one dialect.
DIALECTS_SHARED = {"content_blocks", "driver"}


def dialect_of(module: str) -> str | None:
    """The dialect ``module`` belongs to (``None``: not a dialect's, or shared by all of them)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "dialects" or parts[2] in DIALECTS_SHARED:
        return None
    return parts[2]


def test_no_dialect_knows_another() -> None:
    """A dialect imports the contract and what the dialects share, never another dialect."""
    against = sorted(f"{short(a)} -> {short(b)}" for a, targets in graph().items() for b in targets
                     if dialect_of(a) and dialect_of(b) and dialect_of(a) != dialect_of(b))
    assert against == [], "a dialect importing another:\n" + "\n".join(against)
    assert {dialect_of(m) for m in modules()} >= {"mcp", "opal", "explorer", "tdp", "oxp", "utcp", None}


def test_no_import_circle() -> None:
    found = graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(found[node]):
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(found):
        if node not in state:
            visit(node)
    assert circles == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_checker_sees_what_it_must(tmp_path: Path) -> None:
    """The walk reads TYPE_CHECKING blocks, imports inside functions, relative imports and the public
    face (so the tests above can fail), and the edge check refuses an edge no row lists."""
    known = set(modules())
    assert f"{NAME}.errors" in imports(f"{NAME}.tools.model", PACKAGE / "tools" / "model.py", known)
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..serving.pipeline import Pipeline\n"
              "def f():\n    from .. import __version__\n")
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    found = imports(f"{NAME}.tools.probe", probe, known)
    assert found == {f"{NAME}.serving.pipeline", NAME}
    assert not allowed(f"{NAME}.tools.probe", f"{NAME}.serving.pipeline")
    assert not allowed(f"{NAME}.tools.probe", NAME)
    assert not allowed(f"{NAME}.dialects.oxp", f"{NAME}.tasks.records")
    assert allowed(f"{NAME}.dialects.oxp", f"{NAME}.serving.pipeline")
    assert allowed(f"{NAME}.dialects.oxp", f"{NAME}.observe.logs")
    assert not allowed(f"{NAME}.dialects.oxp", f"{NAME}.observe.metrics")
    assert allowed(f"{NAME}.dialects.oxp", f"{NAME}.catalog")  # a face alone, not what is behind it
    assert not allowed(f"{NAME}.dialects.oxp", f"{NAME}.catalog.prompts")
    assert imports(NAME, PACKAGE / "__init__.py", known) >= {f"{NAME}.extension", f"{NAME}.tools.model"}


#: The modules that may import redis-py: the state store in Redis (and the client it makes), and the
#: settings' check that the extra is installed. Every other record (tasks included) is written
#: through the state store's interface, the same in process memory and in Redis.
REDIS_MODULES = {"state.redis_store", "state.store", "settings_parsers"}


def test_only_the_state_store_knows_redis() -> None:
    found = set()
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n == "redis" or n.startswith("redis.") for n in names):
                found.add(short(module))
    assert found <= REDIS_MODULES, f"modules that import redis outside the state store: {sorted(found - REDIS_MODULES)}"
    assert "state.store" in found  # the checker sees an import inside a function


def test_every_package_says_what_it_holds() -> None:
    """Each package's ``__init__`` has a docstring: a sentence or two on what the folder holds."""
    silent = sorted(short(module_name(p)) for p in PACKAGE.rglob("__init__.py")
                    if not (ast.get_docstring(ast.parse(p.read_text())) or "").strip())
    assert silent == [], f"packages whose __init__ has no docstring: {silent}"


@pytest.mark.parametrize("cap", [500])
def test_no_module_is_over_the_line_cap(cap: int) -> None:
    long = {short(module_name(p)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > cap}
    assert long == {}


def test_the_architecture_page_names_what_exists() -> None:
    """Every module (and name in it) docs/architecture.rst names, as ``serving.pipeline`` or
    ``dialects.opal.async_mode.deliver_result``, is in the package: the page follows the moves."""
    page = (PACKAGE.parent / "docs" / "architecture.rst").read_text()
    packages = {layer(m) for m in modules()} - {"__init__"}
    pattern = r"``((?:" + "|".join(sorted(packages)) + r")(?:\.\w+)+)``"
    named = set(re.findall(pattern, page))
    assert len(named) > 20
    missing = []
    for name in sorted(named):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join([NAME, *parts[:cut]]))
            except ModuleNotFoundError:
                continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            if found is None:
                missing.append(name)
            break
        else:
            missing.append(name)
    assert missing == [], f"docs/architecture.rst names what the package does not have: {missing}"

