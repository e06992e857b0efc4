"""Operating a server, in process: rate limits in every dialect's shape, the call signals, one
OpenTelemetry span per call, Prometheus metrics and the JSON call log. (Redis and gunicorn:
test_operating_server.py.)"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

import flask_tooldiscovery
from flask_tooldiscovery import RegistrationError, SettingsError, ToolDiscovery, ToolError, signals

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def make_app(config: dict[str, Any] | None = None, **options: Any) -> Flask:
    d = ToolDiscovery(**options)

    @d.tool(rate_limit_per_minute=2)
    def limited() -> str:
        """Twice a minute."""
        return "ok"

    @d.tool
    def echo(text: str = "") -> str:
        """Say it back."""
        return text

    @d.tool
    def broken() -> None:
        """Always fails."""
        raise ToolError("it broke")

    app = Flask("ops")
    app.config.update(TESTING=True, TOOLDISCOVERY_ALLOW_EXECUTE=True, **(config or {}))
    d.init_app(app)
    return app


def request_for(dialect: str, tool: str, arguments: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    args = arguments or {}
    return {
        "opal": (f"/opal/tools/{tool}", {"parameters": args}),
        "oxp": ("/oxp/tools/call", {"request": {"tool_id": f"Ops.{tool}", "input": args}}),
        "tdp": ("/api/v1/tools/execute", {"tool_name": tool, "arguments": args}),
        "explorer": (f"/explorer/tools/{tool}/call", args),
        "mcp": ("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}}),
    }[dialect]


def call(app: Flask, dialect: str, tool: str, arguments: dict[str, Any] | None = None, *,
         address: str = "127.0.0.1", headers: dict[str, str] | None = None) -> Any:
    path, body = request_for(dialect, tool, arguments)
    return app.test_client().post(path, json=body, headers=headers or {}, environ_base={"REMOTE_ADDR": address})


# -- rate limits ----------------------------------------------------------------------------------


def refused_shape(dialect: str, response: Any) -> None:
    """The dialect's own refusal: 429 with Retry-After (MCP: an isError result), retry_after_ms."""
    seconds = int(response.headers["Retry-After"])
    assert 1 <= seconds <= 60
    body = response.get_json()
    if dialect == "mcp":
        assert response.status_code == 200
        result = body["result"]
        assert result["isError"] is True and result["_meta"]["retryAfterMs"] == seconds * 1000
        assert "Rate limit of 2 per 1 minute reached for tool limited" in result["content"][0]["text"]
        return
    assert response.status_code == 429
    if dialect == "opal":
        assert body["can_retry"] is True and body["retry_after_ms"] == seconds * 1000
        assert body["error"] == body["detail"] and "Rate limit" in body["error"]
    elif dialect == "oxp":
        assert body["$schema"].startswith("urn:") and "Rate limit" in body["message"]
        assert body["can_retry"] is True and body["retry_after_ms"] == seconds * 1000
    elif dialect == "tdp":
        assert body == {"success": False, "error": body["error"], "code": "rate_limited", "is_async": False}
    elif dialect == "explorer":
        assert "Rate limit" in body["error"]


@pytest.mark.parametrize("dialect", ["opal", "oxp", "tdp", "explorer", "mcp"])
def test_a_tools_rate_limit_is_enforced_in_each_dialects_shape(dialect) -> None:
    app = make_app()
    for _ in range(2):
        ok = call(app, dialect, "limited")
        assert ok.status_code == 200 and "Retry-After" not in ok.headers
    refused = call(app, dialect, "limited")
    refused_shape(dialect, refused)
    assert call(app, dialect, "echo", {"text": "hi"}).status_code == 200  # other tools are not limited


def test_the_limit_is_per_tool_and_caller_across_dialects() -> None:
    app = make_app()
    assert call(app, "opal", "limited").status_code == 200
    assert call(app, "mcp", "limited").status_code == 200
    assert call(app, "tdp", "limited").status_code == 429  # one counter for the tool, whatever the dialect
    assert call(app, "tdp", "limited", address="127.0.0.2").status_code == 200  # another client address


