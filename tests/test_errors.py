"""One base exception: every exception class the package defines derives from ToolDiscoveryError,
and keeps the built-in base its callers catch it by."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from flask import Flask

import flask_tooldiscovery
from flask_tooldiscovery import (
    AuthError,
    CoreError,
    RegistrationError,
    SettingsError,
    SignatureError,
    ToolDiscovery,
    ToolDiscoveryError,
    ToolError,
)


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the package, by its qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(flask_tooldiscovery.__path__, "flask_tooldiscovery."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_exception_of_the_package_derives_from_the_one_base() -> None:
    found = package_exceptions()
    # The walk reaches every layer (a walk that found nothing would pass the check below).
    for name in ("flask_tooldiscovery.errors.CoreError", "flask_tooldiscovery.errors.SettingsError",
                 "flask_tooldiscovery.errors.ToolError", "flask_tooldiscovery.errors.ProviderError",
                 "flask_tooldiscovery.errors.ApprovalRequired",
                 "flask_tooldiscovery.dialects.mcp.jsonrpc.RpcError"):
        assert name in found, name
    strays = sorted(name for name, cls in found.items() if issubclass(cls, Exception)
                    and cls is not ToolDiscoveryError and not issubclass(cls, ToolDiscoveryError))
    assert strays == [], f"derive these from flask_tooldiscovery.ToolDiscoveryError: {strays}"
    # Control flow, not errors (as asyncio.CancelledError): what a tool's ``except Exception`` must not catch.
    assert sorted(name for name, cls in found.items() if not issubclass(cls, Exception)) == [
        "flask_tooldiscovery.tools.questions.InputRequired"]


@pytest.mark.parametrize("cls, builtin", [
    ("errors.SettingsError", ValueError), ("errors.RegistrationError", ValueError),
    ("errors.InvalidSchemaError", ValueError), ("errors.SignatureError", TypeError),
    ("errors.SchemaSourceError", TypeError), ("errors.NoSuchResource", LookupError),
    ("errors.ProviderError", RuntimeError), ("errors.ViewFailed", RuntimeError),
    ("errors.RendezvousError", RuntimeError), ("errors.StorageError", RuntimeError),
])
def test_each_keeps_its_built_in_base(cls: str, builtin: type[Exception]) -> None:
    assert issubclass(package_exceptions()[f"flask_tooldiscovery.{cls}"], builtin)


def test_the_exceptions_the_package_face_exports_live_in_errors() -> None:
    """One module holds what a user may catch; the old import paths still work (the same class)."""
    import flask_tooldiscovery
    from flask_tooldiscovery.catalog.prompts import NoSuchPrompt
    from flask_tooldiscovery.errors import NoSuchPrompt as InErrors
    from flask_tooldiscovery.tools.model import ToolError

    exported = {name: getattr(flask_tooldiscovery, name) for name in flask_tooldiscovery.__all__}
    elsewhere = sorted(f"{value.__module__}.{name}" for name, value in exported.items()
                       if inspect.isclass(value) and issubclass(value, BaseException)
                       and value.__module__ != "flask_tooldiscovery.errors")
    assert elsewhere == []
    assert ToolError is flask_tooldiscovery.ToolError and NoSuchPrompt is InErrors
    # What an identity hook or verifier raises (a user's code raises and catches these too).
    from flask_tooldiscovery import errors
    from flask_tooldiscovery.identity import sources
    assert sources.AuthError is errors.AuthError is flask_tooldiscovery.AuthError
    assert sources.ScopeError is errors.ScopeError and issubclass(errors.ScopeError, errors.AuthError)
    # What a tool that asks its caller may catch, beside CannotAsk.
    from flask_tooldiscovery.calls import input_rounds
    from flask_tooldiscovery.tools import questions
    assert questions.CannotAnswer is errors.CannotAnswer and input_rounds.InvalidAnswer is errors.InvalidAnswer
    assert errors.CannotAnswer.__module__ == errors.InvalidAnswer.__module__ == "flask_tooldiscovery.errors"


def test_one_except_clause_catches_what_the_package_raises() -> None:
    """A wrong setting, a bad registration and a function that cannot be described are each caught
    by ``except ToolDiscoveryError`` and still by the built-in they always were."""
    app = Flask("errors")
    app.config["TOOLDISCOVERY_MAX_CONCURRENT_CALLS"] = "many"
    with pytest.raises(ToolDiscoveryError) as wrong_setting:
        ToolDiscovery().init_app(app)
    assert isinstance(wrong_setting.value, SettingsError) and isinstance(wrong_setting.value, ValueError)

    discovery = ToolDiscovery()
    with pytest.raises(ToolDiscoveryError) as bad_option:
        discovery.add_tool(lambda: None, name="no good", nonsense=1)
    assert isinstance(bad_option.value, RegistrationError) and isinstance(bad_option.value, ValueError)

    def takes_a_lock(lock: object = object()) -> None:
        """A parameter no JSON Schema describes."""

    with pytest.raises(ToolDiscoveryError) as undescribable:
        discovery.add_tool(takes_a_lock)
    assert isinstance(undescribable.value, (SignatureError, RegistrationError))
    assert issubclass(CoreError, ToolDiscoveryError) and issubclass(AuthError, ToolDiscoveryError)
    assert issubclass(ToolError, ToolDiscoveryError)
