"""Opal's asynchronous execution under gunicorn: a long_running tool called with an
``async_callback`` is answered 202 at once and its result is POSTed to the callback URL (a local
receiver here), retried on 503; everything else stays synchronous; unsafe callback URLs are refused."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from flask_tooldiscovery.runtime.invoke import GENERIC_FAILURE
from flask_tooldiscovery.tasks import callbacks

from .loopback import WAIT, LoopbackServer, QuietHandler, Receiver, free_port
from .test_deploy import stop
from .test_operating_server import start

pytestmark = pytest.mark.slow

RESULT_TYPE = "application/vnd.optimizely.opal.tools+json"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The app with 127.0.0.1 as its one callback host."""
    base, proc = start("tests.apps.opal_async_app:create_app(hosts='127.0.0.1')")
    yield base
    stop(proc)


def call(base: str, tool: str, parameters: dict[str, Any], callback: Any = None, **extra: Any) -> requests.Response:
    body: dict[str, Any] = {"parameters": parameters, **extra}
    if callback is not None:
        body["async_callback"] = callback
    headers = {"X-Trace-Id": "trace-async-1", "X-Opal-Thread-Id": "thread-9"}
    return requests.post(f"{base}/opal/tools/{tool}", json=body, headers=headers, timeout=30)


def callback(url: str, token: str | None = "cb-token-1") -> dict[str, Any]:
    return {"url": url, "tool_call_id": "tc-" + url[-6:], **({"callback_token": token} if token else {})}


def barrier(server: str, receiver: Receiver) -> None:
    """A long-running call whose result has arrived: any callback an earlier call would have sent
    in this worker has had its turn."""
    url = receiver.url()
    assert call(server, "build_report", {"n": 0}, callback(url)).status_code == 202
    receiver.wait(url)


def test_discovery_marks_long_running_tools_async(server: str) -> None:
    functions = {f["name"]: f for f in requests.get(f"{server}/opal/discovery", timeout=10).json()["functions"]}
    assert functions["build_report"]["mode"] == "async"
    assert functions["build_report"]["timeout"] == 60
    assert functions["fail"]["mode"] == "async" and "timeout" not in functions["fail"]
    assert "mode" not in functions["quick"] and "timeout" not in functions["quick"]


def test_the_openapi_document_shows_the_callback_and_the_202() -> None:
    from openapi_spec_validator import validate

    from .apps.opal_async_app import create_app

    app = create_app(TOOLDISCOVERY_OPENAPI_DIALECT="opal")
    document = app.test_client().get("/tools/openapi.json").get_json()
    validate(document)
    report = document["paths"]["/opal/tools/build_report"]["post"]
    assert report["responses"]["202"]["content"]["application/json"]["schema"]["properties"]["status"] == {
        "enum": ["accepted"]}
    envelope, _bare = report["requestBody"]["content"]["application/json"]["schema"]["anyOf"]  # or bare arguments
    assert envelope["properties"]["async_callback"]["required"] == ["url"]
    quick = document["paths"]["/opal/tools/quick"]["post"]
    assert "202" not in quick["responses"]
    quick_envelope = quick["requestBody"]["content"]["application/json"]["schema"]["anyOf"][0]
    assert "async_callback" not in quick_envelope["properties"]


def test_202_at_once_then_the_result_is_posted_to_the_callback(server: str, receiver: Receiver,
                                                               tmp_path: Path) -> None:
    gate, url = tmp_path / "gate", receiver.url()
    r = call(server, "build_report", {"n": "2", "gate": str(gate)}, callback(url))
    assert r.status_code == 202, r.text
    assert r.json() == {"status": "accepted", "task_id": r.json()["task_id"]} and r.json()["task_id"]
    assert r.headers["X-Trace-Id"] == "trace-async-1"
    assert receiver.received(url) == []  # the tool is still waiting for its gate: 202 came first
    gate.touch()
    [(headers, body)] = receiver.wait(url)
    assert json.loads(body) == {"content": {"n": 2, "double": 4}, "content_type": "application/json"}
    assert headers["Content-Type"] == RESULT_TYPE
    assert headers["Authorization"] == "Bearer cb-token-1"
    assert headers["X-Trace-Id"] == "trace-async-1"


