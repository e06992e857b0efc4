"""A page on another origin, in real Chromium, cannot make any dialect run a tool: not by a
"simple" fetch that skips the CORS preflight, not by a text/plain form, not by a JSON fetch.
The same page, once its origin is allowed, can: so the test can tell the two apart."""

from __future__ import annotations

import json

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery

from ..conftest import live_server

ATTACKS = {
    "opal": ("/opal/tools/touch", {"parameters": {"note": "opal"}}),
    "oxp": ("/oxp/tools/call", {"request": {"tool_id": "Victim.touch", "input": {"note": "oxp"}}}),
    "tdp": ("/api/v1/tools/execute", {"tool_name": "touch", "arguments": {"note": "tdp"}}),
    "explorer": ("/explorer/tools/touch/call", {"note": "explorer"}),
    "mcp": ("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "touch", "arguments": {"note": "mcp"}}}),
}

pytestmark = pytest.mark.browser


def victim(ran: list[str], **config: object) -> Flask:
    d = ToolDiscovery()

    @d.tool
    def touch(note: str = "") -> str:
        """Record a side effect.

        Args:
            note: Which dialect ran it.
        """
        ran.append(note)
        return "done"

    app = Flask("victim")
    app.config.update(TOOLDISCOVERY_ALLOW_EXECUTE=True, **config)
    d.init_app(app)
    return app


def attacker(target: str) -> Flask:
    app = Flask("attacker")
    forms = "".join(
        f'<form id="form-{name}" method="post" enctype="text/plain" action="{target}{path}" target="sink-{name}">'
        f'<input name=\'{json.dumps(body)[:-1]}, "pad": "\' value=\'x"}}\'></form>'
        f'<iframe name="sink-{name}"></iframe>'
        for name, (path, body) in ATTACKS.items())

    @app.get("/")
    def page() -> str:
        return f"<!doctype html><title>evil</title><body>{forms}</body>"

    return app


FETCHES = """async ([target, attacks]) => {
  const out = {};
  for (const [name, [path, body]] of Object.entries(attacks)) {
    const text = JSON.stringify(body);
    const simple = await fetch(target + path, {method: "POST", mode: "no-cors", body: text,
                                               headers: {"Content-Type": "text/plain"}})
      .then(() => "sent", e => "error");
    let json;
    try {
      const r = await fetch(target + path, {method: "POST", body: text, headers: {"Content-Type": "application/json"}});
      json = r.status;
    } catch (e) { json = "blocked"; }
    out[name] = {simple, json};
  }
  return out;
}"""


def test_another_origin_runs_nothing_until_allowed(page) -> None:
    ran: list[str] = []
    with live_server(victim(ran)) as target, live_server(attacker(target)) as evil:
        page.goto(evil + "/")
        results = page.evaluate(FETCHES, [target, ATTACKS])
        for name in ATTACKS:
            page.evaluate(f"document.getElementById('form-{name}').submit()")
        page.wait_for_timeout(1500)
        assert ran == [], (ran, results)
        assert all(r["json"] == "blocked" for r in results.values()), results  # no CORS grant

    allowed: list[str] = []
    with live_server(attacker("http://127.0.0.1:9")) as evil:
        with live_server(victim(allowed, TOOLDISCOVERY_ALLOWED_ORIGINS=[evil])) as target:
            page.goto(evil + "/")
            results = page.evaluate(FETCHES, [target, ATTACKS])
    assert all(r["json"] == 200 for r in results.values()), results
    assert sorted(allowed) == sorted(ATTACKS)  # the JSON fetches ran; the simple requests still did not
