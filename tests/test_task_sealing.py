"""No secret leaves the request in clear: with the Celery engine, what a job holds of its request
(the caller's identity and credentials, the headers it carries) is sealed with a key derived from
``SECRET_KEY``. Real Celery workers and a real redis-server: every key of the broker's Redis and
of the state store (the same server here) is read during and after calls made with an API key, a
custom header and an Opal access token, and none of them is found in any form, while the tool
still gets its caller's identity and the credential it may use. ``SECRET_KEY_FALLBACKS`` lets a
worker whose key was rotated open what the old key sealed."""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path

import pytest
from flask import Flask

from flask_tooldiscovery import SettingsError, ToolDiscovery
from flask_tooldiscovery.tasks.jobs import CallJob, job_from_wire
from flask_tooldiscovery.tasks.runner import UNSEALED, tasks_of
from flask_tooldiscovery.tasks.sealing import Sealer, _Unsealable

from .celery_side import CelerySide, celery_side, wait_for  # noqa: F401  (celery_side: a fixture)
from .test_opal_async import Receiver
from .test_operating_server import redis_url  # noqa: F401  (a fixture: a redis-server of our own)
from .test_tasks import receiver  # noqa: F401  (receiver: a fixture)

SECRET = os.urandom(6).hex()
API_KEY = f"ak-{SECRET}-apikey-0451"
TENANT = f"hdr-{SECRET}-tenant-0452"
TOKEN = f"tok-{SECRET}-opal-0453"
SECRETS = (API_KEY, TENANT, TOKEN)


def forms(secret: str) -> list[bytes]:
    """The secret as it may sit in Redis: itself, and base64 (standard and URL-safe) at each of the
    three alignments it may have inside a longer encoded text (the part that does not depend on
    its neighbours)."""
    raw = secret.encode()
    found = [raw]
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw)
            found.append(encoded[math.ceil(shift * 4 / 3) + 1:len(encoded) - 4])
    return found


def decoded(value: bytes) -> list[bytes]:
    """``value`` and what its base64 strings decode to (a Celery message's body is base64 JSON)."""
    out = [value]
    try:
        data = json.loads(value)
    except ValueError:
        return out
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and len(item) >= 16:
            try:
                inner = base64.b64decode(item, validate=True)
            except ValueError:
                continue
            out.extend(decoded(inner))
    return out


def everything(url: str) -> dict[str, list[bytes]]:
    """Every key of the Redis at ``url`` with what it holds (SCAN, then per type, and DUMP)."""
    import redis

    client = redis.Redis.from_url(url)
    held: dict[str, list[bytes]] = {}
    for name in client.scan_iter(count=1000):
        kind = client.type(name).decode()
        values: list[bytes] = [client.dump(name) or b""]
        if kind == "string":
            values.append(client.get(name) or b"")
        elif kind == "hash":
            values += [x for pair in client.hgetall(name).items() for x in pair]
        elif kind == "list":
            values += client.lrange(name, 0, -1)
        elif kind == "set":
            values += list(client.smembers(name))
        elif kind == "zset":
            values += client.zrange(name, 0, -1)
        held[name.decode()] = [x for v in values for x in decoded(v)]
    return held


def leaks(url: str) -> list[tuple[str, str]]:
    """(key, which secret) for every secret found in any form under any key."""
    found = []
    for name, values in everything(url).items():
        for secret in SECRETS:
            if any(form in value for value in values for form in forms(secret)):
                found.append((name, secret))
    return found


def call_whoami(app: Flask, name: str, url: str) -> str:
    answer = app.test_client().post("/opal/tools/whoami", headers={"X-API-Key": API_KEY, "X-Tenant-Key": TENANT},
                                    json={"parameters": {"name": name}, "async_callback": {"url": url},
                                          "auth": {"provider": "acme", "credentials": {"access_token": TOKEN}}})
    assert answer.status_code == 202, answer.data
    task_id: str = answer.get_json()["task_id"]
    return task_id