@pytest.mark.parametrize("refuse, expected", [
    (False, {"message": "Booked", "content": {"room": "Blue"}, "content_type": "application/json",
             "operation": {"operation_id": "op-7", "status": "completed"}}),
    (True, {"message": "No room", "error": {"type": "about:blank", "title": "Resource Conflict", "status": 409,
                                            "detail": "No room"}}),
])
def test_an_envelope_is_the_callbacks_body(server: str, receiver: Receiver, refuse: bool,
                                           expected: dict[str, Any]) -> None:
    url = receiver.url()
    assert call(server, "enveloped", {"refuse": refuse}, callback(url)).status_code == 202
    [(headers, body)] = receiver.wait(url)
    assert json.loads(body) == expected and headers["Content-Type"] == RESULT_TYPE


def test_the_background_call_keeps_the_requests_context(server: str, receiver: Receiver) -> None:
    url = receiver.url()
    auth = {"provider": "OptiID", "credentials": {"access_token": "opti-tok", "user_id": "u-7"}}
    assert call(server, "who", {}, callback(url, token=None), auth=auth).status_code == 202
    [(headers, body)] = receiver.wait(url)
    assert "Authorization" not in headers  # no callback_token given, none sent
    assert json.loads(body)["content"] == {
        "app": "opal_async", "user_id": "u-7", "trace_id": "trace-async-1", "token": "opti-tok",
        "thread": "thread-9", "header": "thread-9", "tool_call_id": "tc-" + url[-6:]}


def test_a_failing_receiver_gets_the_result_on_the_third_attempt(server: str, receiver: Receiver) -> None:
    url = receiver.url(503, 503)
    assert call(server, "build_report", {"n": 5}, callback(url)).status_code == 202
    attempts = receiver.wait(url, 3)
    assert len(attempts) == 3
    assert [json.loads(body) for _, body in attempts] == [
        {"content": {"n": 5, "double": 10}, "content_type": "application/json"}] * 3


def test_invalid_arguments_are_answered_at_once_and_nothing_runs(server: str, receiver: Receiver) -> None:
    bad, missing = receiver.url(), receiver.url()
    r = call(server, "build_report", {"n": "many"}, callback(bad))
    assert r.status_code == 400, r.text
    assert "n" in r.json()["parameter_errors"] and r.json()["error"] == r.json()["detail"]
    r = call(server, "build_report", {}, callback(missing))
    assert r.status_code == 400 and "n" in r.json()["parameter_errors"]
    barrier(server, receiver)
    assert receiver.received(bad) == [] and receiver.received(missing) == []


def test_a_tool_error_and_a_crash_deliver_error_bodies_without_details(server: str, receiver: Receiver) -> None:
    expected, crashed = receiver.url(), receiver.url()
    assert call(server, "fail", {"kind": "tool_error"}, callback(expected)).status_code == 202
    assert call(server, "fail", {"kind": "crash"}, callback(crashed)).status_code == 202
    [(_, body)] = receiver.wait(expected)
    assert json.loads(body) == {"message": "Quota exceeded for this month", "error": {
        "type": "about:blank", "title": "Provider Error", "status": 502,
        "detail": "Quota exceeded for this month", "error_code": "PROVIDER_ERROR"}}
    [(_, body)] = receiver.wait(crashed)
    assert json.loads(body)["message"] == GENERIC_FAILURE
    assert json.loads(body)["error"]["detail"] == GENERIC_FAILURE
    for _, raw in receiver.received(expected) + receiver.received(crashed):
        for leak in (b"Traceback", b"hunter2", b"settings.py", b"RuntimeError", b"quota row"):
            assert leak not in raw