def test_an_identity_is_counted_wherever_it_calls_from() -> None:
    app = make_app(identity=lambda request: request.headers.get("X-User"))
    ann, bob = {"X-User": "ann"}, {"X-User": "bob"}
    assert call(app, "opal", "limited", headers=ann, address="127.0.0.2").status_code == 200
    assert call(app, "opal", "limited", headers=ann, address="127.0.0.3").status_code == 200
    assert call(app, "opal", "limited", headers=ann, address="127.0.0.4").status_code == 429
    assert call(app, "opal", "limited", headers=bob, address="127.0.0.2").status_code == 200


def test_default_dialect_and_tool_settings_in_order_of_precedence() -> None:
    app = make_app({"TOOLDISCOVERY_RATELIMIT_DEFAULT": "1/minute",
                    "TOOLDISCOVERY_RATELIMIT_DIALECTS": {"mcp": "3 per minute"},
                    "TOOLDISCOVERY_RATELIMIT_TOOLS": {"echo": 2}})

    def allowed(dialect: str, tool: str) -> int:
        count = 0
        for _ in range(6):
            r = call(app, dialect, tool)
            if r.status_code == 429 or (dialect == "mcp" and "Retry-After" in r.headers):
                break
            count += 1
        return count

    assert allowed("opal", "broken") == 1  # the default
    assert allowed("mcp", "broken") == 3  # the dialect's
    assert allowed("tdp", "echo") == 2  # the tool's setting, over the default
    assert allowed("opal", "limited") == 2  # the tool's own rate_limit_per_minute over everything


def test_no_limit_unless_one_is_set() -> None:
    app = make_app()
    assert all(call(app, "opal", "echo").status_code == 200 for _ in range(20))