#: What ``tests/apps/celery_app.py`` is told of the credentials (``CelerySide.configure``): the API
#: key it takes, the header a task carries, and what its ``whoami`` tool expects to be given.
CREDENTIALS = {"TD_API_KEY": API_KEY, "TD_TASK_HEADERS": "X-Tenant-Key", "TD_EXPECT_TOKEN": TOKEN,
               "TD_EXPECT_TENANT": TENANT}


EXPECTED = {"content": {"method": "api_key", "token": True, "tenant": True, "api_key_header": False},
            "content_type": "application/json"}


@pytest.mark.slow
def test_no_credential_of_a_call_is_in_the_broker_or_the_store(celery_side: CelerySide, redis_url: str,  # noqa: F811
                                                              receiver: Receiver) -> None:  # noqa: F811
    celery_side.configure(**CREDENTIALS)
    app, folder = celery_side.web(), celery_side.folder
    worker = celery_side.worker()
    urls = [receiver.url() for _ in range(2)]
    task_ids = [call_whoami(app, f"w{i}", url) for i, url in enumerate(urls)]
    wait_for(lambda: (folder / "whoami-w0").exists())  # the first one runs: the second waits in the broker
    assert leaks(redis_url) == []  # during: the jobs in the broker, one running, the records
    for i in range(2):
        (folder / f"gate-w{i}").touch()
    for url in urls:
        [(_, body)] = receiver.wait(url)
        assert json.loads(body) == EXPECTED  # the tool had its identity, the token and the header
    for task_id in task_ids:
        task = tasks_of(app).store.get(task_id)
        assert task is not None and task.state == "completed"
    assert leaks(redis_url) == []  # after
    assert not any(s in worker.log.read_text() for s in SECRETS)


@pytest.mark.slow
def test_a_job_sealed_with_the_old_key_is_opened_by_a_worker_given_it_as_a_fallback(
        celery_side: CelerySide, redis_url: str, receiver: Receiver) -> None:  # noqa: F811
    """The web side seals with the old key and cannot reach its broker, so the job waits in the
    outbox (where nothing is in clear either); a worker whose SECRET_KEY is the new one and whose
    SECRET_KEY_FALLBACKS holds the old one sends it, opens it and runs it."""
    import redis

    from flask_tooldiscovery.tasks.outbox import OUTBOX

    JOBS = f"{OUTBOX}:values"  # the due list's values in Redis

    celery_side.configure(**CREDENTIALS, TD_SECRET_KEY="old-key-0451", TD_OUTBOX_GRACE="1",
                          TD_BROKER_URL="redis://127.0.0.1:9/0")  # nothing listens there
    app = celery_side.web()
    url = receiver.url()
    task_id = call_whoami(app, "r", url)
    assert redis.Redis.from_url(redis_url).hget(JOBS, task_id) is not None
    assert leaks(redis_url) == []  # the job in the outbox
    (celery_side.folder / "gate-r").touch()
    celery_side.worker(TD_SECRET_KEY="new-key-0452", TD_SECRET_KEY_FALLBACKS="old-key-0451", TD_BROKER_URL="")
    [(_, body)] = receiver.wait(url)
    assert json.loads(body) == EXPECTED
    assert leaks(redis_url) == []


def test_a_worker_without_the_key_ends_the_task_failed_and_says_why(celery_side: CelerySide,  # noqa: F811
                                                                    redis_url: str) -> None:  # noqa: F811
    import redis

    from flask_tooldiscovery.tasks.outbox import OUTBOX

    JOBS = f"{OUTBOX}:values"  # the due list's values in Redis

    celery_side.configure(**CREDENTIALS, TD_SECRET_KEY="old-key-0451", TD_OUTBOX_GRACE="3600",
                          TD_BROKER_URL="redis://127.0.0.1:9/0")
    web = celery_side.web()
    task_id = call_whoami(web, "u", "http://127.0.0.1:9/never")
    wire = json.loads(redis.Redis.from_url(redis_url).hget(JOBS, task_id))
    assert "sealed" in wire and not {"identity", "authorization", "headers", "secrets", "arguments"} & set(wire)
    # rotated, the old key not kept; a broker that answers (nothing consumes it)
    celery_side.configure(TD_SECRET_KEY="new-key-0452", TD_BROKER_URL="")
    worker = celery_side.web()
    with worker.app_context():
        tasks_of(worker).run_wire(wire)
    task = tasks_of(worker).store.get(task_id)
    assert task is not None and task.state == "failed" and task.result is not None
    assert task.result.error == UNSEALED
    assert not (celery_side.folder / "whoami-u").exists()  # the tool never ran


