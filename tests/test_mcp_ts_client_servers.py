"""The official TypeScript MCP client (npm ``@modelcontextprotocol/client`` 2.4.0, on Node 22 from npm)
against gunicorn with two workers sharing a real Redis, in both eras of its ``versionNegotiation``:
``auto`` (which settles on 2026-07-28 here) and ``legacy`` (the 2025-11-25 handshake). In each it
lists prompts and gets two with arguments, completes a prompt argument (with the context of one
already chosen) and a resource-template variable, calls a tool that elicits twice and samples once
(the client's own ``elicitation/create`` and ``sampling/createMessage`` handlers answer, through
InputRequiredResult rounds at 2026-07-28 and through the call's SSE stream in the handshake era), and
hears a change of a resource made by another client: ``subscriptions/listen`` at 2026-07-28 (and a
tool-list change on the same stream), ``resources/subscribe`` then
``notifications/resources/updated`` on the session's GET stream in the handshake era (and nothing
after ``resources/unsubscribe``); and its ``listChanged`` option reads the tool list again when
another client's call announces a change, in both eras.

The server is :mod:`tests.apps.mcp_features_app`: the apps the Python client's tests run, mounted
together. The 1.x SDK (``@modelcontextprotocol/sdk``) is not needed: the 2.x client does all of this
in both eras. One Node process runs every step and prints one JSON line the tests read. Node, the
client and Redis are installed or started here; when they cannot be, the tests skip locally and
fail in CI."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .apps.subscriptions_app import NOTE_URI
from .npm_cache import installed
from .test_deploy import stop
from .test_mcp_tasks_servers import conformance  # noqa: F401  (conformance: Node 22)
from .test_operating_server import redis_url, start  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow

CLIENT = "@modelcontextprotocol/client"
VERSION = "2.4.0"
MARKER = "@@result "
#: What the client sends and hears, per negotiation mode; see the module's docstring.
SCRIPT = r'''
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [base, note] = process.argv.slice(2);
const headers = { Authorization: "Bearer alice" };  // the prompts app names its caller

async function connect(path, mode, asked) {
  const options = { versionNegotiation: { mode } };
  if (asked) options.capabilities = { elicitation: { form: {} }, sampling: {} };
  const client = new Client({ name: "flask-tooldiscovery-ts-test", version: "1.0.0" }, options);
  if (asked) {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params.message);
      const fields = Object.keys(request.params.requestedSchema.properties);
      return { action: "accept", content: fields.includes("name") ? { name: "Grace" } : { color: "red" } };
    });
    client.setRequestHandler("sampling/createMessage", async (request) => {
      asked.push(request.params.messages.at(-1).content.text);
      return { model: "test-model", role: "assistant", content: { type: "text", text: "Travel light" } };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${path}/mcp`), { requestInit: { headers } }));
  return client;
}

const texts = (messages) => messages.map(
  (m) => `${m.role}: ${m.content.type === "text" ? m.content.text : m.content.type}`);

async function prompts(mode) {
  const client = await connect("/prompts", mode);
  const listed = await client.listPrompts();
  const review = await client.getPrompt({ name: "code_review", arguments: { code: "print(1)", language: "rust" } });
  const trip = await client.getPrompt({ name: "plan_trip", arguments: { country: "Italy", city: "Parma", days: "2" } });
  const cities = await client.complete({ ref: { type: "ref/prompt", name: "plan_trip" },
                                         argument: { name: "city", value: "P" },
                                         context: { arguments: { country: "Italy" } } });
  const languages = await client.complete({ ref: { type: "ref/prompt", name: "code_review" },
                                            argument: { name: "language", value: "r" } });
  const reports = await client.complete({ ref: { type: "ref/resource", uri: "reports://{report_id}" },
                                          argument: { name: "report_id", value: "99" } });
  const out = { version: client.getNegotiatedProtocolVersion(),
                prompts: listed.prompts.map((p) => [p.name, (p.arguments ?? []).map((a) => a.name)]),
                review: texts(review.messages), trip: texts(trip.messages),
                cities: cities.completion, languages: languages.completion, reports: reports.completion };
  await client.close();
  return out;
}

async function asking(mode) {
  const asked = [];
  const client = await connect("/asking", mode, asked);
  const result = await client.callTool({ name: "plan_trip", arguments: { days: 4 } });
  const out = { version: client.getNegotiatedProtocolVersion(), asked, isError: Boolean(result.isError),
                text: result.content.map((c) => c.text).join("") };
  await client.close();
  return out;
}

function inbox() {
  const heard = [];
  let wake = () => {};
  return {
    heard,
    push(item) { heard.push(item); wake(); },
    async next(ms) {  // the next thing heard, or null after ms
      if (heard.length) return heard.shift();
      await new Promise((resolve) => { wake = resolve; setTimeout(resolve, ms); });
      return heard.shift() ?? null;
    },
  };
}

async function subscription(mode) {
  const listener = await connect("/notes", mode);
  const editor = await connect("/notes", mode);
  const heard = inbox();
  listener.setNotificationHandler("notifications/resources/updated", (n) => heard.push(["updated", n.params.uri]));
  listener.setNotificationHandler("notifications/tools/list_changed", () => heard.push(["tools/list_changed"]));
  const out = { version: listener.getNegotiatedProtocolVersion() };
  if (mode === "legacy") {
    out.subscribe = listener.getServerCapabilities()?.resources?.subscribe ?? null;
    await listener.subscribeResource({ uri: note });
    // The session's GET stream, which carries the update, opens on its own after the handshake:
    // edit until the subscriber hears of it.
    for (let i = 0; i < 20 && !out.updated; i++) {
      await editor.callTool({ name: "edit_note", arguments: { text: "call Ann" } });
      out.updated = await heard.next(1000);
    }
    out.text = (await listener.readResource({ uri: note })).contents[0].text;
    await listener.unsubscribeResource({ uri: note });
    heard.heard.length = 0;
    await editor.callTool({ name: "edit_note", arguments: { text: "call Bob" } });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    out.afterUnsubscribe = [...heard.heard];
  } else {
    const sub = await listener.listen({ toolsListChanged: true, resourceSubscriptions: [note, "notes://nobody"] });
    out.honored = sub.honoredFilter;
    await editor.callTool({ name: "edit_note", arguments: { text: "buy milk" } });
    out.updated = await heard.next(20000);
    out.text = (await listener.readResource({ uri: note })).contents[0].text;
    await editor.callTool({ name: "refresh_tools", arguments: {} });
    out.changed = await heard.next(20000);
    await sub.close();
    out.closed = await sub.closed;
  }
  await listener.close();
  await editor.close();
  return out;
}

async function toolListChanges(mode) {
  // ClientOptions.listChanged: a listen stream opened by connect() at 2026-07-28, the session's GET
  // stream in the handshake era; either way the handler gets the tool list read again.
  const lists = inbox();
  const client = new Client({ name: "flask-tooldiscovery-ts-test", version: "1.0.0" }, {
    versionNegotiation: { mode },
    listChanged: { tools: { onChanged: (error, tools) =>
      lists.push(error ? String(error) : tools.map((t) => t.name)) } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/notes/mcp`)));
  const editor = await connect("/notes", mode);
  let tools = null;
  for (let i = 0; i < 20 && !tools; i++) {  // the handshake era's GET stream opens after connect()
    await editor.callTool({ name: "refresh_tools", arguments: {} });
    tools = await lists.next(1000);
  }
  const out = { version: client.getNegotiatedProtocolVersion(), autoOpened: Boolean(client.autoOpenedSubscription),
                tools };
  await client.close();
  await editor.close();
  return out;
}

const out = {};
for (const mode of ["auto", "legacy"]) {
  const trips = [];
  for (let i = 0; i < 3; i++) trips.push(await asking(mode));  // answers and retries land on either worker
  out[mode] = { prompts: await prompts(mode), asking: trips, subscription: await subscription(mode),
                toolListChanges: await toolListChanges(mode) };
}
console.log("@@result " + JSON.stringify(out));
'''


@pytest.fixture(scope="module")
def ts_client(conformance) -> tuple[Path, Path]:  # noqa: F811
    """(Node 22, the folder the client is installed in), installed from npm into the test cache when missing."""
    node, _ = conformance
    manifest = Path("node_modules") / "@modelcontextprotocol" / "client" / "package.json"

    def ready(home: Path) -> bool:
        return (home / manifest).exists() and json.loads((home / manifest).read_text())["version"] == VERSION

    home = installed(f"mcp-ts-client-{VERSION}", (f"{CLIENT}@{VERSION}",), ready, module=True)
    return node, home


@pytest.fixture(scope="module")
def server(redis_url) -> Iterator[str]:  # noqa: F811
    # gunicorn keeps an idle connection longer than Node's fetch (undici: 4 s) does, so the client
    # never sends a request on a connection the server is closing ("other side closed")
    base, proc = start(f"tests.apps.mcp_features_app:create_app(storage={redis_url!r})", workers=2, threads=8,
                       ready="/notes/mcp", env={"GUNICORN_CMD_ARGS": "--keep-alive 30"})
    try:
        yield base
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def heard(ts_client: tuple[Path, Path], server: str) -> dict[str, Any]:
    """What the client saw, per negotiation mode (``auto``, ``legacy``)."""
    node, home = ts_client
    script = home / "features.mjs"  # beside its node_modules, where Node resolves the import
    script.write_text(SCRIPT)
    run = subprocess.run([str(node), str(script), server, NOTE_URI], cwd=home, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300, stdin=subprocess.DEVNULL)
    lines = [line[len(MARKER):] for line in run.stdout.splitlines() if line.startswith(MARKER)]
    assert run.returncode == 0 and lines, run.stdout[-4000:]
    out: dict[str, Any] = json.loads(lines[-1])
    return out


ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_the_ts_client_lists_and_gets_prompts_with_arguments(heard, mode: str, version: str) -> None:
    prompts = heard[mode]["prompts"]
    assert prompts["version"] == version
    assert prompts["prompts"] == [["code_review", ["code", "language"]], ["plan_trip", ["country", "city", "days"]],
                                  ["greeting", []], ["describe_chart", ["report_id"]]]  # not the admins' audit
    assert prompts["review"] == ["user: Please review this rust code:\nprint(1)"]
    assert prompts["trip"] == ["user: Plan 2 days in Parma, Italy.", "assistant: Happy to. What do you enjoy most?"]


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_the_ts_client_completes_prompt_arguments_and_template_variables(heard, mode: str, version: str) -> None:
    prompts = heard[mode]["prompts"]
    assert prompts["cities"] == {"values": ["Palermo", "Parma"], "total": 2, "hasMore": False}  # Italy's only
    assert prompts["languages"] == {"values": ["rust"], "total": 1, "hasMore": False}  # off the Literal
    assert prompts["reports"] == {"values": ["99", *(f"99{n}" for n in range(10))], "total": 11, "hasMore": False}


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_the_ts_clients_handlers_answer_a_tool_that_elicits_twice(heard, mode: str, version: str) -> None:
    for trip in heard[mode]["asking"]:
        assert trip["version"] == version
        assert trip["asked"] == ["Who travels?", "Which colour of suitcase?", "A motto for a 4-day trip"]
        assert trip["isError"] is False
        assert trip["text"] == "Grace: 4 days, a red suitcase, 'Travel light'"


def test_a_2026_ts_listener_hears_a_resource_update_and_a_tool_list_change(heard) -> None:
    sub = heard["auto"]["subscription"]
    assert sub["version"] == "2026-07-28"
    assert sub["honored"] == {"toolsListChanged": True, "resourceSubscriptions": [NOTE_URI]}  # not an unknown URI
    assert sub["updated"] == ["updated", NOTE_URI]
    assert sub["text"] == "buy milk"
    assert sub["changed"] == ["tools/list_changed"]
    assert sub["closed"] == "local"


def test_a_handshake_era_ts_subscriber_hears_an_update_until_it_unsubscribes(heard) -> None:
    sub = heard["legacy"]["subscription"]
    assert sub["version"] == "2025-11-25"
    assert sub["subscribe"] is True
    assert sub["updated"] == ["updated", NOTE_URI]
    assert sub["text"] == "call Ann"
    assert sub["afterUnsubscribe"] == []


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_the_ts_clients_list_changed_option_reads_the_tools_again_when_told(heard, mode: str, version: str) -> None:
    changes = heard[mode]["toolListChanges"]
    assert changes["version"] == version
    assert changes["autoOpened"] is (mode == "auto")  # its own subscriptions/listen at 2026-07-28
    assert changes["tools"] == ["edit_note", "refresh_tools"]
