"""The example app's long-running and rich-result tools, as a client sees them."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

SSE = {"Accept": "application/json, text/event-stream"}


def call(app: Flask, name: str, arguments: dict, meta: dict | None = None) -> tuple[str, str]:
    params = {"name": name, "arguments": arguments, **({"_meta": meta} if meta else {})}
    response = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                    "params": params}, headers=SSE)
    assert response.status_code == 200
    return response.mimetype, response.get_data(as_text=True)


def test_the_chart_is_a_png_with_one_bar_per_city(example_app: Flask) -> None:
    mimetype, body = call(example_app, "temperature_chart", {"cities": ["berlin", "lisbon", "oslo"]})
    assert mimetype == "application/json"
    block = json.loads(body)["result"]["content"][0]
    assert block["type"] == "image" and block["mimeType"] == "image/png"
    png = base64.b64decode(block["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (36, 40)
    idat = png.index(b"IDAT")
    size = struct.unpack(">I", png[idat - 4:idat])[0]
    pixels = zlib.decompress(png[idat + 4:idat + 4 + size])
    assert len(pixels) == height * (1 + 3 * width)
    bottom = pixels[-(3 * width):]  # the last row: every city warmer than 0 has a bar there
    assert bottom[0:3] == b"\x2b\x6c\xb0" and bottom[12 * 3:12 * 3 + 3] == b"\x2b\x6c\xb0"


def test_packing_reports_progress_to_a_streaming_client(example_app: Flask) -> None:
    mimetype, body = call(example_app, "pack_orders", {"count": 3}, {"progressToken": "t"})
    assert mimetype == "text/event-stream"
    messages = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
        (1, 3, "packed order 1 of 3"), (2, 3, "packed order 2 of 3"), (3, 3, "packed order 3 of 3")]
    assert messages[-1]["result"]["structuredContent"] == {"packed": 3}


# -- the example app on the command line ----------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def run_quietly(tmp_path: Path, *args: str, secret: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python *args`` in an empty folder, with this checkout importable and no FLASK_SECRET_KEY
    (unless ``secret``), as a user's shell would run it."""
    env = {k: v for k, v in os.environ.items() if k != "FLASK_SECRET_KEY" and not k.startswith("TOOLDISCOVERY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if secret:
        env["FLASK_SECRET_KEY"] = secret
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("command", [["list"], ["show", "add"], ["export", "opal"], ["check"],
                                     ["check", "--target", "claude-directory"], ["check", "--target", "chatgpt"],
                                     ["export", "--target", "gemini"]], ids=" ".join)
def test_read_only_tools_commands_print_no_warning(tmp_path: Path, command: list[str]) -> None:
    """``flask --app example_app tools list`` and its read-only siblings, on a fresh shell: their
    output, exit 0, and nothing on stderr (no FLASK_SECRET_KEY warning, no lint finding)."""
    done = run_quietly(tmp_path, "-m", "flask", "--app", "example_app", "tools", *command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert done.stdout.strip()


def test_the_wsgi_entry_point_warns_of_a_key_per_process_without_flask_secret_key(tmp_path: Path) -> None:
    """Several gunicorn workers each building the app would each seal approvals with a key of its
    own: the entry point gunicorn loads says so, once; with the key set it says nothing."""
    load = "import example_app.wsgi as w; print(w.app.name)"
    keyless = run_quietly(tmp_path, "-c", load)
    assert keyless.returncode == 0 and keyless.stdout.strip() == "example_app", keyless.stderr
    assert keyless.stderr.count("FLASK_SECRET_KEY is not set") == 1
    keyed = run_quietly(tmp_path, "-c", load, secret="a-key-every-worker-shares")
    assert keyed.returncode == 0 and "FLASK_SECRET_KEY" not in keyed.stderr, keyed.stderr


def test_order_status_has_the_order_card_as_its_ui(example_app: Flask) -> None:
    client = example_app.test_client()

    def rpc(method: str, params: dict, **headers: str) -> Any:
        return client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                           headers={**SSE, **headers})

    # a host that renders MCP Apps says so at initialize: its session id carries it
    ui = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    session = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"extensions": ui},
                                 "clientInfo": {"name": "host", "version": "1"}}).headers["Mcp-Session-Id"]
    listed = rpc("tools/list", {}, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    tools = {t["name"]: t for t in listed.get_json()["result"]["tools"]}
    assert tools["order_status"]["_meta"]["ui"] == {"resourceUri": "ui://example/order-card"}
    (card,) = rpc("resources/read", {"uri": "ui://example/order-card"}).get_json()["result"]["contents"]
    assert card["mimeType"] == "text/html;profile=mcp-app" and card["_meta"] == {"ui": {"prefersBorder": True}}
    assert "<h1 id=\"order\">Example shop order</h1>" in card["text"] and "window.McpApps=" in card["text"]
    detail = client.get("/explorer/tools/order_status").get_json()
    assert detail["ui"] == {"resourceUri": "ui://example/order-card", "preferredSize": {"width": 420, "height": 240},
                            "url": "/explorer/tools/order_status/ui"}  # a tool anyone sees: framed without a grant


def test_opal_reads_the_order_card_as_a_proteus_bridge(example_app: Flask) -> None:
    """Opal's ui_resource of order_status: a Proteus document (valid for the Opal SDK's model) whose
    Bridge frames the order card, and lists the order's fields where a host cannot frame it."""
    proteus = pytest.importorskip("opal_tools_sdk.proteus")
    client = example_app.test_client()
    (function,) = [f for f in client.get("/opal/discovery").get_json()["functions"] if f["name"] == "order_status"]
    read = client.post("/opal/resources/read", json={"uri": function["ui_resource"]}).get_json()
    assert read["mimeType"] == "application/vnd.opal.proteus+json"
    document = proteus.ProteusDocument.model_validate_json(read["text"])
    bridge = document.body.root.root
    assert isinstance(bridge, proteus.ProteusBridge) and bridge.resource == "ui://example/order-card"
    assert document.title.root == "Order status"
    lines = json.loads(read["text"])["body"]["fallback"]
    assert [line["children"]["children"][0] for line in lines] == ["Order id: ", "Status: ", "History: "]
    card = client.post("/opal/resources/read", json={"uri": bridge.resource}).get_json()
    assert card["mimeType"] == "text/html;profile=mcp-app" and "window.McpApps=" in card["text"]


def test_the_example_apps_prompt_attaches_its_chart(example_app) -> None:
    """MCP's prompts/get of the example app's briefing: the request text, then the chart as an image;
    its city is completed from the Literal, its audience by its completer."""
    client = example_app.test_client()

    def rpc(method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return client.post("/mcp", json=body, headers={"Accept": "application/json, text/event-stream"}).get_json()

    got = rpc("prompts/get", {"name": "weather_briefing", "arguments": {"city": "lisbon", "audience": "sailors"}})
    text, chart = (m["content"] for m in got["result"]["messages"])
    assert text["text"] == "Write a three-line weather briefing on Lisbon for sailors: it is 19.5 °C now."
    assert chart["type"] == "image" and chart["mimeType"] == "image/png"
    ref = {"type": "ref/prompt", "name": "weather_briefing"}
    city = rpc("completion/complete", {"ref": ref, "argument": {"name": "city", "value": "o"}})
    audience = rpc("completion/complete", {"ref": ref, "argument": {"name": "audience", "value": "s"}})
    assert city["result"]["completion"]["values"] == ["oslo"]
    assert audience["result"]["completion"]["values"] == ["sailors"]