def test_several_limits_in_one_setting() -> None:
    app = make_app({"TOOLDISCOVERY_RATELIMIT_DEFAULT": "100/hour;2/minute",
                    "TOOLDISCOVERY_RATELIMIT_STRATEGY": "moving-window"})
    assert [call(app, "opal", "echo").status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.parametrize("config, words", [
    ({"TOOLDISCOVERY_RATELIMIT_DEFAULT": "lots"}, "TOOLDISCOVERY_RATELIMIT_DEFAULT must be a rate limit"),
    ({"TOOLDISCOVERY_RATELIMIT_TOOLS": {"echo": "often"}}, "TOOLDISCOVERY_RATELIMIT_TOOLS['echo'] must be"),
    ({"TOOLDISCOVERY_RATELIMIT_DIALECTS": {"mcp": 0}}, "TOOLDISCOVERY_RATELIMIT_DIALECTS['mcp'] must be"),
    ({"TOOLDISCOVERY_RATELIMIT_STRATEGY": "leaky"}, "TOOLDISCOVERY_RATELIMIT_STRATEGY must be one of"),
    ({"TOOLDISCOVERY_RATELIMIT_STORAGE_URI": "bogus://x"}, "TOOLDISCOVERY_RATELIMIT_STORAGE_URI: unknown storage"),
    ({"TOOLDISCOVERY_METRICS_PATH": "/metrics"}, "TOOLDISCOVERY_METRICS_PATH serves metrics only with"),
])
def test_wrong_operating_settings_fail_at_init_app(config, words) -> None:
    with pytest.raises(SettingsError, match=None) as info:
        make_app(config)
    assert words in str(info.value)


def test_a_storage_without_its_driver_fails_at_init_app_with_the_install_line() -> None:
    pytest.importorskip("limits")
    try:
        import pymemcache  # noqa: F401
        pytest.skip("pymemcache is installed")
    except ImportError:
        pass
    with pytest.raises(SettingsError) as info:
        make_app({"TOOLDISCOVERY_RATELIMIT_STORAGE_URI": "memcached://127.0.0.1:11211"})
    assert 'pip install "limits[memcached]"' in str(info.value)


@pytest.mark.parametrize("setting, module, extra", [
    ("TOOLDISCOVERY_METRICS", "prometheus_client", "metrics"),
    ("TOOLDISCOVERY_OTEL", "opentelemetry.trace", "otel"),
])
def test_a_missing_extra_fails_at_init_app_with_the_install_line(monkeypatch, setting, module, extra) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(SettingsError) as info:
        make_app({setting: True})
    assert setting in str(info.value) and f'pip install "flask-tooldiscovery[{extra}]"' in str(info.value)


@pytest.mark.parametrize("value", [0, -3, "5", 2.5, True])
def test_rate_limit_per_minute_must_be_a_positive_whole_number(value) -> None:
    d = ToolDiscovery()
    with pytest.raises(RegistrationError, match="rate_limit_per_minute must be a positive whole number"):
        d.add_tool(lambda: 1, name="x", rate_limit_per_minute=value)


def test_a_failing_storage_lets_calls_through_and_says_so(caplog) -> None:
    from .conftest import free_port

    app = make_app({"TOOLDISCOVERY_RATELIMIT_STORAGE_URI": f"redis://127.0.0.1:{free_port()}/0"})
    with caplog.at_level(logging.ERROR, logger="flask_tooldiscovery"):
        assert [call(app, "opal", "limited").status_code for _ in range(3)] == [200, 200, 200]
    assert any("rate limit storage failed" in r.getMessage() for r in caplog.records)


# -- signals --------------------------------------------------------------------------------------


@pytest.fixture
def received() -> Any:
    """Every call signal any app sends during the test, in order, as (name, sender, fields)."""
    got: list[tuple[str, Any, dict[str, Any]]] = []
    receivers = []
    for name in ("tool_called", "tool_succeeded", "tool_failed", "tool_refused"):
        def receiver(sender: Any, _name: str = name, **fields: Any) -> None:
            got.append((_name, sender, fields))

        getattr(signals, name).connect(receiver)
        receivers.append((name, receiver))
    yield got
    for name, receiver in receivers:
        getattr(signals, name).disconnect(receiver)


def test_signals_come_in_order_with_the_calls_fields(received) -> None:
    app = make_app(identity=lambda request: "ann")
    trace = {"X-Trace-Id": "trace-1"}
    call(app, "opal", "echo", {"text": "hi"}, headers=trace)
    call(app, "oxp", "broken", headers=trace)
    call(app, "tdp", "echo", {"text": 5}, headers=trace)
    call(app, "mcp", "limited", headers=trace)
    call(app, "mcp", "limited", headers=trace)
    call(app, "explorer", "limited", headers=trace)
    assert [(name, fields["tool"].name, fields["dialect"]) for name, _, fields in received] == [
        ("tool_called", "echo", "opal"), ("tool_succeeded", "echo", "opal"),
        ("tool_called", "broken", "oxp"), ("tool_failed", "broken", "oxp"),
        ("tool_called", "echo", "tdp"), ("tool_failed", "echo", "tdp"),
        ("tool_called", "limited", "mcp"), ("tool_succeeded", "limited", "mcp"),
        ("tool_called", "limited", "mcp"), ("tool_succeeded", "limited", "mcp"),
        ("tool_called", "limited", "explorer"), ("tool_refused", "limited", "explorer"),
    ]
    for _, sender, fields in received:
        assert sender is app
        assert fields["identity"].subject == "ann" and fields["trace_id"] == "trace-1"
        assert fields["call_id"] and fields["duration_ms"] >= 0
    calls = [f["call_id"] for n, _, f in received if n == "tool_called"]
    ends = [f["call_id"] for n, _, f in received if n != "tool_called"]
    assert calls == ends and len(set(calls)) == 6  # each call's pair shares its id
    outcomes = [f.get("outcome") for n, _, f in received if n in ("tool_succeeded", "tool_failed")]
    assert [o.status for o in outcomes] == ["success", "failure", "invalid", "success", "success"]
    refusal = received[-1][2]["error"]
    assert type(refusal).__name__ == "RateLimited" and refusal.status == 429 and refusal.retry_after >= 1


def test_signals_are_sent_by_the_core_for_a_dialect_of_ones_own(received) -> None:
    from flask_tooldiscovery import Dialect
    from flask_tooldiscovery.serving.wire import json_response

    def blueprint(pipe):
        bp = pipe.blueprint(__name__)

        @pipe.route("/run/<name>", "call", ["POST"])
        def run(name):
            return json_response({"ok": pipe.invoke(pipe.find(name), {}, pipe.context()).ok})

        return bp

    d = ToolDiscovery(dialects=[Dialect(name="mine", make_blueprint=blueprint, default_prefix="/mine")])
    d.add_tool(lambda: 1, name="one")
    app = Flask("mine")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["mine"])
    d.init_app(app)
    assert app.test_client().post("/mine/run/one", json={}).get_json() == {"ok": True}
    assert [(n, f["dialect"]) for n, _, f in received] == [("tool_called", "mine"), ("tool_succeeded", "mine")]


