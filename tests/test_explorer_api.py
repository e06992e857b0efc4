"""Dialect explorer, JSON API: F2 listing and detail, F3 call with its order of checks, F4 auth
hook (sync and async context managers), F7 validation."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest
from pydantic import BaseModel

from flask_tooldiscovery import ToolContext, ToolDiscovery, ToolError
from flask_tooldiscovery.extension import STATE_KEY


@pytest.fixture
def discovery() -> ToolDiscovery:
    d = ToolDiscovery()

    @d.tool(annotations={"readOnlyHint": True, "openWorldHint": True})
    async def get_weather(city: str) -> dict:
        """Fetch current weather for a city."""
        if city == "Atlantis":
            raise ToolError("Unknown city")
        return {"city": city, "temp": 20}

    @d.tool(name="files.delete_record", annotations={"destructiveHint": True})
    def delete_record(record_id: int) -> str:
        """Delete a record by ID."""
        return f"deleted {record_id}"

    @d.tool
    def listing() -> list:
        """A list."""
        return [1, 2]

    @d.tool
    def boom() -> None:
        """Crash."""
        raise RuntimeError("traceback secret")

    return d


@pytest.fixture
def app(discovery, make_app):
    return make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True)


def test_list_and_detail(app) -> None:
    c = app.test_client()
    tools = c.get("/explorer/tools").get_json()
    assert tools[0] == {"name": "get_weather", "description": "Fetch current weather for a city.",
                        "annotations": {"readOnlyHint": True, "openWorldHint": True}}
    assert "annotations" not in tools[2]  # omitted, never null
    detail = c.get("/explorer/tools/get_weather").get_json()
    assert detail["inputSchema"]["properties"] == {"city": {"type": "string"}}
    assert detail["inputSchema"]["required"] == ["city"]
    assert c.get("/explorer/tools/files.delete_record").get_json()["name"] == "files.delete_record"
    r = c.get("/explorer/tools/unknown_tool")
    assert r.status_code == 404 and r.get_json() == {"error": "Tool not found: unknown_tool"}


def test_a_prompt_that_asks_its_caller_is_refused_clearly(make_app, caplog) -> None:
    """The explorer cannot answer a prompt's questions (an MCP client can): 422 saying so, nothing logged as a bug."""
    d = ToolDiscovery()

    @d.prompt
    def welcome(ctx: ToolContext) -> str:
        """Welcome whoever answers."""
        return f"Welcome {ctx.elicit('Who is joining?').action}."

    c = make_app(d, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True).test_client()
    with caplog.at_level(logging.ERROR):
        got = c.post("/explorer/prompts/welcome/get", json={})
    assert got.status_code == 422
    assert got.get_json()["error"].startswith("This prompt asks its caller, which the explorer cannot answer: ")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_tool_objects_of_every_shape_and_providers(make_app) -> None:
    class Ann(BaseModel):
        readOnlyHint: bool | None = None

    class PTool(BaseModel):
        name: str
        description: str
        inputSchema: dict
        annotations: Ann | None = None

    class ObjTool:
        name = "obj"
        description = "object"
        inputSchema = {"type": "object"}
        annotations = None

    calls = []

    async def provider():
        calls.append(1)
        return [{"name": "dict", "description": "dict", "inputSchema": {"type": "object"}},
                ObjTool(), PTool(name="pyd", description="p", inputSchema={"type": "object"},
                                 annotations=Ann(readOnlyHint=True)),
                PTool(name="pyd_none", description="p", inputSchema={"type": "object"})]

    c = make_app(ToolDiscovery(tools=provider), TOOLDISCOVERY_DIALECTS=["explorer"]).test_client()
    listed = c.get("/explorer/tools").get_json()
    assert listed == [{"name": "dict", "description": "dict"}, {"name": "obj", "description": "object"},
                      {"name": "pyd", "description": "p", "annotations": {"readOnlyHint": True}},
                      {"name": "pyd_none", "description": "p"}]
    c.get("/explorer/tools")
    assert len(calls) == 2  # invoked on every request


def test_call_success_and_shapes(app) -> None:
    c = app.test_client()
    r = c.post("/explorer/tools/get_weather/call", json={"city": "Oslo"})
    body = r.get_json()
    assert r.status_code == 200
    assert body["isError"] is False
    assert body["content"] == [{"type": "text", "text": '{"city": "Oslo", "temp": 20}'}]
    assert body["structuredContent"] == {"city": "Oslo", "temp": 20}
    assert body["_meta"]["_trace_id"]
    r = c.post("/explorer/tools/get_weather/call", json={"city": "Oslo"}, headers={"X-Trace-Id": "t-1"})
    assert r.get_json()["_meta"] == {"_trace_id": "t-1"}
    r = c.post("/explorer/tools/files.delete_record/call", json={"record_id": 4})
    assert r.get_json()["content"][0]["text"] == "deleted 4" and "structuredContent" not in r.get_json()
    assert c.post("/explorer/tools/listing/call", json={}).get_json()["structuredContent"] == [1, 2]


