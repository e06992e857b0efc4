"""An app whose tasks run on Celery, built as Flask's docs build one ("Background Tasks with
Celery"): the Celery app made in the factory from ``app.config["CELERY"]``, its tasks run inside
the Flask app's context, kept at ``app.extensions["celery"]``. The tests start the web side in
process and Celery workers as ``celery -A tests.apps.celery_app worker``; both read the broker
and state store from ``TD_REDIS_URL`` and count side effects in ``TD_EFFECTS`` (a folder)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from celery import Celery, Task
from flask import Flask, has_request_context

from flask_tooldiscovery import ToolContext, ToolDiscovery


def celery_init_app(app: Flask) -> Celery:
    class FlaskTask(Task):  # type: ignore[misc]
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            with app.app_context():
                return self.run(*args, **kwargs)

    celery_app = Celery(app.name, task_cls=FlaskTask)
    celery_app.config_from_object(app.config["CELERY"])
    celery_app.set_default()
    app.extensions["celery"] = celery_app
    return celery_app


def effect(kind: str) -> None:
    """Record one side effect of ``kind`` (a file per effect: counted, never lost to a race)."""
    folder = Path(os.environ["TD_EFFECTS"]) / kind
    folder.mkdir(parents=True, exist_ok=True)
    (folder / uuid.uuid4().hex).touch()


def wait_for_gate(name: str) -> None:
    gate = Path(os.environ["TD_EFFECTS"]) / f"gate-{name}"
    deadline = time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def create_app() -> Flask:
    redis_url = os.environ["TD_REDIS_URL"]
    app = Flask("celery_tasks")
    app.config.from_mapping(
        TESTING=True,
        # TD_SECRET_KEY / TD_SECRET_KEY_FALLBACKS: what seals a job's request (a test rotates them)
        SECRET_KEY=os.environ.get("TD_SECRET_KEY", "celery-tests-secret-key"),
        SECRET_KEY_FALLBACKS=[k for k in os.environ.get("TD_SECRET_KEY_FALLBACKS", "").split(",") if k],
        TOOLDISCOVERY_DIALECTS=["opal"],
        TOOLDISCOVERY_TASK_ENGINE="celery",
        TOOLDISCOVERY_STATE_STORAGE_URI=redis_url,
        TOOLDISCOVERY_OPAL_CALLBACK_HOSTS=["127.0.0.1"],
        TOOLDISCOVERY_OPAL_CALLBACK_RETRIES=5,
        TOOLDISCOVERY_TASK_OUTBOX_GRACE=float(os.environ.get("TD_OUTBOX_GRACE", "30")),
        # TD_API_KEY: the identity layer's API key; TD_TASK_HEADERS: headers a task carries
        TOOLDISCOVERY_API_KEY=os.environ.get("TD_API_KEY") or None,
        TOOLDISCOVERY_TASK_HEADERS=os.environ.get("TD_TASK_HEADERS", ""),
        TOOLDISCOVERY_TASK_LEASE=float(os.environ.get("TD_TASK_LEASE", "30")),
        CELERY={
            # TD_BROKER_URL: a broker of its own (the tests point one web side at a dead one)
            "broker_url": os.environ.get("TD_BROKER_URL") or redis_url, "task_ignore_result": True,
            "task_acks_late": True,
            "task_reject_on_worker_lost": True, "worker_prefetch_multiplier": 1,
            # a task whose worker died is delivered again about 10 s later (see the Celery notes)
            "broker_transport_options": {"visibility_timeout": float(os.environ.get("TD_VISIBILITY_TIMEOUT", "10")),
                                         "unacked_restore_interval": 2,
                                         "unacked_restore_throttle": 1},
        },
    )
    celery_init_app(app)
    discovery = ToolDiscovery()

    @discovery.tool(long_running=True)
    def refund(order: str) -> dict:
        """Refund an order (not idempotent): the effect happens, then it waits for its gate."""
        effect(f"refund-{order}")
        wait_for_gate(order)
        return {"refunded": order}

    @discovery.tool(long_running=True, annotations={"idempotentHint": True})
    def recount(name: str) -> dict:
        """Recount (idempotent: running it again is harmless)."""
        effect(f"recount-{name}")
        wait_for_gate(name)
        return {"recounted": name}

    @discovery.tool(long_running=True)
    def waits(name: str, ctx: ToolContext) -> dict:
        """Wait until the call is cancelled (two minutes at most)."""
        effect(f"waits-{name}")
        deadline = time.monotonic() + 120
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.05)
        ctx.check_cancelled()
        return {"waited": name}

    @discovery.tool(long_running=True)
    def whoami(name: str, ctx: ToolContext) -> dict:
        """Say what the call's request gave the task (whether each credential is the one expected,
        never the credential itself), once its gate opens."""
        effect(f"whoami-{name}")
        wait_for_gate(name)
        tenant = ctx.request.headers.get("X-Tenant-Key") if ctx.request is not None else None
        return {"method": ctx.identity.method if ctx.identity is not None else None,
                "token": ctx.authorization.get("acme") == os.environ.get("TD_EXPECT_TOKEN"),
                "tenant": tenant is not None and tenant == os.environ.get("TD_EXPECT_TENANT"),
                "api_key_header": ctx.request is not None and "X-API-Key" in ctx.request.headers}

    @discovery.tool(long_running=True)
    def where(name: str, ctx: ToolContext) -> dict:
        """Say whether the task runs inside a request context (it does not) and what it knows of
        its caller: its identity's method, the header it carries, the address it came from."""
        tenant = ctx.request.headers.get("X-Tenant-Key") if ctx.request is not None else None
        return {"in_request": has_request_context(), "method": ctx.identity.method if ctx.identity else None,
                "tenant": tenant is not None and tenant == os.environ.get("TD_EXPECT_TENANT"),
                "remote_addr": ctx.request.remote_addr if ctx.request is not None else None,
                "api_key_header": ctx.request is not None and "X-API-Key" in ctx.request.headers}

    @discovery.tool(long_running=True)
    def quick(n: int) -> dict:
        """Answer at once."""
        return {"n": n}

    discovery.init_app(app)
    return app


def __getattr__(name: str) -> Any:
    """``app`` and ``celery``, made on first use (a Celery worker's ``-A tests.apps.celery_app:celery``),
    never at import: a test's web side is made by the test, and stopped by it."""
    if name not in ("app", "celery"):
        raise AttributeError(name)
    made = create_app()
    globals().update(app=made, celery=made.extensions["celery"])
    return globals()[name]
