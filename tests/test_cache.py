"""Correctness of discovery caching (not its speed: that is bench/'s business): cached bytes and
the WSGI fast path (:class:`~flask_tooldiscovery.serving.fastpath.FastPath`) always answer what the full
request path would, after a registry change, a provider change, a config change and for each
caller's visible set; ETag and 304 semantics; stable MCP pagination; every guard kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import Identity, ToolDiscovery
from flask_tooldiscovery.serving.fastpath import FastPath

PATHS = {"opal": "/opal/discovery", "oxp": "/oxp/tools", "tdp": "/api/v1/tools", "explorer": "/explorer/tools"}


def names(dialect: str, body: Any) -> list[str]:
    items = {"opal": lambda b: b["functions"], "oxp": lambda b: b["items"], "tdp": lambda b: b["tools"],
             "explorer": lambda b: b}[dialect](body)
    return sorted(item["name"] if "name" in item else item["id"] for item in items)


def make(d: ToolDiscovery, **config: Any) -> Flask:
    app = Flask("cache")
    app.config.update({"TESTING": True, "TOOLDISCOVERY_DIALECTS": [*PATHS, "mcp"], **config})
    d.init_app(app)
    return app


def two_tools() -> ToolDiscovery:
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="one", description="One.")
    d.add_tool(lambda: 2, name="two", description="Two.")
    return d


def served_fast(app: Flask) -> int:
    fast: FastPath = app.extensions["tooldiscovery.fast"]
    return sum(len(s.answers) for s in fast._served.values())


@pytest.mark.parametrize("dialect", list(PATHS))
def test_registry_change_shows_at_once(dialect: str) -> None:
    d = two_tools()
    app = make(d)
    client = app.test_client()
    first = client.get(PATHS[dialect])
    again = client.get(PATHS[dialect])  # answered by the fast path
    assert served_fast(app) >= 1
    assert again.data == first.data and again.headers["ETag"] == first.headers["ETag"]
    d.add_tool(lambda: 3, name="three", description="Three.")
    after = client.get(PATHS[dialect])
    assert after.status_code == 200
    assert "three" in str(names(dialect, after.get_json())) or "Three" in after.get_data(as_text=True)
    assert after.headers["ETag"] != first.headers["ETag"]
    assert client.get(PATHS[dialect]).data == after.data


@pytest.mark.parametrize("dialect", list(PATHS))
def test_provider_change_shows_at_once(dialect: str) -> None:
    listed = [{"name": "alpha", "description": "A."}]
    d = ToolDiscovery(tools=lambda: list(listed))
    client = make(d).test_client()
    first = client.get(PATHS[dialect])
    assert client.get(PATHS[dialect]).data == first.data
    listed.append({"name": "beta", "description": "B."})
    after = client.get(PATHS[dialect])
    assert "beta" in after.get_data(as_text=True)
    assert after.headers["ETag"] != first.headers["ETag"]
    listed.pop()
    assert client.get(PATHS[dialect]).data == first.data


def test_config_change_each_app_its_own_document() -> None:
    d = two_tools()
    acme = make(d, TOOLDISCOVERY_SERVER_NAME="acme").test_client()
    zeta = make(d, TOOLDISCOVERY_SERVER_NAME="zeta").test_client()
    for _ in range(2):
        assert acme.get("/opal/discovery").get_json()["name"] == "acme"
        assert zeta.get("/opal/discovery").get_json()["name"] == "zeta"


def per_user() -> ToolDiscovery:
    d = two_tools()
    d.add_tool(lambda: "r", name="report", description="Admins.", scopes=["admin"])

    @d.identity
    def who(request: Any) -> Identity | None:
        user = request.headers.get("X-User")
        return Identity(subject=user, scopes=("admin",) if user == "root" else ()) if user else None

    return d


@pytest.mark.parametrize("dialect", list(PATHS))
def test_each_visible_set_gets_its_document(dialect: str) -> None:
    client = make(per_user(), TOOLDISCOVERY_DIALECTS=[dialect]).test_client()
    for _ in range(2):
        anonymous = client.get(PATHS[dialect])
        alice = client.get(PATHS[dialect], headers={"X-User": "alice"})
        root = client.get(PATHS[dialect], headers={"X-User": "root"})
        assert "report" not in anonymous.get_data(as_text=True)
        assert alice.data == anonymous.data
        assert "report" in root.get_data(as_text=True)
        assert root.headers["ETag"] != alice.headers["ETag"]


def test_scoped_tools_anonymous_fast_path_stays_right() -> None:
    d = two_tools()
    d.add_tool(lambda: "r", name="report", description="Admins.", scopes=["admin"])
    app = make(d)
    client = app.test_client()
    for _ in range(3):
        assert names("opal", client.get("/opal/discovery").get_json()) == ["one", "two"]
    assert served_fast(app) >= 1


@pytest.mark.parametrize("dialect", list(PATHS))
def test_a_tool_only_an_interface_calls_leaves_the_fast_path_on(dialect: str) -> None:
    """A dialect that lists no interface-only tool (``visibility=["app"]``) still has its answers
    learned; one that lists them (the explorer) shows it."""
    from .test_mcp_fast_list import Counted

    d = two_tools()
    d.add_tool(lambda: 3, name="widget_refresh", description="Called by the widget.", visibility=["app"])
    app = make(d)
    client = app.test_client()
    first = client.get(PATHS[dialect])
    counted = Counted(app)
    for _ in range(3):
        again = client.get(PATHS[dialect])
        assert again.data == first.data and again.headers["ETag"] == first.headers["ETag"]
    assert counted.count == 0  # the first answer was learned: the next ones came without Flask
    assert len(names(dialect, first.get_json())) == (3 if dialect == "explorer" else 2)
    assert ("widget_refresh" in first.get_data(as_text=True)) == (dialect == "explorer")


@pytest.mark.parametrize("dialect", list(PATHS))
def test_etag_and_304(dialect: str) -> None:
    d = two_tools()
    client = make(d).test_client()
    path = PATHS[dialect]
    full = client.get(path)
    etag = full.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    for _ in range(2):  # the full path, then the fast path
        hit = client.get(path, headers={"If-None-Match": etag})
        assert hit.status_code == 304 and hit.data == b"" and hit.headers["ETag"] == etag
        assert "Content-Type" not in hit.headers
        assert hit.headers["X-Content-Type-Options"] == "nosniff" and hit.headers["X-Trace-Id"]
        assert client.get(path, headers={"If-None-Match": f'"other", {etag}'}).status_code == 304
        assert client.get(path, headers={"If-None-Match": "*"}).status_code == 304
        assert client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
        assert client.get(path, headers={"If-None-Match": f"W/{etag}"}).status_code == 200  # strong comparison
    d.add_tool(lambda: 3, name="three")
    changed = client.get(path, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


def test_pagination_stable() -> None:
    d = ToolDiscovery()
    for i in range(23):
        d.add_tool(lambda i=i: i, name=f"tool_{i:02d}", description="T.")
    client = make(d, TOOLDISCOVERY_MCP_PAGE_SIZE=5).test_client()

    def walk() -> list[list[str]]:
        pages, cursor = [], None
        while True:
            params = {"cursor": cursor} if cursor else {}
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
            body = client.post("/mcp", json=message).get_json()
            pages.append([t["name"] for t in body["result"]["tools"]])
            cursor = body["result"].get("nextCursor")
            if cursor is None:
                return pages

    first = walk()
    assert [len(p) for p in first] == [5, 5, 5, 5, 3]
    assert [name for page in first for name in page] == [f"tool_{i:02d}" for i in range(23)]
    assert walk() == first


def test_fast_path_keeps_every_guard() -> None:
    app = make(two_tools(), TOOLDISCOVERY_ALLOWED_HOSTS=["good.example"])
    client = app.test_client()
    ok = client.get("/oxp/tools", headers={"Host": "good.example"})
    again = client.get("/oxp/tools", headers={"Host": "good.example", "X-Trace-Id": "trace-42"})
    assert ok.status_code == again.status_code == 200 and served_fast(app) >= 1
    assert again.headers["X-Trace-Id"] == "trace-42" and ok.headers["X-Trace-Id"] != "trace-42"
    assert again.headers["X-Content-Type-Options"] == "nosniff"
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert client.get("/oxp/tools", headers={"Host": "good.example", "traceparent": parent}).headers[
        "X-Trace-Id"] == "0af7651916cd43dd8448eb211c80319c"
    assert client.get("/oxp/tools", headers={"Host": "evil.example"}).status_code == 421
    # Opal's discovery is public: every origin gets "*"; OXP's answers listed origins only.
    client.get("/opal/discovery", headers={"Host": "good.example"})
    public = client.get("/opal/discovery", headers={"Host": "good.example", "Origin": "https://a.example"})
    assert public.headers["Access-Control-Allow-Origin"] == "*"
    private = client.get("/oxp/tools", headers={"Host": "good.example", "Origin": "http://good.example"})
    assert private.headers["Access-Control-Allow-Origin"] == "http://good.example"
    assert "Origin" in private.headers["Vary"]


def test_protected_discovery_keeps_its_identity_check() -> None:
    app = make(two_tools(), TOOLDISCOVERY_OXP_API_KEY="sesame", TOOLDISCOVERY_AUTH_DISCOVERY=True,
               TOOLDISCOVERY_DIALECTS=["oxp"])
    client = app.test_client()
    for _ in range(3):
        assert client.get("/oxp/tools", headers={"OXP-API-Key": "sesame"}).status_code == 200
        assert client.get("/oxp/tools").status_code == 401


def test_open_discovery_reads_credentials_when_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    from flask_tooldiscovery.identity.verifiers import BearerVerifier

    app = make(two_tools(), TOOLDISCOVERY_OPAL_BEARER_TOKEN="sesame", TOOLDISCOVERY_DIALECTS=["opal"])
    client = app.test_client()
    for _ in range(2):
        assert client.get("/opal/discovery").status_code == 200
    assert served_fast(app) >= 1
    verified: list[str | None] = []
    real = BearerVerifier.verify
    monkeypatch.setattr(BearerVerifier, "verify", lambda self, request: verified.append(
        request.headers.get("Authorization")) or real(self, request))
    for token in ("sesame", "wrong"):
        assert client.get("/opal/discovery", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert verified == ["Bearer sesame", "Bearer wrong"]


def test_app_hooks_run_on_every_request() -> None:
    app = Flask("hooks")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    calls: list[str] = []

    @app.before_request
    def hook() -> None:
        calls.append("before")

    two_tools().init_app(app)
    client = app.test_client()
    for _ in range(3):
        assert client.get("/opal/discovery").status_code == 200
    assert calls == ["before"] * 3


def test_middleware_applied_first_turns_the_fast_path_off() -> None:
    from werkzeug.middleware.proxy_fix import ProxyFix

    app = Flask("proxied")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["opal"])
    app.wsgi_app = ProxyFix(app.wsgi_app)  # type: ignore[method-assign]
    two_tools().init_app(app)
    assert app.extensions["tooldiscovery.fast"] is None
    assert json.loads(app.test_client().get("/opal/discovery").data)["functions"]
