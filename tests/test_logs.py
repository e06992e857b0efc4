"""What an operator sees in the logs: one start-up warning per app (none for read-only commands),
call lines on request (text or JSON lines), refusals at WARNING."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from .conftest import free_port

APP = textwrap.dedent('''
    import os
    from flask import Flask
    from flask_tooldiscovery import ToolDiscovery

    discovery = ToolDiscovery()

    @discovery.tool
    def add(a: float, b: float) -> float:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    app = Flask(__name__)
    app.config.update({k: v for k, v in os.environ.items() if k.startswith("TOOLDISCOVERY_")})
    discovery.init_app(app)
''')


def start_warnings(caplog, **config) -> list[str]:
    app = Flask("prod")
    app.config.update(config)
    with caplog.at_level(logging.WARNING, logger="flask_tooldiscovery"):
        ToolDiscovery().init_app(app)
    return [r.getMessage() for r in caplog.records if r.name == "flask_tooldiscovery"]


def test_one_warning_per_start_naming_every_open_dialect(caplog) -> None:
    lines = start_warnings(caplog, TOOLDISCOVERY_MCP_BEARER_TOKEN="t", TOOLDISCOVERY_DIALECTS="opal,oxp,tdp,mcp",
                           TOOLDISCOVERY_OPEN_DIALECTS="opal,oxp,tdp")
    assert len(lines) == 1
    for name in ("opal", "oxp", "tdp"):
        assert f"{name} " in lines[0] or f"{name}'s" in lines[0]
    assert "mcp runs tools" not in lines[0]


def test_the_warning_can_be_silenced(caplog) -> None:
    assert start_warnings(caplog, TOOLDISCOVERY_WARN_UNAUTHENTICATED="false") == []


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    (tmp_path / "quick.py").write_text(APP)
    return tmp_path


def flask_cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    root = str(Path(__file__).resolve().parent.parent)
    return subprocess.run([sys.executable, "-m", "flask", "--app", "quick", *args], cwd=folder, text=True,
                          capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": root, **env})


@pytest.mark.parametrize("command", [("tools", "list"), ("routes",)])
def test_read_only_commands_do_not_warn(quick, command) -> None:
    result = flask_cli(quick, *command, TOOLDISCOVERY_ALLOW_EXECUTE="true")
    assert result.returncode == 0 and ("add@1.0.0" in result.stdout or "/opal/tools" in result.stdout)
    assert "without authentication" not in result.stderr


@pytest.mark.slow
def test_flask_run_warns(quick) -> None:
    """``flask run`` serves: the warning is logged once the app is loaded (read from click's
    context, whatever the command line looks like)."""
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.Popen([sys.executable, "-m", "flask", "--app", "quick", "run", "--port", str(free_port())],
                            cwd=quick, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": root, "TOOLDISCOVERY_ALLOW_EXECUTE": "true"})
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen.append(line)
            if not line or "without authentication" in line or "Running on" in line:
                break
    finally:
        proc.terminate()
        proc.wait(10)
    assert any("runs tools without authentication" in line for line in seen), seen


@pytest.mark.parametrize("mode", ["text", "json"])
def test_call_log_shown_on_request(quick, mode) -> None:
    script = ("from quick import app\n"
              "c = app.test_client()\n"
              "c.post('/opal/tools/add', json={'a': 1, 'b': 2}, headers={'X-Trace-Id': 'trace-77'})\n")
    root = str(Path(__file__).resolve().parent.parent)
    result = subprocess.run([sys.executable, "-c", script], cwd=quick, text=True, capture_output=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": root, "TOOLDISCOVERY_CALL_LOG": mode})
    calls = [line for line in result.stderr.splitlines() if "tool call" in line]
    assert len(calls) == 1, result.stderr
    if mode == "json":
        record = json.loads(calls[0])
        assert record["level"] == "INFO" and record["logger"] == "flask_tooldiscovery"
        assert (record["tool"], record["dialect"], record["outcome"], record["trace_id"]) == (
            "add", "opal", "success", "trace-77")
        assert record["call_id"] and record["duration_ms"] >= 0
    else:
        assert "INFO flask_tooldiscovery: tool call tool=add" in calls[0] and "trace_id=trace-77" in calls[0]


def test_without_the_setting_call_lines_stay_quiet(quick) -> None:
    script = "from quick import app\napp.test_client().post('/opal/tools/add', json={'a': 1, 'b': 2})\n"
    root = str(Path(__file__).resolve().parent.parent)
    result = subprocess.run([sys.executable, "-c", script], cwd=quick, text=True, capture_output=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": root})
    assert "tool call" not in result.stderr


def test_refusals_are_warnings(caplog) -> None:
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="one")
    app = Flask("x")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_OPAL_BEARER_TOKEN="secret-tok")
    d.init_app(app)
    with caplog.at_level(logging.INFO, logger="flask_tooldiscovery"):
        app.test_client().post("/opal/tools/one", json={}, headers={"Authorization": "Bearer guess"})
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    assert refused and refused[0].levelno == logging.WARNING
    assert "secret-tok" not in refused[0].getMessage() and "guess" not in refused[0].getMessage()
