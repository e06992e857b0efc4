"""One identity layer for every dialect: an identity hook and JWKS-verified JWTs guard every
route that runs a tool, fill ToolContext, and a half-protected configuration is refused."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from flask import Flask, jsonify

from flask_tooldiscovery import Identity, SettingsError, ToolContext, ToolDiscovery

from .conformance.drivers import DRIVERS
from .conftest import live_server

FIVE = ["explorer", "opal", "oxp", "tdp", "mcp"]


def whoami_tools(d: ToolDiscovery) -> None:
    @d.tool
    def whoami(ctx: ToolContext) -> dict:
        """Who is calling."""
        return {"user_id": ctx.user_id, "scopes": list(ctx.scopes), "claims": dict(ctx.claims)}


def build(dialect: str, d: ToolDiscovery, **config: Any) -> Flask:
    app = Flask("conformance")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=[dialect], TOOLDISCOVERY_ALLOW_EXECUTE=True, **config)
    d.init_app(app)
    return app


def hooked() -> ToolDiscovery:
    d = ToolDiscovery()
    whoami_tools(d)

    @d.identity
    def from_header(request) -> Identity | None:
        user = request.headers.get("X-User")
        if user == "mallory":
            raise PermissionError("banned: secret reason")
        return Identity(subject=user, scopes=("tools.read",), claims={"team": "blue"}) if user else None

    return d


@pytest.mark.parametrize("dialect", FIVE)
def test_an_identity_hook_guards_every_dialect_and_fills_the_context(dialect: str, caplog) -> None:
    driver = DRIVERS[dialect]
    client = build(dialect, hooked()).test_client()
    anonymous = driver.call(client, "whoami", {})
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"].startswith("Bearer")
    refused = driver.call(client, "whoami", {}, headers={"X-User": "mallory"})
    assert refused.status_code == 401 and "secret reason" not in refused.get_data(as_text=True)
    assert "secret reason" not in caplog.text
    ok = driver.result(driver.call(client, "whoami", {}, headers={"X-User": "alice"}))
    assert ok.kind == "ok", ok
    assert ok.value == {"user_id": "alice", "scopes": ["tools.read"], "claims": {"team": "blue"}}
    assert driver.discover(client).status_code == 200 if dialect != "mcp" else True  # discovery stays open


@pytest.mark.parametrize("dialect", ["opal", "tdp", "explorer"])
def test_discovery_can_be_guarded_too(dialect: str) -> None:
    driver = DRIVERS[dialect]
    client = build(dialect, hooked(), TOOLDISCOVERY_AUTH_DISCOVERY=True).test_client()
    assert driver.discover(client).status_code == 401
    assert driver.discover(client, headers={"X-User": "alice"}).status_code == 200


def test_an_async_hook_works() -> None:
    d = ToolDiscovery()
    whoami_tools(d)

    @d.identity
    async def lookup(request) -> str | None:
        return request.headers.get("X-User")

    client = build("tdp", d).test_client()
    assert client.post("/api/v1/tools/execute", json={"tool_name": "whoami"}).status_code == 401
    r = client.post("/api/v1/tools/execute", json={"tool_name": "whoami"}, headers={"X-User": "bob"})
    assert r.get_json()["result"]["user_id"] == "bob"


def test_a_dialect_can_be_left_open_explicitly() -> None:
    app = Flask("x")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["tdp", "opal"], TOOLDISCOVERY_OPEN_DIALECTS=["tdp"])
    d = hooked()
    d.init_app(app)
    c = app.test_client()
    assert c.post("/api/v1/tools/execute", json={"tool_name": "whoami"}).status_code == 200
    assert c.post("/opal/tools/whoami", json={}).status_code == 401


@pytest.mark.parametrize("config, open_ones", [
    ({"TOOLDISCOVERY_OPAL_BEARER_TOKEN": "t"}, "oxp, tdp, mcp"),
    ({"TOOLDISCOVERY_OXP_API_KEY": "k", "TOOLDISCOVERY_MCP_BEARER_TOKEN": "t"}, "opal, tdp"),
])
def test_half_protected_configurations_are_refused(config: dict[str, str], open_ones: str) -> None:
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["explorer", "opal", "oxp", "tdp", "mcp"], **config)
    with pytest.raises(SettingsError) as info:
        ToolDiscovery().init_app(app)
    assert f"{open_ones} would run the same tools for anyone" in str(info.value)
    assert "TOOLDISCOVERY_OPEN_DIALECTS" in str(info.value)
    opted_in = Flask("y")
    opted_in.config.update(TOOLDISCOVERY_DIALECTS=["explorer", "opal", "oxp", "tdp", "mcp"],
                           TOOLDISCOVERY_OPEN_DIALECTS=open_ones.replace(" ", ""), **config)
    ToolDiscovery().init_app(opted_in)  # the user said so: accepted
    explorer_runs = Flask("z")
    explorer_runs.config.update(TOOLDISCOVERY_DIALECTS=["explorer", "opal"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                                TOOLDISCOVERY_OPAL_BEARER_TOKEN="t")
    with pytest.raises(SettingsError, match="explorer would run the same tools"):
        ToolDiscovery().init_app(explorer_runs)


class KeyServer:
    """A JWKS endpoint on a live server that counts how often it is fetched."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}
        self.fetches = 0
        self.app = Flask("issuer")

        @self.app.get("/jwks.json")
        def jwks() -> Any:
            self.fetches += 1
            return jsonify({"keys": [self.jwk(kid, key) for kid, key in self.keys.items()]})

    def add(self, kid: str, key: Any) -> None:
        self.keys[kid] = key

    @staticmethod
    def jwk(kid: str, key: Any) -> dict[str, Any]:
        algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
        data = json.loads(algorithm.to_jwk(key.public_key()))
        return {**data, "kid": kid, "use": "sig"}

    def token(self, kid: str, **claims: Any) -> str:
        key = self.keys[kid]
        alg = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
        payload = {"iss": "https://issuer.test", "aud": "https://tools.test", "sub": "alice",
                   "exp": int(time.time()) + 300, "scope": "tools.read tools.write", **claims}
        return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid})