def test_call_failures(app) -> None:
    c = app.test_client()
    r = c.post("/explorer/tools/get_weather/call", json={"city": "Atlantis"})
    assert r.status_code == 500 and r.get_json()["isError"] is True
    assert r.get_json()["content"][0]["text"] == "Unknown city"
    r = c.post("/explorer/tools/boom/call", json={})
    assert r.status_code == 500 and "secret" not in r.get_data(as_text=True)
    r = c.post("/explorer/tools/get_weather/call", data="{bad", content_type="application/json")
    assert r.status_code == 400 and r.get_json()["error"].startswith("Invalid JSON")
    r = c.post("/explorer/tools/get_weather/call", json={"city": 3})
    assert r.status_code == 400 and r.get_json()["isError"] is True
    assert r.get_json()["errors"] == [{"path": "/city", "message": "3 is not of type 'string'", "keyword": "type"}]


def test_execution_disabled_by_default_and_checked_first(discovery, make_app) -> None:
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"]).test_client()
    for name in ("get_weather", "no_such_tool"):
        r = c.post(f"/explorer/tools/{name}/call", json={"city": "Oslo"})
        assert r.status_code == 403 and r.get_json() == {"error": "Tool execution is disabled."}
    # Validation is never gated.
    assert c.post("/explorer/tools/get_weather/validate", json={"city": "x"}).get_json() == {"valid": True}


def test_unknown_tool_before_auth(app, discovery) -> None:
    @discovery.auth_hook
    def deny(request):
        raise PermissionError("no")

    r = app.test_client().post("/explorer/tools/nope/call", json={})
    assert r.status_code == 404


@pytest.mark.parametrize("body", [[1], "Oslo", 3, True])
def test_arguments_that_are_not_an_object_are_a_400_saying_so(app, body) -> None:
    r = app.test_client().post("/explorer/tools/get_weather/call", json=body)
    assert r.status_code == 400 and r.get_json()["isError"] is True
    assert r.get_json()["content"][0]["text"] == "Invalid arguments: Arguments must be a JSON object."


def test_an_unknown_tool_is_a_404_naming_it(app) -> None:
    r = app.test_client().post("/explorer/tools/nope/call", json={"city": "Oslo"})
    assert r.status_code == 404 and r.get_json() == {"error": "Tool not found: nope"}


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_auth_hook_guards_call_only(discovery, make_app, caplog, flavour) -> None:
    entered = []

    if flavour == "sync":
        @contextlib.contextmanager
        def guard(request):
            if request.headers.get("Authorization") != "Bearer good":
                raise PermissionError("bad token from " + str(request.remote_addr))
            entered.append("in")
            yield
            entered.append("out")
    else:
        @contextlib.asynccontextmanager
        async def guard(request):
            await asyncio.sleep(0)
            if request.headers.get("Authorization") != "Bearer good":
                raise PermissionError("bad token")
            entered.append("in")
            yield
            entered.append("out")

    discovery.auth_hook(guard)
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True).test_client()
    with caplog.at_level(logging.INFO):
        r = c.post("/explorer/tools/get_weather/call", json={"city": "Oslo"})
    assert r.status_code == 401 and r.get_json() == {"error": "Unauthorized"}
    assert r.headers["WWW-Authenticate"] == 'Bearer realm="explorer"'
    assert "bad token" not in r.get_data(as_text=True)
    # The refusal is logged with the hook's exception type, never its text (it may hold a secret).
    refusals = [rec.getMessage() for rec in caplog.records if "refused" in rec.getMessage()]
    assert refusals and "PermissionError" in refusals[0] and "bad token" not in refusals[0]
    ok = c.post("/explorer/tools/get_weather/call", json={"city": "Oslo"},
                headers={"Authorization": "Bearer good"})
    assert ok.status_code == 200 and entered == ["in", "out"]
    assert c.get("/explorer/tools").status_code == 200
    assert c.get("/explorer/").status_code == 200
    assert c.post("/explorer/tools/get_weather/validate", json={}).status_code == 200


