"""Handshake-era MCP clients are asked only what they declared at ``initialize``: the session id
that answer gives names it (``elicitation`` in form mode, ``sampling``, ``roots``), so a stateless
server never sends a request its client cannot answer. A request without such a session id is
asked as its protocol version allows (a client that cannot answer refuses)."""

from __future__ import annotations

import json
import re
from typing import Any

from flask.testing import FlaskClient

from .apps.asking_app import create_app

SSE = "application/json, text/event-stream"


def session_of(client: FlaskClient, capabilities: dict[str, Any], version: str = "2025-11-25") -> str:
    r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}},
        headers={"Accept": SSE, "MCP-Protocol-Version": version})
    assert r.status_code == 200, r.text
    session = r.headers["Mcp-Session-Id"]
    assert re.fullmatch(r"[\x21-\x7e]{16,128}", session), session  # the transport's visible-ASCII rule
    return session


def call(client: FlaskClient, name: str, session: str | None, version: str = "2025-11-25") -> Any:
    headers = {"Accept": SSE, "MCP-Protocol-Version": version, **({"Mcp-Session-Id": session} if session else {})}
    return client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                     "params": {"name": name, "arguments": {}}}, headers=headers)


def abilities(client: FlaskClient, session: str | None, version: str = "2025-11-25") -> list[str]:
    r = call(client, "abilities", session, version)
    assert r.mimetype == "application/json", r.text  # it asks nothing: not streamed
    return list(r.get_json()["result"]["structuredContent"]["result"])


def test_a_call_can_ask_only_what_its_session_declared() -> None:
    c = create_app(secret="s3cret").test_client()
    everything = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}
    assert abilities(c, session_of(c, everything)) == ["elicitation", "sampling", "roots"]
    assert abilities(c, session_of(c, {"sampling": {}})) == ["sampling"]
    assert abilities(c, session_of(c, {"elicitation": {"form": {}}, "roots": {}})) == ["elicitation", "roots"]
    assert abilities(c, session_of(c, {})) == []
    # 2025-11-25: elicitation declared for URL mode only cannot answer a form
    assert abilities(c, session_of(c, {"elicitation": {"url": {}}, "sampling": {}})) == ["sampling"]
    # what the version has still bounds it: no elicitation before 2025-06-18
    old = session_of(c, everything, "2025-03-26")
    assert abilities(c, old, "2025-03-26") == ["sampling", "roots"]


def test_without_a_declaring_session_the_version_decides() -> None:
    c = create_app(secret="s3cret").test_client()
    assert abilities(c, None) == ["elicitation", "sampling", "roots"]
    assert abilities(c, "an-id-some-other-server-gave-1234") == ["elicitation", "sampling", "roots"]


def test_an_undeclared_request_is_never_sent() -> None:
    """The tool's sampling request is not put on a stream: the tool's own fallback answers at once."""
    c = create_app(secret="s3cret").test_client()
    r = call(c, "motto_or_default", session_of(c, {"elicitation": {}}))
    assert r.mimetype == "application/json", r.text
    assert r.get_json()["result"]["content"][0]["text"] == "Carpe diem (the caller's model could not be asked)."
    # a tool that does not catch it ends with an error naming what was not declared, asked nothing
    r = call(c, "plan_trip", session_of(c, {"sampling": {}}))  # streamed: it logs before it asks
    events = [json.loads(line[len("data: "):]) for line in r.get_data(as_text=True).splitlines()
              if line.startswith("data: ")]
    assert [e.get("method") for e in events] == ["notifications/message", None], events  # a log line, the result
    result = events[-1]["result"]
    assert result["isError"] is True and "elicitation" in result["content"][0]["text"]
    assert "did not declare" in result["content"][0]["text"]


def test_an_approval_is_not_asked_of_a_client_without_elicitation() -> None:
    c = create_app(secret="s3cret").test_client()
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "transfer", "arguments": {"amount": 5}}},
               headers={"Accept": SSE, "MCP-Protocol-Version": "2025-11-25",
                        "Mcp-Session-Id": session_of(c, {"sampling": {}})})
    assert r.mimetype == "application/json", r.text  # no stream, no elicitation/create
    result = r.get_json()["result"]
    assert result["isError"] is True and result["_meta"]["flask-tooldiscovery/approval"]["approval_state"]
