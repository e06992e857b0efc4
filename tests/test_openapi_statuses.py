"""The served OpenAPI document declares every status a call route answers, over real HTTP: each
refusal the core can make (credentials, origin, method, body size and type, host, approval, rate
limit, busy call slots) is provoked on a live server, for every dialect the document can describe,
and the answer must be one its operation declares, with the declared error body and headers
(``Retry-After`` on 429 and 503). What the document declares follows the settings and the tools
(no 401 without credentials, no 429 without a rate limit, no 428 without a tool needing approval);
a body is optional where no argument is required, and an empty ``POST`` runs such a tool."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from flask import Flask
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from flask_tooldiscovery import ToolDiscovery

from .conformance.drivers import DRIVERS
from .conftest import live_server

DIALECTS = ("utcp", "opal", "oxp", "tdp", "explorer", "mcp")
#: Dialects that answer the refusals met while running a call inside their protocol (a 200).
IN_BAND = {"mcp"}
TOKEN = "statuses-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Hold:
    """``hold`` runs until released: it keeps the one call slot taken."""

    started: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def build(dialect: str, hold: Hold | None = None, **config: Any) -> Flask:
    """An app whose OpenAPI document describes ``dialect``; ``config`` on top of none at all."""
    discovery = ToolDiscovery()

    @discovery.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @discovery.tool
    def ping(note: str = "") -> str:
        """Answer pong."""
        return "pong" + note

    @discovery.tool(requires_approval=True)
    def wipe() -> str:
        """Wipe everything (after a person's yes)."""
        return "wiped"

    @discovery.tool
    def held() -> str:
        """Keep a call slot until released."""
        if hold is not None:
            hold.started.set()
            hold.release.wait(10)
        return "released"

    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="statuses", TOOLDISCOVERY_ALLOW_EXECUTE=True,
                      TOOLDISCOVERY_WARN_UNAUTHENTICATED=False, TOOLDISCOVERY_OPENAPI_DIALECT=dialect, **config)
    discovery.init_app(app)
    return app


def guarded(dialect: str, hold: Hold) -> Flask:
    """Credentials, a rate limit on ``add``, one call slot, a small body limit."""
    return build(dialect, hold, TOOLDISCOVERY_BEARER_TOKEN=TOKEN, TOOLDISCOVERY_MAX_CONCURRENT_CALLS=1,
                 TOOLDISCOVERY_RATELIMIT_TOOLS={"add": "1/minute"}, TOOLDISCOVERY_MAX_CONTENT_LENGTH=4096,
                 TOOLDISCOVERY_BUSY_RETRY_AFTER=3)


def call(app: Flask, dialect: str, tool: str, arguments: Any) -> tuple[str, Any]:
    """The path and JSON body a client of ``dialect`` sends to call ``tool``."""
    pipe = ToolDiscovery.pipelines(app)[dialect]
    wire = DRIVERS[dialect].wire.call_tool(pipe.prefix, tool, arguments, ToolDiscovery.state(app).settings)
    return wire.path, wire.json


def operation(document: dict[str, Any], path: str) -> dict[str, Any]:
    operation: dict[str, Any] = document["paths"][path]["post"]
    return operation


def assert_declared(document: dict[str, Any], path: str, response: requests.Response) -> None:
    """``response`` is one the operation at ``path`` declares: its status, its required headers,
    its JSON body valid against the declared schema."""
    responses = operation(document, path)["responses"]
    declared = responses.get(str(response.status_code))
    assert declared is not None, (f"{path} answered {response.status_code} ({response.text[:200]}), which its "
                                  f"operation does not declare: {sorted(responses)}")
    for name, header in declared.get("headers", {}).items():
        assert not header.get("required") or name in response.headers, f"{response.status_code} without {name}"
    content = declared.get("content", {}).get("application/json")
    if content is not None:
        assert response.headers["Content-Type"].startswith("application/json"), response.headers["Content-Type"]
        errors = [e.message for e in Draft202012Validator(content["schema"]).iter_errors(response.json())]
        assert not errors, f"{response.status_code} body {response.text[:300]} against {content['schema']}: {errors}"


