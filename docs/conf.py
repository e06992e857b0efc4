"""Sphinx configuration of the flask-tooldiscovery documentation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

import flask_tooldiscovery  # noqa: E402

project = "flask-tooldiscovery"
author = "flask-tooldiscovery contributors"
copyright = "the flask-tooldiscovery contributors"
release = flask_tooldiscovery.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "settings_reference",
]

html_theme = "furo"
html_title = f"flask-tooldiscovery {release}"
exclude_patterns = ["_build"]
smartquotes = False  # quotes in prose stay the ones a reader copies
templates_path: list[str] = []

# The API reference: signatures with their type hints, members in source order.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options: dict[str, Any] = {}
autodoc_type_aliases: dict[str, str] = {}

# Every cross-reference must resolve (sphinx-build -n -W). Names of other projects (Python's own,
# Flask, werkzeug...) have no inventory offline, so those, and only those, are not checked.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(builtins\.)?(str|int|float|bool|bytes|dict|list|tuple|set|frozenset|object|type|"
               r"None|Exception|BaseException|ValueError|TypeError|RuntimeError|LookupError|KeyError)"),
    (r"py:.*", r"(typing|collections|collections\.abc|types|dataclasses|datetime|logging|concurrent|asyncio|"
               r"threading|pathlib|enum|re|contextvars|inspect|functools)(\..*)?"),
    (r"py:.*", r"(flask|werkzeug|marshmallow|jsonschema|limits|redis|celery|jwt|pydantic)(\..*)?"),
    # The package's own plumbing named in signatures, not part of what a user programs against: a
    # decorator's type variable, what report_progress returns (None, awaitable), a ToolContext's
    # listener and asker fields, a Dialect's task finisher.
    (r"py:class", r"(flask_tooldiscovery\.extension\.[FS]|flask_tooldiscovery\.tools\.model\._Done|ToolEvent|Asker|"
                  r"Finisher)"),
    (r"py:.*", r"(Any|Callable|Iterable|Iterator|Mapping|Sequence|Awaitable|Coroutine|Literal|Self|TypeVar|"
               r"Flask|Blueprint|Response|Request|Schema|Path|Enum|Logger)"),
]


def public_bases(app: object, name: str, obj: object, options: object, bases: list[type]) -> None:
    """Show a class's bases as the names a user imports: an internal base (a private helper
    class) is replaced by its own bases."""
    public = set(flask_tooldiscovery.__all__)

    def shown(base: type) -> list[type]:
        if base is object:
            return []
        if base.__module__ == "builtins" or base.__name__ in public:
            return [base]
        return [b for parent in base.__bases__ if parent is not object for b in shown(parent)]

    bases[:] = list(dict.fromkeys(b for base in list(bases) for b in shown(base)))


def documented_name(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a Python reference written with the defining module's path or a bare class name
    (``flask_tooldiscovery.errors.CoreError``, ``Pipeline`` in a type hint) to the one object this
    documentation describes under that name; anything else stays unresolved (and fails -n)."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    last = node["reftarget"].rsplit(".", 1)[-1]
    matches = [name for name in domain.objects if name.rsplit(".", 1)[-1] == last]
    if len(matches) != 1:
        return None
    node["reftarget"] = matches[0]
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], matches[0], node, contnode)


def setup(app: Any) -> None:
    app.connect("autodoc-process-bases", public_bases)
    app.connect("missing-reference", documented_name)
