"""Once means once on every worker: with several worker processes (as gunicorn's hook or
``TOOLDISCOVERY_SERVER_WORKERS`` says) and no shared state store, an app that must do something
once (take an epi-hmac nonce, spend a sealed approval, run a rollback, use an OAuth code) is
refused at start, naming ``TOOLDISCOVERY_STATE_STORAGE_URI``, unless
``TOOLDISCOVERY_STATE_PER_PROCESS`` accepts once per process. Under real gunicorn with two workers:
refused without a store (with and without ``--preload``); with a real Redis, 30 replayed signed
requests, each on a connection of its own, none accepted."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import uuid
from typing import Any

import pytest
import requests
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.serving.epi_hmac import sign
from flask_tooldiscovery.settings import SettingsError

from .apps.hmac_app import APP_KEY, SECRET
from .conftest import free_port
from .test_deploy import ROOT, stop
from .test_operating_server import GUNICORN_CONF, redis_url, start  # noqa: F401 - the fixture

HMAC = {"TOOLDISCOVERY_OPAL_HMAC_APP_KEY": APP_KEY, "TOOLDISCOVERY_OPAL_HMAC_SECRET": SECRET}
APP = "tests.apps.hmac_app:create_app"


def restore_order(order_id: str) -> str:
    """Undo a cancellation.

    Args:
        order_id: Which order.
    """
    return order_id


def build(config: dict[str, Any], *, approval: bool = False, rollback: bool = False) -> Flask:
    discovery = ToolDiscovery()

    @discovery.tool(requires_approval=approval, **({"rollback": restore_order} if rollback else {}))
    def cancel_order(order_id: str) -> str:
        """Cancel an order.

        Args:
            order_id: Which order.
        """
        return order_id

    app = Flask("once")
    app.config.update(TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, **config)
    discovery.init_app(app)
    return app


@pytest.mark.parametrize(("config", "options", "named"), [
    (HMAC, {}, "epi-hmac nonces"),
    ({}, {"approval": True}, "sealed approvals (cancel_order)"),
    ({}, {"rollback": True}, "rollbacks (cancel_order)"),
])
def test_several_workers_without_a_store_are_refused_at_init_app(config, options, named) -> None:
    workers = {"TOOLDISCOVERY_SERVER_WORKERS": 2}
    with pytest.raises(SettingsError) as refused:
        build({**workers, **config}, **options)
    message = str(refused.value)
    assert "the server runs 2 worker processes and TOOLDISCOVERY_STATE_STORAGE_URI is unset" in message
    assert named in message and "TOOLDISCOVERY_STATE_PER_PROCESS=true" in message
    # one worker, a shared store, or per-process memory accepted: started
    build({"TOOLDISCOVERY_SERVER_WORKERS": 1, **config}, **options)
    build({**workers, "TOOLDISCOVERY_STATE_STORAGE_URI": "redis://127.0.0.1:1/0", **config}, **options)
    build({**workers, "TOOLDISCOVERY_STATE_PER_PROCESS": True, **config}, **options)
    build({**workers, "TOOLDISCOVERY_APPROVE_DESTRUCTIVE": True})  # nothing once-only (no destructive tool)


def test_accepted_per_process_memory_is_warned_of_naming_nonces(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        build({"TOOLDISCOVERY_SERVER_WORKERS": 2, "TOOLDISCOVERY_STATE_PER_PROCESS": True, **HMAC})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("an epi-hmac nonce, a sealed approval or a rollback can be taken once in each of them" in w
               for w in warnings), warnings
    assert any("remembered in this process only" in w for w in warnings), warnings  # at WARNING, not INFO


def signed(path: str, body: bytes) -> dict[str, str]:
    return {"Authorization": sign(base64.b64decode(SECRET), APP_KEY, "POST", path, body, nonce=str(uuid.uuid4())),
            "Content-Type": "application/json"}


def gunicorn_refuses(preload: bool) -> str:
    """Start the app under gunicorn, two workers, no store; gunicorn's output once it stopped."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "--workers", "2", "--threads", "2",
         *(["--preload"] if preload else []), "--bind", f"127.0.0.1:{port}", f"{APP}()"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        output, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail("gunicorn started two workers that remember nonces each in its own memory")
    assert proc.returncode != 0, output
    assert "TOOLDISCOVERY_STATE_STORAGE_URI is unset: epi-hmac nonces would be remembered" in output, output
    return output