# -- OpenTelemetry ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exporter() -> Any:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return memory


@pytest.fixture
def spans(exporter) -> Callable[[], list[Any]]:
    exporter.clear()
    return lambda: list(exporter.get_finished_spans())


def test_one_span_per_call_child_of_the_incoming_traceparent(spans) -> None:
    from opentelemetry.trace import SpanKind, StatusCode

    app = make_app({"TOOLDISCOVERY_OTEL": True})
    assert call(app, "opal", "echo", {"text": "hi"}, headers={"traceparent": TRACEPARENT}).status_code == 200
    (span,) = spans()
    assert span.name == "execute_tool echo" and span.kind == SpanKind.INTERNAL
    assert (span.instrumentation_scope.name, span.instrumentation_scope.version) == (
        "flask_tooldiscovery", flask_tooldiscovery.__version__)
    assert span.context.trace_id == int(TRACE_ID, 16)
    assert span.parent is not None and span.parent.span_id == int(PARENT_ID, 16) and span.parent.is_remote
    attributes = dict(span.attributes)
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "echo" and attributes["gen_ai.tool.type"] == "function"
    assert attributes["gen_ai.tool.description"] == "Say it back."
    assert attributes["tooldiscovery.dialect"] == "opal"
    call_id = attributes["gen_ai.tool.call.id"]
    assert isinstance(call_id, str) and len(call_id) == 36
    assert "error.type" not in attributes and span.status.status_code == StatusCode.UNSET
    assert "hi" not in json.dumps(attributes)  # arguments and results are not recorded


def test_a_failing_call_has_status_error(spans) -> None:
    from opentelemetry.trace import StatusCode

    app = make_app({"TOOLDISCOVERY_OTEL": True})
    call(app, "oxp", "broken", headers={"traceparent": TRACEPARENT})
    call(app, "tdp", "echo", {"text": 5})
    for _ in range(3):
        call(app, "opal", "limited")
    failed, invalid, _, _, refused = spans()
    assert failed.status.status_code == StatusCode.ERROR and failed.status.description == "it broke"
    assert failed.attributes["error.type"] == "ToolError" and failed.parent.span_id == int(PARENT_ID, 16)
    assert invalid.status.status_code == StatusCode.ERROR and invalid.attributes["error.type"] == "invalid_arguments"
    assert invalid.parent is None  # no traceparent: a trace of its own
    assert refused.status.status_code == StatusCode.ERROR and refused.attributes["error.type"] == "RateLimited"