@contextlib.contextmanager
def serving(app: Flask) -> Iterator[tuple[str, dict[str, Any]]]:
    """The live server's base URL and the document it serves."""
    with live_server(app) as base:
        document = requests.get(f"{base}/tools/openapi.json", timeout=10).json()
        yield base, document


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_refusal_of_the_core_is_a_status_the_document_declares(dialect: str) -> None:
    hold = Hold()
    app = guarded(dialect, hold)
    with serving(app) as (base, document):
        path, body = call(app, dialect, "add", {"a": 1, "b": 2})
        url, seen = base + path, set()

        def post(expected: int, **kwargs: Any) -> requests.Response:
            kwargs.setdefault("headers", AUTH)
            response = requests.post(url, timeout=10, **kwargs)
            assert response.status_code == expected, (expected, response.status_code, response.text[:300])
            assert_declared(document, path, response)
            seen.add(expected)
            return response

        post(401, json=body, headers={})
        assert "WWW-Authenticate" in post(401, json=body, headers={"Authorization": "Bearer wrong"}).headers
        post(403, json=body, headers={**AUTH, "Origin": "https://elsewhere.example"})
        post(413, data=json.dumps({"pad": "x" * 5000}), headers={**AUTH, "Content-Type": "application/json"})
        post(415, data="a=1", headers={**AUTH, "Content-Type": "application/x-www-form-urlencoded"})
        post(421, json=body, headers={**AUTH, "Host": "elsewhere.example"})
        post(400, data="{not json", headers={**AUTH, "Content-Type": "application/json"})
        other = requests.put(url, json=body, headers=AUTH, timeout=10)
        assert other.status_code == 405 and "POST" in other.headers["Allow"]
        assert_declared(document, path, other)  # the route's 405, declared beside its one operation

        in_band = 200 if dialect in IN_BAND else None
        post(200, json=body)
        limited = post(in_band or 429, json=body)  # add: 1 per minute
        assert int(limited.headers["Retry-After"]) >= 1

        wipe_path, wipe_body = call(app, dialect, "wipe", {})
        if wipe_path != path:  # one operation per tool: the approval is declared on the tool's own
            path, url = wipe_path, base + wipe_path
        post(in_band or 428, json=wipe_body)

        held_path, held_body = call(app, dialect, "held", {})
        holder = threading.Thread(target=lambda: requests.post(base + held_path, json=held_body, headers=AUTH,
                                                                timeout=20))
        holder.start()
        try:
            assert hold.started.wait(10), "the held call never started"
            path, ping_body = call(app, dialect, "ping", {})
            url = base + path
            busy = post(in_band or 503, json=ping_body)
            assert busy.headers["Retry-After"] == "3"
        finally:
            hold.release.set()
            holder.join(20)
    assert seen >= {400, 401, 403, 413, 415, 421}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_what_the_document_declares_follows_the_settings_and_the_tools(dialect: str) -> None:
    open_app, guarded_app = build(dialect), guarded(dialect, Hold())
    open_doc = open_app.test_client().get("/tools/openapi.json").get_json()
    guarded_doc = guarded_app.test_client().get("/tools/openapi.json").get_json()
    validate(open_doc)
    validate(guarded_doc)
    add_path, _ = call(open_app, dialect, "add", {})
    ping_path, _ = call(open_app, dialect, "ping", {})
    wipe_path, _ = call(open_app, dialect, "wipe", {})
    statuses = {name: set(operation(doc, add_path)["responses"]) for name, doc in
                (("open", open_doc), ("guarded", guarded_doc))}
    assert "401" not in statuses["open"] and "401" in statuses["guarded"]
    assert {"403", "405", "413", "415", "421"} <= statuses["open"]
    if dialect in IN_BAND:  # refused in a JSON-RPC answer, not with an HTTP status
        assert not {"428", "429", "503"} & (statuses["open"] | statuses["guarded"])
        return
    assert "429" not in statuses["open"] and "429" in statuses["guarded"]
    assert operation(guarded_doc, add_path)["responses"]["429"]["headers"]["Retry-After"]["required"] is True
    assert "Retry-After" in operation(open_doc, add_path)["responses"]["503"]["headers"]
    if ping_path != wipe_path:  # one operation per tool: only the tool that needs approval declares 428
        assert "428" not in operation(open_doc, ping_path)["responses"]
    assert "428" in operation(open_doc, wipe_path)["responses"]


@pytest.mark.parametrize("dialect", ["utcp", "opal", "explorer"])
def test_the_body_is_optional_where_no_argument_is_required_and_an_empty_post_runs_the_tool(dialect: str) -> None:
    app = build(dialect)
    client = app.test_client()
    document = client.get("/tools/openapi.json").get_json()
    ping_path, _ = call(app, dialect, "ping", {})
    add_path, _ = call(app, dialect, "add", {})
    assert operation(document, ping_path)["requestBody"]["required"] is False
    assert operation(document, add_path)["requestBody"]["required"] is True
    response = client.post(ping_path)  # no body, no content type
    assert response.status_code == 200 and "pong" in response.get_data(as_text=True)
    assert client.post(add_path).status_code == 400


def test_an_oxp_error_quotes_every_key_it_names_an_empty_one_too() -> None:
    client = build("oxp").test_client()
    call_request = {"tool_id": "Tools.ping", "input": {}}
    stray = client.post("/oxp/tools/call", json={"request": call_request, "": 1, "extra": 2})
    assert stray.status_code == 400
    assert stray.get_json()["message"] == "Unexpected key(s) beside 'request': '', 'extra'."
    inside = client.post("/oxp/tools/call", json={"request": {**call_request, "": 1}})
    assert inside.status_code == 400
    assert inside.get_json()["message"] == "Malformed call request: '': Unknown field."