def test_the_celery_engine_needs_a_secret_key() -> None:
    app = Flask("no_secret_key")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_TASK_ENGINE="celery",
                      TOOLDISCOVERY_STATE_STORAGE_URI="redis://127.0.0.1:9/0")
    app.extensions["celery"] = object()
    with pytest.raises(SettingsError, match=r"SECRET_KEY, which is unset: set app.config\['SECRET_KEY'\]"):
        ToolDiscovery().init_app(app)


def test_a_sealed_job_opens_only_with_its_key_or_a_fallback_holding_it() -> None:
    job = CallJob(task="t1", dialect="opal", tool="whoami", version="1.0.0", arguments={"name": "x"},
                  call_id="t1", authorization={"acme": TOKEN}, headers={"X-Tenant-Key": TENANT},
                  identity={"subject": None, "scopes": [], "claims": {}, "method": "api_key"})
    wire = job.to_wire(Sealer("old"))
    assert not any(form in json.dumps(wire).encode() for s in SECRETS for form in forms(s))
    assert job_from_wire(wire, Sealer("new", ["old"])) == job
    with pytest.raises(_Unsealable, match="SECRET_KEY_FALLBACKS"):
        job_from_wire(wire, Sealer("new"))
    with pytest.raises(_Unsealable, match="no SECRET_KEY"):
        job_from_wire(wire, None)


@pytest.mark.slow
@pytest.mark.parametrize("secret_key", ["set", "unset"])
def test_an_opal_callback_token_is_kept_sealed_in_shared_records_or_nowhere(
        secret_key: str, celery_side: CelerySide, redis_url: str, tmp_path: Path,  # noqa: F811
        receiver: Receiver) -> None:  # noqa: F811
    """The thread engine with shared (Redis) task records: the token Opal gives for its callback is
    sealed in the record and sent in clear only to the callback; without a SECRET_KEY to seal it
    with, the call is answered as it runs and the token is kept nowhere."""
    from .apps.opal_async_app import create_app

    store = redis_url + "/6"
    callback_token = f"cb-{os.urandom(6).hex()}-callback-0454"
    app = celery_side.web(create_app(hosts="127.0.0.1", TOOLDISCOVERY_STATE_STORAGE_URI=store,  # stopped after
                                     **({} if secret_key == "set" else {"SECRET_KEY": None})))
    url, gate = receiver.url(), tmp_path / "gate"

    def held() -> list[str]:
        return [name for name, values in everything(store).items()
                if any(form in value for value in values for form in forms(callback_token))]

    if secret_key == "unset":
        gate.touch()  # answered as it runs: the gate must be open already
    answer = app.test_client().post("/opal/tools/build_report", json={
        "parameters": {"n": 4, "gate": str(gate)}, "async_callback": {"url": url, "callback_token": callback_token}})
    if secret_key == "unset":
        assert answer.status_code == 200 and answer.get_json() == {"n": 4, "double": 8}, answer.data
        assert held() == [] and receiver.received(url) == []
        return
    assert answer.status_code == 202, answer.data
    assert held() == []  # while it runs: the record holds the token sealed
    gate.touch()
    [(headers, body)] = receiver.wait(url)
    assert headers["Authorization"] == f"Bearer {callback_token}" and json.loads(body)
    assert held() == []  # after