def test_mcp_meta_traceparent_is_the_parent(spans) -> None:
    app = make_app({"TOOLDISCOVERY_OTEL": True})
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": {"traceparent": TRACEPARENT}}}
    assert app.test_client().post("/mcp", json=body).status_code == 200
    (span,) = spans()
    assert span.parent.span_id == int(PARENT_ID, 16) and span.context.trace_id == int(TRACE_ID, 16)


def test_a_tools_own_spans_nest_under_the_call(spans) -> None:
    from opentelemetry import trace

    d = ToolDiscovery()

    @d.tool
    def nested() -> str:
        with trace.get_tracer("app").start_as_current_span("inner"):
            return "ok"

    app = Flask("ops")
    app.config.update(TESTING=True, TOOLDISCOVERY_OTEL=True)
    d.init_app(app)
    app.test_client().post("/opal/tools/nested", json={})
    inner, outer = spans()
    assert inner.name == "inner" and outer.name == "execute_tool nested"
    assert inner.parent.span_id == outer.context.span_id


def test_no_spans_unless_turned_on(spans) -> None:
    call(make_app(), "opal", "echo", headers={"traceparent": TRACEPARENT})
    assert spans() == []


# -- Prometheus -------------------------------------------------------------------------------------


def scrape(app: Flask, path: str = "/metrics") -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    r = app.test_client().get(path)
    assert r.status_code == 200 and r.mimetype == "text/plain", r.data
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.get_data(as_text=True)) for s in family.samples}


def sample(values: dict, name: str, **labels: str) -> float:
    return values.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_calls_failures_durations_and_in_flight() -> None:
    pytest.importorskip("prometheus_client")
    app = make_app({"TOOLDISCOVERY_METRICS": True, "TOOLDISCOVERY_METRICS_PATH": "/metrics"})
    before = scrape(app)
    call(app, "opal", "echo", {"text": "a"})
    call(app, "mcp", "echo", {"text": "b"})
    call(app, "opal", "broken")
    call(app, "opal", "echo", {"text": 1})
    for _ in range(3):
        call(app, "tdp", "limited")
    after = scrape(app)

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    calls = "tooldiscovery_tool_calls_total"
    assert delta(calls, tool="echo", dialect="opal", outcome="success") == 1
    assert delta(calls, tool="echo", dialect="mcp", outcome="success") == 1
    assert delta(calls, tool="echo", dialect="opal", outcome="invalid") == 1
    assert delta(calls, tool="broken", dialect="opal", outcome="failure") == 1
    assert delta(calls, tool="limited", dialect="tdp", outcome="success") == 2
    assert delta(calls, tool="limited", dialect="tdp", outcome="refused") == 1
    assert delta("tooldiscovery_tool_failures_total", tool="broken", dialect="opal") == 1
    assert delta("tooldiscovery_tool_failures_total", tool="echo", dialect="opal") == 0
    assert delta("tooldiscovery_tool_call_duration_seconds_count", tool="echo", dialect="opal") == 2
    assert delta("tooldiscovery_tool_call_duration_seconds_count", tool="limited", dialect="tdp") == 2  # ran
    assert sample(after, "tooldiscovery_tool_calls_in_flight", tool="echo", dialect="opal") == 0


def test_the_metrics_endpoint_is_opt_in_and_host_guarded(caplog) -> None:
    pytest.importorskip("prometheus_client")
    assert make_app({"TOOLDISCOVERY_METRICS": True}).test_client().get("/metrics").status_code == 404
    app = make_app({"TOOLDISCOVERY_METRICS": True, "TOOLDISCOVERY_METRICS_PATH": "/ops/metrics"})
    assert app.test_client().get("/ops/metrics").status_code == 200
    with caplog.at_level("WARNING", logger="flask_tooldiscovery"):
        answer = app.test_client().get("/ops/metrics", headers={"Host": "evil.example"})
    assert answer.status_code == 421
    assert answer.get_json() == {"error": {  # JSON, naming the setting and not the host
        "code": 421, "message": "Misdirected request: this host name is not in TOOLDISCOVERY_ALLOWED_HOSTS."}}
    assert any("'evil.example'" in r.getMessage() for r in caplog.records)  # the log says which host