def test_validate(app, make_app) -> None:
    c = app.test_client()
    assert c.post("/explorer/tools/get_weather/validate", json={"city": "Oslo"}).get_json() == {"valid": True}
    r = c.post("/explorer/tools/get_weather/validate", json={})
    assert r.status_code == 200
    assert r.get_json() == {"valid": False, "errors": [
        {"path": "/city", "message": "Missing required parameter.", "keyword": "required"}]}
    r = c.post("/explorer/tools/get_weather/validate", data="{nope", content_type="application/json")
    assert r.status_code == 400
    doc = r.get_json()
    assert doc["valid"] is False and doc["errors"][0]["keyword"] == "format"
    assert doc["errors"][0]["path"] == "" and doc["errors"][0]["message"].startswith("Invalid JSON")
    assert c.post("/explorer/tools/nope/validate", json={}).status_code == 404

    broken = ToolDiscovery(tools=[
        {"name": "bad_schema", "description": "", "inputSchema": {"type": "object", "properties": {"x": {"type": 12}}}},
        {"name": "no_schema", "description": ""}])
    bc = make_app(broken, TOOLDISCOVERY_DIALECTS=["explorer"]).test_client()
    r = bc.post("/explorer/tools/bad_schema/validate", json={"x": 1})
    assert r.status_code == 200 and r.get_json()["valid"] is False
    assert r.get_json()["errors"][0]["keyword"] == "schema"
    assert bc.post("/explorer/tools/no_schema/validate", json={"anything": [1]}).get_json() == {"valid": True}


def test_validate_honours_schema_draft(make_app) -> None:
    d = ToolDiscovery(tools=[{"name": "d4", "description": "", "inputSchema": {
        "$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
        "properties": {"n": {"type": "number", "minimum": 5, "exclusiveMinimum": True}}}}])
    c = make_app(d, TOOLDISCOVERY_DIALECTS=["explorer"]).test_client()
    assert c.post("/explorer/tools/d4/validate", json={"n": 5}).get_json()["valid"] is False
    assert c.post("/explorer/tools/d4/validate", json={"n": 6}).get_json()["valid"] is True


def test_page_escapes_title_and_injects_flag(discovery, make_app) -> None:
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"],
                   TOOLDISCOVERY_TITLE="</script><script>alert(1)</script>")
    html = app.test_client().get("/explorer/").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert '"allow_execute": false' in html
    assert "/explorer/static/tooldiscovery/explorer.js" in html
    assert app.test_client().get("/explorer/static/tooldiscovery/explorer.js").status_code == 200
    assert app.test_client().get("/explorer/static/tooldiscovery/explorer.css").status_code == 200


def test_auth_hook_as_constructor_argument(make_app) -> None:
    seen = []

    def hook(request):
        seen.append(request.path)
        if request.headers.get("X-Key") != "k":
            raise PermissionError("no key")
        return contextlib.nullcontext()

    d = ToolDiscovery(auth_hook=hook)

    @d.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    c = make_app(d, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True).test_client()
    assert c.post("/explorer/tools/ping/call", json={}).status_code == 401
    ok = c.post("/explorer/tools/ping/call", json={}, headers={"X-Key": "k"})
    assert ok.get_json()["content"][0]["text"] == "pong"
    assert seen == ["/explorer/tools/ping/call"] * 2


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_auth_hook_refuses_before_the_body_is_read(discovery, make_app, caplog, flavour) -> None:
    """F3's order: 403 (disabled) -> 404 (unknown tool) -> 401 (hook refuses) -> 400 (body)."""
    events: list[str] = []

    def allowed(request) -> bool:
        events.append("hook")
        return request.headers.get("Authorization") == "Bearer good"

    if flavour == "sync":
        @contextlib.contextmanager
        def guard(request):
            if not allowed(request):
                raise PermissionError("bad token")
            events.append("in")
            yield
            events.append("out")
    else:
        @contextlib.asynccontextmanager
        async def guard(request):
            if not allowed(request):
                raise PermissionError("bad token")
            events.append("in")
            yield
            events.append("out")

    discovery.auth_hook(guard)
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True).test_client()
    with caplog.at_level(logging.INFO):
        r = c.post("/explorer/tools/get_weather/call", data="{bad", content_type="application/json")
    assert r.status_code == 401 and r.get_json() == {"error": "Unauthorized"}
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert "bad token" not in r.get_data(as_text=True)
    refusals = [rec for rec in caplog.records if "refused" in rec.getMessage()]
    assert [rec.levelno for rec in refusals] == [logging.WARNING]
    assert "PermissionError" in refusals[0].getMessage() and "bad token" not in refusals[0].getMessage()
    assert events == ["hook"]
    # Unknown tool and disabled execution still come first: the hook is not asked.
    events.clear()
    assert c.post("/explorer/tools/nope/call", data="{bad", content_type="application/json").status_code == 404
    assert events == []
    # Admitted, the body is read inside the hook: its 400 leaves the hook's manager normally.
    good = {"Authorization": "Bearer good"}
    r = c.post("/explorer/tools/get_weather/call", data="{bad", content_type="application/json", headers=good)
    assert r.status_code == 400 and r.get_json()["error"].startswith("Invalid JSON")
    assert "WWW-Authenticate" not in r.headers
    assert events == ["hook", "in", "out"]
    events.clear()
    r = c.post("/explorer/tools/get_weather/call", json={"city": 3}, headers=good)
    assert r.status_code == 400 and r.get_json()["errors"][0]["path"] == "/city"
    r = c.post("/explorer/tools/get_weather/call", json={"city": "Oslo"}, headers=good)
    assert r.status_code == 200 and events == ["hook", "in", "out"] * 2


