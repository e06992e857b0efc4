"""Safe by default under a real gunicorn: chunked bodies over the limit, slow tools that cannot
starve discovery, sync deadlines that keep the slot until the tool really ends."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from .conftest import free_port
from .test_deploy import ROOT, stop, wait_until_up

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path):
    marker = tmp_path / "ran.txt"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread", "--threads", "6",
         "--bind", f"127.0.0.1:{port}", f"tests.apps.safety_app:create_app(limit=2, marker={str(marker)!r})"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/oxp/health", proc)
        yield base, marker
    finally:
        stop(proc)


def chunked_post(base: str, path: str, body: bytes) -> tuple[int, bytes]:
    """POST ``body`` with Transfer-Encoding: chunked (no Content-Length) over a raw socket."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 256]), body[i:i + 256]) for i in range(0, len(body), 256))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + chunks + b"0\r\n\r\n")
        data = b""
        while True:
            try:
                part = sock.recv(65536)
            except ConnectionResetError:
                break
            if not part:
                break
            data += part
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize("path, wrap", [
    ("/opal/tools/touch", lambda note: {"parameters": {"note": note}}),
    ("/api/v1/tools/execute", lambda note: {"tool_name": "touch", "arguments": {"note": note}}),
    ("/explorer/tools/touch/call", lambda note: {"note": note}),
    ("/oxp/tools/call", lambda note: {"request": {"tool_id": "Safety.touch", "input": {"note": note}}}),
    ("/mcp", lambda note: {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "touch", "arguments": {"note": note}}}),
])
def test_chunked_body_over_the_limit_is_413_and_runs_nothing(server, path, wrap) -> None:
    import json

    base, marker = server
    status, _ = chunked_post(base, path, json.dumps(wrap("x" * 600)).encode())
    assert status == 200 and marker.read_text() == "touch 600\n"  # under the 1024-byte limit: runs
    status, body = chunked_post(base, path, json.dumps(wrap("y" * 5000)).encode())
    assert status == 413, body
    assert marker.read_text() == "touch 600\n"  # the tool did not run on a truncated body


def test_slow_tools_never_starve_discovery(server) -> None:
    base, _ = server
    call = {"parameters": {"seconds": 4}}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        running = [pool.submit(requests.post, f"{base}/opal/tools/slow", json=call, timeout=30) for _ in range(2)]
        time.sleep(0.8)  # both slots are taken now
        busy = requests.post(f"{base}/opal/tools/slow", json=call, timeout=5)
        assert busy.status_code == 503
        assert busy.headers["Retry-After"] == "2"
        assert busy.json()["can_retry"] is True and busy.json()["retry_after_ms"] == 2000
        oxp = requests.post(f"{base}/oxp/tools/call", timeout=5,
                            json={"request": {"tool_id": "Safety.slow", "input": {"seconds": 1}}})
        assert oxp.status_code == 503 and oxp.json()["can_retry"] is True
        mcp = requests.post(f"{base}/mcp", timeout=5, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                           "params": {"name": "slow", "arguments": {"seconds": 1}}})
        assert mcp.status_code == 200 and mcp.json()["result"]["isError"] is True
        assert mcp.headers["Retry-After"] == "2"
        # Discovery and health still have threads: they answer while the tools run.
        for path in ("/opal/discovery", "/oxp/health", "/api/v1/tools", "/explorer/tools"):
            assert requests.get(base + path, timeout=2).status_code == 200
        assert all(f.result().status_code == 200 for f in running)
    assert requests.post(f"{base}/opal/tools/slow", json={"parameters": {"seconds": 0}}, timeout=5).status_code == 200


def test_a_sync_tool_past_its_deadline_is_answered_with_what_it_did(server) -> None:
    """A sync tool cannot be stopped, so its caller is never told it failed while it goes on: the
    call waits for it, and the answer is its outcome (its work is done when the answer comes)."""
    base, marker = server
    r = requests.post(f"{base}/opal/tools/overrun", json={"parameters": {"seconds": 2}}, timeout=10)
    assert (r.status_code, r.json()) == (200, "late")
    assert Path(marker).read_text().startswith("overrun finished")
    answers = [requests.post(f"{base}/opal/tools/slow", json={"parameters": {"seconds": 0}}, timeout=5).status_code
               for _ in range(2)]
    assert answers == [200, 200]