# -- the JSON call log ------------------------------------------------------------------------------

LOG_APP = textwrap.dedent('''
    from flask import Flask
    from flask_tooldiscovery import ToolDiscovery, ToolContext

    discovery = ToolDiscovery()

    @discovery.tool(rate_limit_per_minute=1, requirements={"secrets": ["API_TOKEN"]})
    def fetch(ctx: ToolContext = None) -> str:
        """Use a secret."""
        return "fetched with " + str(len(ctx.secret("API_TOKEN")))

    app = Flask("logs")
    app.config.update(TOOLDISCOVERY_CALL_LOG="json", TOOLDISCOVERY_OXP_API_KEY="key-very-secret",
                      TOOLDISCOVERY_DIALECTS=["oxp"])
    discovery.init_app(app)
    c = app.test_client()
    body = {"request": {"tool_id": "Logs.fetch", "input": {}, "context": {
        "secrets": [{"id": "API_TOKEN", "value": "s3cr3t-value"}]}}}
    headers = {"OXP-API-Key": "key-very-secret", "traceparent": "TRACEPARENT"}
    print(c.post("/oxp/tools/call", json=body, headers=headers).status_code)
    print(c.post("/oxp/tools/call", json=body, headers=headers).status_code)
''').replace("TRACEPARENT", TRACEPARENT)


def test_json_call_log_lines_carry_the_call_fields_and_no_secret(tmp_path: Path) -> None:
    (tmp_path / "logapp.py").write_text(LOG_APP)
    root = str(Path(__file__).resolve().parent.parent)
    result = subprocess.run([sys.executable, "logapp.py"], cwd=tmp_path, text=True, capture_output=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": root})
    assert result.stdout.split() == ["200", "429"], result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    calls = [line for line in lines if line["message"].startswith("tool call")]
    assert [c["outcome"] for c in calls] == ["success", "refused"], result.stderr
    for line in calls:
        assert line["tool"] == "fetch" and line["dialect"] == "oxp" and line["trace_id"] == TRACE_ID
        assert len(line["call_id"]) == 36 and line["duration_ms"] >= 0 and line["level"] == "INFO"
    assert calls[0]["call_id"] != calls[1]["call_id"]
    assert "s3cr3t-value" not in result.stderr and "key-very-secret" not in result.stderr


def test_gunicorns_child_exit_hook_forgets_a_dead_workers_live_gauges(monkeypatch, tmp_path) -> None:
    pytest.importorskip("prometheus_client")
    from flask_tooldiscovery.observe.metrics import child_exit

    (tmp_path / "gauge_livesum_4242.db").write_bytes(b"")
    (tmp_path / "counter_4242.db").write_bytes(b"")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    child_exit(None, type("Worker", (), {"pid": 4242})())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter_4242.db"]  # counts stay: they add up


def test_an_apps_receivers_hear_its_calls_and_not_another_apps() -> None:
    # A call no receiver of its own app hears runs unobserved (no signal is sent for it), even
    # while another app in the process has receivers; the app that has them still hears its calls.
    heard, other = make_app(), make_app()
    got: list[tuple[str, Any]] = []

    def on_called(sender: Any, **fields: Any) -> None:
        got.append(("called", sender))

    def on_succeeded(sender: Any, **fields: Any) -> None:
        got.append(("succeeded", sender))

    with signals.tool_called.connected_to(on_called, heard), signals.tool_succeeded.connected_to(on_succeeded, heard):
        for dialect in ("opal", "explorer", "mcp"):
            assert call(other, dialect, "echo", {"text": "hi"}).status_code == 200
        assert got == []
        for dialect in ("opal", "explorer", "mcp"):
            assert call(heard, dialect, "echo", {"text": "hi"}).status_code == 200
    assert got == [("called", heard), ("succeeded", heard)] * 3