def test_a_rate_limited_async_call_is_refused_at_once_not_after_the_202(server: str, receiver: Receiver) -> None:
    first, second = receiver.url(), receiver.url()
    assert call(server, "once_a_minute", {}, callback(first)).status_code == 202
    assert json.loads(receiver.wait(first)[0][1]) == {"message": "done"}
    refused = call(server, "once_a_minute", {}, callback(second))
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1, refused.text
    barrier(server, receiver)
    assert receiver.received(second) == []  # nothing was accepted, so nothing is delivered


def test_without_long_running_or_without_callback_the_call_stays_synchronous(server: str,
                                                                             receiver: Receiver) -> None:
    url = receiver.url()
    r = call(server, "quick", {"n": 3}, callback(url))
    assert r.status_code == 200 and r.json() == {"n": 3}
    r = call(server, "build_report", {"n": 4})
    assert r.status_code == 200 and r.json() == {"n": 4, "double": 8}
    r = call(server, "fail", {"kind": "tool_error"}, None)
    assert r.status_code == 500 and r.json()["error"] == "Quota exceeded for this month"
    approval = receiver.url()  # a tool that needs a person's approval asks for it on the call itself
    r = call(server, "wipe", {}, callback(approval))
    assert r.status_code == 428 and "approval" in r.json()["error"], r.text
    barrier(server, receiver)
    assert receiver.received(url) == [] and receiver.received(approval) == []


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/cb", "http://localhost/cb", "https://10.1.2.3/cb",
                                 "http://user:pw@127.0.0.1/cb", "/relative/cb", "http://[::1/cb"])
def test_callback_urls_not_listed_are_refused_with_400(server: str, url: str) -> None:
    r = call(server, "build_report", {"n": 1}, {"url": url, "tool_call_id": "tc"})
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith("The callback URL is refused") and r.json()["error"] == r.json()["detail"]
    assert "Traceback" not in r.text


@pytest.mark.parametrize("value", ["http://127.0.0.1/cb", {"tool_call_id": "tc"}, {"url": 7}])
def test_a_malformed_callback_is_refused_with_400(server: str, value: Any) -> None:
    r = call(server, "build_report", {"n": 1}, value)
    assert r.status_code == 400 and r.json()["error"], r.text


@pytest.fixture(scope="module")
def unlisted() -> Iterator[str]:
    """The app with no callback hosts listed: https to public addresses only."""
    base, proc = start("tests.apps.opal_async_app:create_app()")
    yield base
    stop(proc)


def test_unset_hosts_allow_only_https_to_public_addresses(unlisted: str, receiver: Receiver) -> None:
    for url in (receiver.url(), "https://127.0.0.1/cb", "https://localhost/cb", "https://[::1]/cb",
                "https://169.254.169.254/latest", "https://192.168.1.1/cb", "https://0.0.0.0/cb",
                "https://224.0.0.1/cb", "https://[::ffff:127.0.0.1]/cb"):
        r = call(unlisted, "build_report", {"n": 1}, {"url": url, "tool_call_id": "tc"})
        assert r.status_code == 400, (url, r.text)
        assert "refused" in r.json()["error"]
    assert call(unlisted, "quick", {"n": 1}, {"url": "https://127.0.0.1/cb"}).status_code == 200


@pytest.mark.parametrize(("host", "said"), [
    ("[64:ff9b::7f00:1]", "is the NAT64 form of 127.0.0.1"), ("[2002:7f00:1::]", "is the 6to4 form of 127.0.0.1"),
    ("[::a9fe:a9fe]", "is the IPv4-compatible form of 169.254.169.254")])
