"""The dialect table: each wire protocol is one module with ``make_blueprint(ext)``.

A new dialect is one module and one line in :data:`DIALECTS` (or :func:`register_dialect` for a
dialect that lives outside this package).

Besides ``make_blueprint(ext)``, a dialect module may define, and the core then uses:

- ``export_document(ext)``: its discovery document (``flask tools export <dialect>``);
- ``security_warning(config, ext)``: why it would run tools for anyone, or ``None`` (logged by
  ``init_app`` outside debug and testing);
- ``lint_tool(tool)``: problems this protocol's clients would have with a tool (``flask tools check``);
- ``openapi_paths(ext, prefix)``: OpenAPI path items of its execution endpoints
  (``flask tools export openapi``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import Blueprint

if TYPE_CHECKING:  # pragma: no cover
    from ..extension import ToolDiscovery

BlueprintFactory = Callable[["ToolDiscovery"], Blueprint]


@dataclass(frozen=True)
class Dialect:
    """A wire protocol: its name, how to build its blueprint, and where it mounts by default."""

    name: str
    #: ``"package.module"`` (whose ``make_blueprint`` is used) or the factory itself.
    factory: str | BlueprintFactory
    #: Used when the config has no ``TOOLDISCOVERY_<NAME>_URL_PREFIX`` (the built-in
    #: dialects' prefixes are defaulted in :mod:`flask_tooldiscovery.config`).
    default_prefix: str = ""

    @property
    def module(self) -> Any:
        """The dialect's module (``None`` for a dialect given as a bare factory)."""
        return importlib.import_module(self.factory) if isinstance(self.factory, str) else None

    def make_blueprint(self, ext: ToolDiscovery) -> Blueprint:
        """A new blueprint of this dialect for ``ext`` (one per app)."""
        module = self.module
        factory = module.make_blueprint if module is not None else self.factory
        return factory(ext)  # type: ignore[operator]

    def hook(self, name: str) -> Callable[..., Any] | None:
        """An optional module-level function of the dialect (``export_document``,
        ``security_warning``), or ``None``."""
        module = self.module
        return getattr(module, name, None) if module is not None else None


DIALECTS: dict[str, Dialect] = {
    "explorer": Dialect("explorer", "flask_tooldiscovery.dialects.explorer"),
    "opal": Dialect("opal", "flask_tooldiscovery.dialects.opal"),
    "oxp": Dialect("oxp", "flask_tooldiscovery.dialects.oxp"),
    "tdp": Dialect("tdp", "flask_tooldiscovery.dialects.tdp"),
    "mcp": Dialect("mcp", "flask_tooldiscovery.dialects.mcp"),
}


def register_dialect(name: str, factory: str | BlueprintFactory, default_prefix: str = "") -> Dialect:
    """Add a dialect to the table so ``TOOLDISCOVERY_DIALECTS`` can name it."""
    if not name.isidentifier():
        raise ValueError(f"dialect name {name!r} must be an identifier")
    dialect = Dialect(name, factory, default_prefix)
    DIALECTS[name] = dialect
    return dialect