@pytest.mark.slow
def test_two_gunicorn_workers_refuse_without_a_store_and_take_each_nonce_once_with_redis(redis_url) -> None:  # noqa: F811
    gunicorn_refuses(preload=False)
    base, proc = start(f"{APP}(storage={redis_url + '/6'!r})", workers=2, threads=2, ready="/opal/discovery")
    try:
        body = json.dumps({"parameters": {"text": "hi"}}).encode()
        accepted = replayed = 0
        for _ in range(30):
            headers = {**signed("/opal/tools/echo", body), "Connection": "close"}  # either worker may take each
            accepted += requests.post(base + "/opal/tools/echo", data=body, headers=headers, timeout=10).ok
            replayed += requests.post(base + "/opal/tools/echo", data=body, headers=headers, timeout=10).ok
        assert (accepted, replayed) == (30, 0)
    finally:
        stop(proc)


@pytest.mark.slow
def test_with_preload_each_worker_refuses_once_told() -> None:
    """The app was built in the master before gunicorn's hook said how many workers there are:
    each worker refuses when told, so none boots and gunicorn stops, saying why."""
    gunicorn_refuses(preload=True)


def test_tools_registered_after_the_start_are_checked_too() -> None:
    """The start check applies to a view ``add_view`` offers (resolved by ``init_app``) and to a
    tool added after ``init_app``: with two workers and no store, one needing approval is refused
    at its registration; with a store it is registered."""
    from flask import Blueprint

    workers = {"TOOLDISCOVERY_SERVER_WORKERS": 2, "TOOLDISCOVERY_WARN_UNAUTHENTICATED": False}

    def with_view(config: dict[str, Any]) -> None:
        discovery, app, pages = ToolDiscovery(), Flask("views"), Blueprint("pages", __name__)

        @pages.post("/orders/<order_id>/cancel")
        def cancel(order_id: str) -> str:
            """Cancel an order."""
            return order_id

        app.register_blueprint(pages)
        app.config.update(**config)
        discovery.add_view("pages.cancel", name="cancel_order", requires_approval=True)
        discovery.init_app(app)

    with pytest.raises(SettingsError) as refused:
        with_view(workers)
    assert "sealed approvals (cancel_order)" in str(refused.value)
    with_view({**workers, "TOOLDISCOVERY_STATE_STORAGE_URI": "redis://127.0.0.1:1/0"})

    app = build({"TOOLDISCOVERY_SERVER_WORKERS": 2})  # nothing once-only at the start: started
    discovery = app.extensions["tooldiscovery"]
    with pytest.raises(SettingsError) as refused:
        discovery.add_tool(restore_order, name="undo_later", requires_approval=True)
    assert "sealed approvals (undo_later)" in str(refused.value)
    assert "TOOLDISCOVERY_STATE_STORAGE_URI" in str(refused.value)
    with pytest.raises(SettingsError, match=r"rollbacks \(rolled_later\)"):
        discovery.add_tool(restore_order, name="rolled_later", rollback=restore_order)
    discovery.add_tool(restore_order, name="plain_later")  # needs nothing once: registered
    client = app.test_client()
    listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"MCP-Protocol-Version": "2025-11-25"}).get_json()
    assert sorted(t["name"] for t in listed["result"]["tools"]) == ["cancel_order", "plain_later"]


def test_a_providers_tools_are_checked_at_their_first_use(caplog) -> None:
    """A provider's tool needing approval, with two workers and no store: not served (a JSON 503
    in each dialect's shape, the reason logged naming the setting), never run; with a store, served."""
    from flask_tooldiscovery import Tool

    def provided(config: dict[str, Any]) -> Flask:
        discovery = ToolDiscovery()
        discovery.add_provider(lambda: [Tool(name="wipe", description="Wipe it.", func=lambda: "wiped",
                                                   input_schema={"type": "object"},
                                                   metadata={"requires_approval": True})])
        app = Flask("provided")
        app.config.update(TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, TOOLDISCOVERY_ALLOW_EXECUTE=True,
                          TOOLDISCOVERY_DIALECTS=["mcp", "opal"], TOOLDISCOVERY_SERVER_WORKERS=2, **config)
        discovery.init_app(app)  # nothing registered needs anything once: started
        return app

    client = provided({}).test_client()
    with caplog.at_level(logging.ERROR, logger="flask_tooldiscovery"):
        called = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                           "params": {"name": "wipe", "arguments": {}}},
                             headers={"MCP-Protocol-Version": "2025-11-25"})
        opal = client.post("/opal/tools/wipe", json={"parameters": {}})
    assert called.get_json()["error"]["code"] == -32603, called.get_json()
    assert "Traceback" not in called.text and "wiped" not in called.text
    assert opal.status_code == 503 and opal.is_json, opal.text
    assert any("sealed approvals (wipe)" in r.getMessage() and "TOOLDISCOVERY_STATE_STORAGE_URI" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    ok = provided({"TOOLDISCOVERY_STATE_PER_PROCESS": True}).test_client()
    listed = ok.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                     headers={"MCP-Protocol-Version": "2025-11-25"}).get_json()
    assert [t["name"] for t in listed["result"]["tools"]] == ["wipe"]