def test_ipv6_forms_of_loopback_and_private_addresses_are_refused_with_400(unlisted: str, host: str,
                                                                           said: str) -> None:
    """The URL is checked before the arguments, which are invalid here: a server that let the URL
    through would answer 400 for them and run nothing, so no test ever POSTs beyond loopback."""
    r = call(unlisted, "build_report", {"n": "not a number"}, {"url": f"https://{host}/cb", "tool_call_id": "tc"})
    assert r.status_code == 400, r.text
    assert r.json()["error"] == f"The callback URL is refused: host {host.strip('[]')!r} {said}: " \
                                f"only public addresses unless the host is in TOOLDISCOVERY_OPAL_CALLBACK_HOSTS."


def test_each_failed_attempt_is_logged_and_the_give_up_too(receiver: Receiver) -> None:
    base, proc = start("tests.apps.opal_async_app:create_app(hosts='127.0.0.1', retries=1, call_log='json')")
    try:
        down, gone = receiver.url(503, 503, 503), receiver.url(404)
        assert call(base, "build_report", {"n": 1}, callback(down)).status_code == 202
        assert call(base, "build_report", {"n": 1}, callback(gone)).status_code == 202
        receiver.wait(down, 2)
        receiver.wait(gone, 1)
    finally:
        stop(proc)  # a graceful stop: the worker finishes its deliveries first
    assert len(receiver.received(down)) == 2  # RETRIES=1: two attempts in all
    assert len(receiver.received(gone)) == 1  # a 404 is not retried
    lines = [json.loads(line) for line in (proc.stdout.read() if proc.stdout else "").splitlines()
             if line.startswith("{")]
    for url, failed in ((down, 2), (gone, 1)):
        path = url.split("/")[-1]
        mine = [line for line in lines if path in line["message"]]
        warnings = [line for line in mine if line["level"] == "WARNING"]
        errors = [line for line in mine if line["level"] == "ERROR"]
        assert len(warnings) == failed and len(errors) == 1, mine
        for line in warnings + errors:
            assert "trace_id=trace-async-1" in line["message"] and "call_id=" in line["message"]
            assert "cb-token-1" not in line["message"]


def test_a_redirect_is_an_answer_not_a_new_destination(server: str, receiver: Receiver) -> None:
    url = receiver.url(302)
    assert call(server, "build_report", {"n": 1}, callback(url)).status_code == 202
    receiver.wait(url)
    barrier(server, receiver)
    assert len(receiver.received(url)) == 1 and receiver.received(url + "/moved") == []


def test_connection_errors_are_retried_then_given_up(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}/nobody-listens?sig=s3cret"
    with caplog.at_level("WARNING", logger="flask_tooldiscovery"):
        delivered = callbacks.deliver(url, {"message": "x"}, {"Authorization": "Bearer t0k"}, attempts=3,
                                      timeout=5, hosts=("127.0.0.1",), setting="HOSTS", ids="call_id=c1",
                                      backoff=0.01)
    assert delivered is False
    levels = [r.levelname for r in caplog.records]
    assert levels == ["WARNING", "WARNING", "WARNING", "ERROR"]
    assert all("call_id=c1" in r.getMessage() for r in caplog.records)
    assert not any("s3cret" in r.getMessage() or "t0k" in r.getMessage() for r in caplog.records)


def test_a_receiver_down_around_completion_gets_the_result_once_it_is_up(tmp_path: Path) -> None:
    """Results are offered for the retry window (no attempt count set): a receiver that refuses
    connections for 4 s around the call's end still gets the result, once."""
    port = free_port()
    got: list[bytes] = []

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            got.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            self.reply(204)

    base, proc = start("tests.apps.opal_async_app:create_app(hosts='127.0.0.1', retries=None)")
    try:
        url = f"http://127.0.0.1:{port}/cb"
        assert call(base, "build_report", {"n": 1}, callback(url)).status_code == 202
        time.sleep(4)  # the receiver is down: the first attempts fail to connect
        assert got == []
        server = LoopbackServer(Handler, port)
        deadline = time.monotonic() + WAIT
        while not got and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        assert [json.loads(body) for body in got] == [{"content": {"n": 1, "double": 2},
                                                       "content_type": "application/json"}]
        server.close()
    finally:
        stop(proc)
