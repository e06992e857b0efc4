"""The official TypeScript MCP client (npm ``@modelcontextprotocol/client``, on Node 22 from npm) and
its OAuth flow against the app as its own users' authorization server, end to end: a Node process
is the desktop client (an ``OAuthClientProvider`` that keeps what it is given in memory, a loopback
listener on 127.0.0.1 for the redirect, ``finishAuth`` with the callback's parameters), the test is
the person at the browser (it reads the authorization URL the client prints, signs in on the app's
Flask-Login form and presses **Allow** in Chromium, which then goes back to the client's listener).

The app runs under gunicorn with two workers sharing a real Redis (every connection closed after its
response, so the client's requests land on both). The client registers dynamically (RFC 7591) or names
itself by a Client ID Metadata Document served over HTTPS on loopback, in both eras of its
``versionNegotiation`` (``legacy``: the 2025-11-25 handshake; ``auto``: 2026-07-28), and the tool sees
the user who granted as ``ctx.user_id``. (Refreshing an expired token: tests/test_oauth_clients_refresh.py,
with ``pause``: the client calls again that many seconds later.)"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from .oauth_harness import (
    ERAS,
    MetadataServer,
    Person,
    app_trusting,
    chromium,
    documents,  # noqa: F401  (a fixture)
)
from .test_mcp_tasks_servers import conformance  # noqa: F401  (conformance: Node 22)
from .test_mcp_ts_client_servers import ts_client  # noqa: F401  (the TypeScript client, from npm)
from .test_operating_server import redis_url  # noqa: F401  (a redis-server of our own)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ALICE_ID = "u-1001"
CLIENT_NAME = "Acme desktop (TypeScript SDK)"
#: The desktop client: prints ``@@authorize <url>`` when the person must go to the browser, and one
#: ``@@result <json>`` line at the end.
SCRIPT = r'''
import http from "node:http";
import { randomUUID } from "node:crypto";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";

const [base, mode, documentUrl, pause, clientName] = process.argv.slice(2);
const say = (kind, value) => console.log(`@@${kind} ${JSON.stringify(value)}`);

// The loopback listener the browser comes back to (RFC 8252 section 7.3).
const answers = [];
const waiting = [];
const listener = http.createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  if (url.pathname !== "/callback") { res.writeHead(404).end(); return; }
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
     .end("<!doctype html><title>Signed in</title><p>You may close this window.");
  const wake = waiting.shift();
  if (wake) wake(url.searchParams); else answers.push(url.searchParams);
});
await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${listener.address().port}/callback`;
const nextAnswer = () => answers.length ? Promise.resolve(answers.shift()) : new Promise((r) => waiting.push(r));

class DesktopProvider {
  constructor() { this.saved = []; this.authorizations = []; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadataUrl() { return documentUrl || undefined; }
  get clientMetadata() {
    return { client_name: clientName, redirect_uris: [redirectUrl], response_types: ["code"],
             grant_types: ["authorization_code", "refresh_token"], token_endpoint_auth_method: "none" };
  }
  state() { this.lastState = randomUUID(); return this.lastState; }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.stored; }
  saveTokens(tokens) { this.stored = tokens; this.saved.push(tokens); }
  redirectToAuthorization(url) { this.authorizations.push(url.href); say("authorize", url.href); }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
}

const endpoint = new URL(`${base}/mcp`);

async function open(provider, transport) {
  const client = new Client({ name: "flask-tooldiscovery-oauth-test", version: "1.0.0" },
                            { versionNegotiation: { mode } });
  await client.connect(transport ?? new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
  return client;
}

async function connect(provider) {
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  try {
    return await open(provider, transport);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const params = await nextAnswer();
  if (params.get("state") !== provider.lastState) throw new Error(`state mismatch: ${params}`);
  await transport.finishAuth(params);
  return await open(provider);
}

async function whoami(client, tries) {
  const seen = [];
  for (let i = 0; i < tries; i++) {
    const result = await client.callTool({ name: "whoami", arguments: {} });
    if (result.isError) throw new Error(JSON.stringify(result));
    seen.push(result.structuredContent);
    if (new Set(seen.map((a) => a.worker)).size === 2) break;
  }
  return seen;
}

const provider = new DesktopProvider();
const client = await connect(provider);
const out = { version: client.getNegotiatedProtocolVersion(), clientId: provider.client?.client_id,
              first: await whoami(client, 40) };
if (Number(pause) > 0) {
  await new Promise((resolve) => setTimeout(resolve, Number(pause) * 1000));  // the access token expires
  out.second = await whoami(client, 40);
}
out.authorizations = provider.authorizations;
out.tokens = provider.saved.map((t) => ({ access_token: t.access_token, refresh_token: t.refresh_token }));
await client.close();
listener.close();
say("result", out);
'''


@pytest.fixture(scope="module")
def base(redis_url: str, documents: MetadataServer) -> Iterator[str]:  # noqa: F811
    with app_trusting(documents, redis_url + "/3") as url:
        yield url


@pytest.fixture(scope="module")
def node_client(ts_client: tuple[Path, Path]) -> tuple[Path, Path]:  # noqa: F811
    node, home = ts_client
    script = home / "oauth_desktop_client.mjs"  # beside its node_modules, where Node resolves the import
    script.write_text(SCRIPT)
    return node, script


def run_client(node_client: tuple[Path, Path], base: str, mode: str, person: Person, *, document: str = "",
               pause: int = 0) -> dict[str, Any]:
    """Run the desktop client; whenever it asks, ``person`` goes to the authorization URL in Chromium."""
    node, script = node_client
    proc = subprocess.Popen([str(node), str(script), base, mode, document, str(pause), CLIENT_NAME], cwd=script.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    output: list[str] = []
    deadline = time.monotonic() + 180 + pause
    try:
        while (line := lines.get(timeout=max(1.0, deadline - time.monotonic()))) is not None:
            output.append(line)
            if line.startswith("@@authorize "):
                url = json.loads(line[len("@@authorize "):])
                back_to = parse_qs(urlsplit(url).query)["redirect_uri"][0]

                async def sign_in(address: str = url, prefix: str = back_to) -> None:
                    async with chromium(person):
                        await person.authorize(address, prefix)

                asyncio.run(sign_in())
            elif line.startswith("@@result "):
                result: dict[str, Any] = json.loads(line[len("@@result "):])
                return result
        pytest.fail("the client ended without a result:\n" + "".join(output)[-4000:])
    finally:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.parametrize(("mode", "version"), ERAS)
@pytest.mark.parametrize("registration", ["dcr", "cimd"])
def test_the_ts_client_signs_a_user_in_and_calls_as_them(node_client: tuple[Path, Path], base: str,
                                                         documents: MetadataServer,  # noqa: F811
                                                         registration: str, mode: str, version: str) -> None:
    person = Person("alice", "wonderland")
    document = ""
    if registration == "cimd":  # the redirect URI is the client's listener: a loopback port any (RFC 8252)
        document = documents.document_for(f"/clients/ts-{mode}.json", "http://127.0.0.1/callback",
                                          client_name=CLIENT_NAME)
    out = run_client(node_client, base, mode, person, document=document)
    assert out["version"] == version
    assert {a["user_id"] for a in out["first"]} == {ALICE_ID}
    assert len({a["worker"] for a in out["first"]}) == 2  # its token works on both workers
    [authorization] = out["authorizations"]
    asked = parse_qs(urlsplit(authorization).query)
    assert asked["resource"] == [f"{base}/mcp"] and asked["code_challenge_method"] == ["S256"]
    (login_url, _), (_, consent_text) = person.seen
    assert urlsplit(login_url).path == "/login" and CLIENT_NAME in consent_text
    if registration == "cimd":
        assert out["clientId"] == document and documents.fetches[urlsplit(document).path] >= 1
    else:
        assert not out["clientId"].startswith("https://")
