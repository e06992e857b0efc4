"""The example app's long-running and rich-result tools, as a client sees them."""

from __future__ import annotations

import base64
import json
import struct
import zlib

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