def test_disabled_execution_never_asks_the_hook(discovery, make_app) -> None:
    asked = []
    discovery.auth_hook(lambda request: asked.append(request.path))
    c = make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"]).test_client()
    r = c.post("/explorer/tools/get_weather/call", data="{bad", content_type="application/json")
    assert r.status_code == 403 and asked == [] and "WWW-Authenticate" not in r.headers


def test_busy_worker_answers_503_through_the_hook(discovery, make_app) -> None:
    """A core error raised inside the hook's manager (no free call slot) keeps its own status."""
    discovery.auth_hook(lambda request: contextlib.nullcontext())
    app = make_app(discovery, TOOLDISCOVERY_DIALECTS=["explorer"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                   TOOLDISCOVERY_MAX_CONCURRENT_CALLS=1)
    with app.extensions[STATE_KEY].slots.hold():
        r = app.test_client().post("/explorer/tools/get_weather/call", json={"city": "Oslo"})
    assert r.status_code == 503 and "Retry-After" in r.headers


def test_page_files_and_a_browser_reload(app) -> None:
    """The page links its script, theme script, style sheet and icon; each answers 200, and 304
    to the conditional GET a browser sends on reload."""
    c = app.test_client()
    html = c.get("/explorer/").get_data(as_text=True)
    assert '<script src="/explorer/static/tooldiscovery/theme.js"></script>' in html  # not deferred
    assert '<link rel="icon" type="image/svg+xml" href="/explorer/static/tooldiscovery/favicon.svg">' in html
    for name, mimetype in (("page.js", "text/javascript"), ("explorer.js", "text/javascript"),
                           ("prompts.js", "text/javascript"), ("theme.js", "text/javascript"),
                           ("explorer.css", "text/css"), ("favicon.svg", "image/svg+xml")):
        url = f"/explorer/static/tooldiscovery/{name}"
        with c.get(url) as r:
            assert r.status_code == 200 and r.mimetype == mimetype and r.get_data()
            etag = r.headers["ETag"]
        with c.get(url, headers={"If-None-Match": etag}) as again:
            assert again.status_code == 304, name


PROMPTS_CALLER = {"Authorization": "Bearer alice"}


def test_prompts_are_listed_got_and_completed() -> None:
    """The JSON API behind the page's prompts list (tests/browser/test_explorer_prompts.py)."""
    from .apps.prompts_app import create_app

    app = create_app(TESTING=True)
    c = app.test_client()
    listed = c.get("/explorer/prompts", headers=PROMPTS_CALLER).get_json()["prompts"]
    assert [p["name"] for p in listed] == ["code_review", "plan_trip", "greeting", "describe_chart"]
    assert listed[0]["arguments"][1] == {"name": "language", "description": "The language it is written in.",
                                         "required": False}
    admin = c.get("/explorer/prompts", headers={"Authorization": "Bearer root:admin"}).get_json()["prompts"]
    assert admin[-1]["name"] == "audit"
    got = c.post("/explorer/prompts/greeting/get", json={}, headers=PROMPTS_CALLER)
    assert got.status_code == 200 and got.get_json() == {"description": "Greet whoever asks.", "messages": [
        {"role": "user", "content": {"type": "text", "text": "Say hello to alice."}}]}
    for url, body, status in (("/explorer/prompts/plan_trip/get", {"country": "Italy"}, 400),
                              ("/explorer/prompts/plan_trip/get", ["Italy"], 400),
                              ("/explorer/prompts/audit/get", {}, 404),
                              ("/explorer/prompts/nope/complete", {"argument": "x", "value": ""}, 404),
                              ("/explorer/prompts/plan_trip/complete", {"argument": "nope", "value": ""}, 400),
                              ("/explorer/prompts/plan_trip/complete", {"value": ""}, 400)):
        answer = c.post(url, json=body, headers=PROMPTS_CALLER)
        assert answer.status_code == status and isinstance(answer.get_json()["error"], str), url
    completed = c.post("/explorer/prompts/code_review/complete", json={"argument": "language", "value": "ja"},
                       headers=PROMPTS_CALLER).get_json()
    assert completed == {"values": ["javascript"], "total": 1, "hasMore": False}
    closed = create_app(TESTING=True, TOOLDISCOVERY_ALLOW_EXECUTE=False).test_client()
    assert closed.post("/explorer/prompts/greeting/get", json={}, headers=PROMPTS_CALLER).status_code == 403
    assert closed.get("/explorer/prompts", headers=PROMPTS_CALLER).status_code == 200
