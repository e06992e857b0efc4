"""The official Opal tools SDK (PyPI ``optimizely-opal.opal-tools-sdk``) served beside our dialect,
so tests can compare the two on the same tools: its FastAPI app, driven through httpx (Starlette's
``TestClient``), and helpers to compare documents and answers."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

sdk = pytest.importorskip("opal_tools_sdk")

from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from opal_tools_sdk import _registry  # noqa: E402


@contextlib.contextmanager
def sdk_app(define: Callable[[], None], **service: Any) -> Iterator[TestClient]:
    """A fresh SDK service (``service``: ``ToolsService``'s keywords, ``config``, ``instructions``)
    whose tools ``define()`` registers with the SDK's decorators; yields an httpx client of it.
    The SDK registers every decorated tool on every live service (a module-level list), so the list
    holds this one alone while it is defined and is emptied after."""
    _registry.services.clear()
    app = FastAPI()
    sdk.ToolsService(app, **service)
    try:
        define()
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client
    finally:
        _registry.services.clear()


def shape(value: Any) -> Any:
    """The JSON types of ``value``, recursively (a dict's keys kept): what two documents share
    when their texts differ."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}
