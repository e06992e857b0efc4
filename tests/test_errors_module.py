"""The exceptions a user's code may catch live in one module, ``flask_tooldiscovery.errors``; every
other exception class of the package is private to where it is raised (a leading underscore, not
in ``__all__``, imported by no module outside its own package), but for the few listed in
:data:`ELSEWHERE`, each with the reason it lives where it does.

The package's source is read (its AST), so that a class defined anywhere (a module, a function)
is seen; whether a base is an exception is found by importing what it names."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

from flask_tooldiscovery import errors

from .test_layers import NAME, PACKAGE, module_name, package_of, source_of

#: Public exception classes defined outside errors.py, and why.
ELSEWHERE = {
    # A BaseException, not an error (as asyncio.CancelledError): the signal that ends a round of
    # input requests, defined with the requests it carries; a tool lets it pass, never catches it.
    "tools.questions.InputRequired": "a control-flow signal, not an error",
    # MCP's JSON-RPC error object (code, message, data): raised by the MCP dialect's modules and
    # answered by its dispatcher (jsonrpc.dispatch); it never leaves the dialect.
    "dialects.mcp.jsonrpc.RpcError": "the MCP dialect's own wire error",
    # Authlib's OAuth2Error: Authlib answers it as RFC 8707's invalid_target, where the grants live.
    "identity.authorization_server.grants.InvalidTargetError": "an Authlib error, answered by Authlib",
}


def short(module: str) -> str:
    return module.removeprefix(f"{NAME}.")


def _is_exception(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _names_of(tree: ast.Module, module: str, path: Path) -> dict[str, str]:
    """What each name imported at the top of a module refers to: ``{"OAuth2Error": "authlib...OAuth2Error"}``."""
    package = package_of(module, path)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = source_of(node, package)
            for alias in node.names:
                names[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
    return names


def _resolve(dotted: str) -> object:
    """The object ``a.b.C`` names (a module's attribute, or a module), ``None`` when not found."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute, None)
        return found
    return None


def exception_classes(path: Path, module: str | None = None) -> list[tuple[str, ast.ClassDef]]:
    """``(qualified name, class)`` of every exception class the source at ``path`` defines: a class
    whose base is a built-in exception, an imported exception, or an exception class defined above it."""
    module = module or module_name(path)
    tree = ast.parse(path.read_text())
    imported = _names_of(tree, module, path)
    local: set[str] = set()
    found: list[tuple[str, ast.ClassDef]] = []
    classes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)), key=lambda n: n.lineno)
    for cls in classes:
        for base in cls.bases:
            text = ast.unparse(base)
            head, _, rest = text.partition(".")
            if text in local:
                is_exc = True
            elif head in imported:
                is_exc = _is_exception(_resolve(imported[head] + (f".{rest}" if rest else "")))
            else:
                is_exc = _is_exception(getattr(builtins, text, None))
            if is_exc:
                local.add(cls.name)
                found.append((f"{module}.{cls.name}", cls))
                break
    return found


def _all_of(path: Path) -> set[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def strays(path: Path, module: str | None = None) -> list[str]:
    """The public exception classes ``path`` defines that belong in errors.py (ELSEWHERE aside),
    and the private ones it lists in ``__all__``."""
    exported = _all_of(path)
    out = []
    for qualified, cls in exception_classes(path, module):
        if cls.name.startswith("_"):
            if cls.name in exported:
                out.append(f"{short(qualified)} (private, yet in __all__)")
        elif short(qualified) not in ELSEWHERE:
            out.append(short(qualified))
    return out


def test_every_public_exception_is_defined_in_errors() -> None:
    found = {short(q) for p in PACKAGE.rglob("*.py") for q, _ in exception_classes(p)}
    # The walk sees exceptions of every kind of base (so that the check below can fail).
    assert {"errors.ToolDiscoveryError", "errors.CoreError", "errors.ApprovalRequired", "errors.StoreFull",
            "runtime.invoke._DeadlinePassed", "tasks.sealing._Unsealable", *ELSEWHERE} <= found
    against = [s for p in sorted(PACKAGE.rglob("*.py")) if p.name != "errors.py" or p.parent != PACKAGE
               for s in strays(p)]
    assert against == [], ("exceptions a user may catch belong in flask_tooldiscovery/errors.py; the others "
                           "are private to their module (a leading underscore):\n" + "\n".join(against))
    assert set(ELSEWHERE) <= found, "ELSEWHERE lists a class the package no longer defines"


def test_errors_exports_what_it_defines() -> None:
    defined = {q.rpartition(".")[2] for q, _ in exception_classes(PACKAGE / "errors.py")}
    public = {n for n in defined if not n.startswith("_")}
    assert public <= set(errors.__all__), sorted(public - set(errors.__all__))
    assert all(getattr(errors, n).__module__ == errors.__name__ for n in public)


def test_a_private_exception_never_leaves_its_package() -> None:
    """A private exception class is imported (to be caught) only by modules of its own package."""
    private = {q: q.rsplit(".", 2)[0] for p in PACKAGE.rglob("*.py") for q, c in exception_classes(p)
               if c.name.startswith("_")}
    leaks = []
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        for name, target in _names_of(ast.parse(path.read_text()), module, path).items():
            if target in private and not module.startswith(private[target] + ".") and module != private[target]:
                leaks.append(f"{short(module)} imports {short(target)} as {name}")
    assert leaks == [], "\n".join(leaks)


def test_the_check_sees_a_stray(tmp_path: Path) -> None:
    """A public exception class defined outside errors.py, through any kind of base, is found."""
    probe = tmp_path / "probe.py"
    probe.write_text("from ..errors import CoreError\nfrom authlib.oauth2.rfc6749.errors import OAuth2Error\n"
                     "class Refused(CoreError): ...\nclass _Quiet(ValueError): ...\nclass Louder(_Quiet): ...\n"
                     "class Authlibs(OAuth2Error): ...\nclass NotAnError(dict): ...\n"
                     "def f():\n    class Inner(RuntimeError): ...\n__all__ = ['_Quiet']\n")
    found = strays(probe, f"{NAME}.tools.probe")
    assert found == ["tools.probe.Refused", "tools.probe._Quiet (private, yet in __all__)", "tools.probe.Louder",
                     "tools.probe.Authlibs", "tools.probe.Inner"]
