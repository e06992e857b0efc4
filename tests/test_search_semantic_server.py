"""Tool search by meaning under a real gunicorn with ``--preload`` and two workers: the index is
built, and its tools' embedding begun, in the master before the fork (tests/apps/semantic_app.py);
each worker has none of the master's threads, so it embeds what was left itself, and a search
through MCP's ``search_tools`` over HTTP is ranked by meaning in every worker once it has."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
import requests

from flask_tooldiscovery.search.index import SearchIndex

from .loopback import free_port
from .test_deploy import ROOT, stop, wait_until_up
from .test_search_index import CATALOGUE, catalogue
from .test_search_semantic import OTHER_WORDS

pytestmark = pytest.mark.slow

#: How long the workers may take to embed GitHub's 1,223 tools (about 5 s of CPU each, three
#: processes at it on a shared 2-core machine).
EMBEDDED_WITHIN = 300


def search_tools(base: str, query: str) -> tuple[str, list[str]]:
    """MCP ``search_tools`` over HTTP on a new connection: the worker that answered, the names found."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_tools", "arguments": {"query": query, "limit": 5}}}
    answer = requests.post(f"{base}/mcp", json=body, timeout=30,
                           headers={"Accept": "application/json, text/event-stream", "Connection": "close"})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    assert not result.get("isError"), result
    return answer.headers["X-Worker"], [tool["name"] for tool in result["structuredContent"]["tools"]]


def test_each_worker_forked_after_the_index_was_built_ranks_by_meaning_once_it_has_embedded_the_tools() -> None:
    query, expected = OTHER_WORDS[0]
    words_only = [hit.name for hit in SearchIndex.build(catalogue()).search(query, 5)]
    assert expected not in words_only
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--preload", "--workers", "2", "--worker-class", "gthread",
         "--threads", "2", "--bind", f"127.0.0.1:{port}", "tests.apps.semantic_app:create_app()"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "TOOLDISCOVERY_GITHUB_TOOLS": str(CATALOGUE)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    answers: dict[str, list[list[str]]] = {}
    try:
        wait_until_up(base + "/explorer/tools", proc, timeout=120)
        deadline = time.monotonic() + EMBEDDED_WITHIN
        while time.monotonic() < deadline:
            worker, names = search_tools(base, query)
            answers.setdefault(worker, []).append(names)
            by_meaning = {w for w, each in answers.items() if any(expected in names for names in each)}
            if len(answers) == 2 and by_meaning == set(answers):
                break
            time.sleep(0.2)
    finally:
        stop(proc)
        with contextlib.suppress(ProcessLookupError):  # a worker stuck past its master's end (a failing run)
            os.killpg(proc.pid, signal.SIGKILL)
    assert str(proc.pid) not in answers  # the workers answered, not the master
    assert len(answers) == 2, list(answers)
    for worker, each in answers.items():
        assert expected in each[-1], (worker, each[-1])  # ranked by meaning once embedded
        assert each[-1][0] == words_only[0]  # the tool the words name best stays first
        assert all(names in (words_only, each[-1]) for names in each), each  # lexical until then