@pytest.fixture
def issuer():
    server = KeyServer()
    server.add("k1", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    with live_server(server.app) as base:
        server.url = f"{base}/jwks.json"  # type: ignore[attr-defined]
        yield server


def jwks_config(issuer: KeyServer) -> dict[str, Any]:
    return {"TOOLDISCOVERY_JWT_JWKS_URL": issuer.url, "TOOLDISCOVERY_JWT_ISSUER": "https://issuer.test",  # type: ignore[attr-defined]
            "TOOLDISCOVERY_JWT_AUDIENCE": "https://tools.test"}


@pytest.mark.parametrize("dialect", FIVE)
def test_jwks_verified_jwts_guard_every_dialect(issuer: KeyServer, dialect: str) -> None:
    driver = DRIVERS[dialect]
    d = ToolDiscovery()
    whoami_tools(d)
    client = build(dialect, d, **jwks_config(issuer)).test_client()
    good = {"Authorization": f"Bearer {issuer.token('k1')}"}
    ok = driver.result(driver.call(client, "whoami", {}, headers=good))
    assert ok.kind == "ok" and ok.value["user_id"] == "alice" and ok.value["scopes"] == ["tools.read", "tools.write"]
    assert ok.value["claims"]["iss"] == "https://issuer.test"
    for bad in (issuer.token("k1", aud="https://elsewhere.test"), issuer.token("k1", iss="https://evil.test"),
                issuer.token("k1", exp=int(time.time()) - 10), jwt.encode({"sub": "x"}, "s" * 32, algorithm="HS256")):
        r = driver.call(client, "whoami", {}, headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["WWW-Authenticate"]


def test_jwks_rotation_fetches_a_new_key_id_once(issuer: KeyServer) -> None:
    d = ToolDiscovery()
    whoami_tools(d)
    client = build("opal", d, **jwks_config(issuer), TOOLDISCOVERY_JWT_JWKS_COOLDOWN=0).test_client()

    def call(token: str) -> int:
        return client.post("/opal/tools/whoami", json={}, headers={"Authorization": f"Bearer {token}"}).status_code

    assert call(issuer.token("k1")) == 200
    assert call(issuer.token("k1")) == 200
    assert issuer.fetches == 1  # cached
    issuer.add("k2", ec.generate_private_key(ec.SECP256R1()))  # the issuer rotates to an ES256 key
    assert call(issuer.token("k2")) == 200
    assert issuer.fetches == 2  # the unknown key id was fetched once
    for _ in range(3):
        assert call(issuer.token("k2")) == 200 and call(issuer.token("k1")) == 200
    assert issuer.fetches == 2
    forged = KeyServer()
    forged.add("k1", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    assert call(forged.token("k1")) == 401  # same key id, another key: refused
    assert issuer.fetches == 2


def test_unknown_key_ids_cannot_make_it_fetch_again_and_again(issuer: KeyServer) -> None:
    d = ToolDiscovery()
    whoami_tools(d)
    client = build("opal", d, **jwks_config(issuer)).test_client()  # default cooldown: 30 s
    assert client.post("/opal/tools/whoami", json={}, headers={
        "Authorization": f"Bearer {issuer.token('k1')}"}).status_code == 200
    stranger = KeyServer()
    for i in range(5):
        stranger.add(f"random-{i}", rsa.generate_private_key(public_exponent=65537, key_size=2048))
        r = client.post("/opal/tools/whoami", json={}, headers={
            "Authorization": f"Bearer {stranger.token(f'random-{i}')}"})
        assert r.status_code == 401
    assert issuer.fetches == 1


def test_jwks_without_pyjwt_fails_at_init_app(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "jwt", None)
    app = Flask("x")
    app.config.update(TOOLDISCOVERY_DIALECTS=["opal"], TOOLDISCOVERY_JWT_JWKS_URL="https://issuer.test/jwks")
    with pytest.raises(RuntimeError, match=r"flask-tooldiscovery\[jwt\]"):
        ToolDiscovery().init_app(app)


SECRET = "hs256-shared-secret-" + "x" * 40


def hs256_bearer(audience: str, **claims: Any) -> dict[str, str]:
    """A token minted when the test runs (one minted at collection has expired by the time a
    loaded machine reaches the test in a whole-suite run)."""
    token = jwt.encode({"sub": "carol", "aud": audience, "exp": int(time.time()) + 600, **claims}, SECRET,
                       algorithm="HS256")
    return {"Authorization": "Bearer " + token}


#: Per verifier: its settings, then (made when the test runs) good headers, bad headers, the subject.
VERIFIERS: dict[str, tuple[dict[str, str], Callable[[], dict[str, str]], Callable[[], dict[str, str]], str | None]] = {
    "bearer": ({"TOOLDISCOVERY_BEARER_TOKEN": "static-tok"}, lambda: {"Authorization": "Bearer static-tok"},
               lambda: {"Authorization": "Bearer wrong"}, None),
    "api_key": ({"TOOLDISCOVERY_API_KEY": "key-1", "TOOLDISCOVERY_API_KEY_HEADER": "X-Tools-Key"},
                lambda: {"X-Tools-Key": "key-1"}, lambda: {"X-Tools-Key": "key-2"}, None),
    "hs256": ({"TOOLDISCOVERY_JWT_SECRET": SECRET, "TOOLDISCOVERY_JWT_AUDIENCE": "tools"},
              lambda: hs256_bearer("tools", scope="a b"), lambda: hs256_bearer("other"), "carol"),
}


@pytest.mark.parametrize("kind", sorted(VERIFIERS))
@pytest.mark.parametrize("dialect", FIVE)
def test_each_built_in_verifier_guards_every_dialect(kind: str, dialect: str) -> None:
    config, make_good, make_bad, subject = VERIFIERS[kind]
    good, bad = make_good(), make_bad()
    driver = DRIVERS[dialect]
    d = ToolDiscovery()
    whoami_tools(d)
    client = build(dialect, d, **config).test_client()
    assert driver.call(client, "whoami", {}).status_code == 401
    assert driver.call(client, "whoami", {}, headers=bad).status_code == 401
    ok = driver.result(driver.call(client, "whoami", {}, headers=good))
    assert ok.kind == "ok" and ok.value["user_id"] == subject
    if kind == "hs256":
        assert ok.value["scopes"] == ["a", "b"]


# -- the explorer's auth hook: one identity source among the others ----------------------------------


def staff_hook(events: list[str]) -> Any:
    """An auth hook (F4) that lets ``X-Staff: yes`` in, recording when it is asked, entered and left."""
    import contextlib

    @contextlib.contextmanager
    def hook(request: Any) -> Any:
        events.append("asked")
        if request.headers.get("X-Staff") != "yes":
            raise PermissionError("not staff: secret reason")
        events.append("in")
        yield
        events.append("out")

    return hook


def test_the_auth_hook_is_one_more_way_in_beside_the_layers_credentials(caplog) -> None:
    """Any one source lets an explorer call in: the layer's token (the hook not even asked) or the
    hook; refused by both, the pipeline answers one 401 whose logged reason names both."""
    events: list[str] = []
    d = ToolDiscovery(auth_hook=staff_hook(events))
    whoami_tools(d)
    client = build("explorer", d, TOOLDISCOVERY_BEARER_TOKEN="layer-token").test_client()
    url = "/explorer/tools/whoami/call"
    by_token = client.post(url, json={}, headers={"Authorization": "Bearer layer-token"})
    assert by_token.status_code == 200 and events == []
    by_hook = client.post(url, json={}, headers={"X-Staff": "yes"})
    assert by_hook.status_code == 200 and events == ["asked", "in", "out"]
    assert by_hook.get_json()["structuredContent"]["user_id"] is None  # the hook says nothing of who calls
    events.clear()
    with caplog.at_level("INFO"):
        refused = client.post(url, json={}, headers={"Authorization": "Bearer wrong"})
    assert refused.status_code == 401 and refused.get_json() == {"error": "Unauthorized"}
    assert refused.headers["WWW-Authenticate"] == 'Bearer realm="tools", error="invalid_token"'
    assert events == ["asked"]
    logged = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(logged) == 1 and "wrong bearer token" in logged[0] and "PermissionError" in logged[0]
    assert "secret reason" not in caplog.text


def test_the_auth_hook_counts_as_protection() -> None:
    """An explorer that runs tools behind an auth hook is protected, beside a dialect with credentials;
    without the hook, init_app refuses the mix."""
    for hook, refused in ((staff_hook([]), False), (None, True)):
        app = Flask("x")
        app.config.update(TOOLDISCOVERY_DIALECTS=["explorer", "opal"], TOOLDISCOVERY_ALLOW_EXECUTE=True,
                          TOOLDISCOVERY_OPAL_BEARER_TOKEN="t")
        if refused:
            with pytest.raises(SettingsError, match="explorer would run the same tools"):
                ToolDiscovery(auth_hook=hook).init_app(app)
        else:
            ToolDiscovery(auth_hook=hook).init_app(app)


def test_the_auth_hook_leaves_discovery_open_and_fast() -> None:
    """The hook guards calls only: with TOOLDISCOVERY_AUTH_DISCOVERY and no other credential the
    list stays open, and the fast path still learns it."""
    from .test_cache import served_fast

    events: list[str] = []
    d = ToolDiscovery(auth_hook=staff_hook(events))
    whoami_tools(d)
    app = build("explorer", d, TOOLDISCOVERY_AUTH_DISCOVERY=True)
    client = app.test_client()
    first, again = client.get("/explorer/tools"), client.get("/explorer/tools")
    assert first.status_code == again.status_code == 200 and again.data == first.data
    assert served_fast(app) >= 1 and events == []
    assert client.post("/explorer/tools/whoami/call", json={}).status_code == 401 and events == ["asked"]


def test_a_dialect_that_takes_the_auth_hook_cannot_run_a_call_around_it() -> None:
    """A dialect of one's own that takes the auth hook but runs a call without ``pipeline.admitted``
    is refused by the pipeline (401), never run for a caller no source let in."""
    from flask_tooldiscovery import Dialect
    from flask_tooldiscovery.serving.wire import json_response

    def make_blueprint(pipe: Any) -> Any:
        bp = pipe.blueprint(__name__)

        @pipe.route("/run/<name>", "call", ["POST"])
        def run(name: str) -> Any:
            outcome = pipe.invoke(pipe.find(name), {}, pipe.context())  # forgot pipe.admitted
            return json_response({"value": outcome.value})

        @pipe.route("/admitted/<name>", "call", ["POST"])
        def admitted(name: str) -> Any:
            tool = pipe.find(name)
            outcome = pipe.admitted(lambda: pipe.invoke(tool, {}, pipe.context()))
            return json_response({"value": outcome.value})

        return bp

    events: list[str] = []
    d = ToolDiscovery(auth_hook=staff_hook(events), dialects=[
        Dialect(name="careless", make_blueprint=make_blueprint, default_prefix="/careless", takes_auth_hook=True)])
    whoami_tools(d)
    client = build("careless", d).test_client()
    forgot = client.post("/careless/run/whoami", json={}, headers={"X-Staff": "yes"})
    assert forgot.status_code == 401 and forgot.headers["WWW-Authenticate"] == 'Bearer realm="careless"'
    assert events == []
    assert client.post("/careless/admitted/whoami", json={}).status_code == 401
    ok = client.post("/careless/admitted/whoami", json={}, headers={"X-Staff": "yes"})
    assert ok.status_code == 200 and events == ["asked", "asked", "in", "out"]
