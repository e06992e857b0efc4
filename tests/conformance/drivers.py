"""How the conformance suite speaks each dialect: one :class:`Driver` per dialect.

A driver knows only its wire format: how to list tools, how to call one, and how to read the
answer back into a :class:`Result`. To run the suite against a dialect of your own, write a
driver for it, add it to :data:`DRIVERS` (or pass it to the suite's ``driver`` fixture), and
``pytest tests/conformance`` checks it for every behaviour.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

#: What a call came to, whatever the wire said: "ok", "invalid", "tool_error", "failure",
#: "unknown", "unavailable", "refused".
Kind = str


def _text_value(text: str) -> Any:
    """A text content block's value: JSON when it parses, else the text itself (a string result)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Result:
    kind: Kind
    value: Any = None
    message: str = ""


@dataclass
class Driver:
    name: str
    #: Settings that require credentials, and the headers that carry them; None: no auth of its own.
    auth_config: dict[str, Any] | None = None
    auth_headers: dict[str, str] = field(default_factory=dict)
    #: The setting that turns execution off (None: always on).
    execute_setting: str | None = None

    def discover(self, client: FlaskClient, **kw: Any) -> TestResponse:
        raise NotImplementedError

    def names(self, response: TestResponse) -> list[str]:
        raise NotImplementedError

    def call_path(self, tool: str) -> str:
        raise NotImplementedError

    def call_body(self, tool: str, args: Any) -> Any:
        raise NotImplementedError

    def call(self, client: FlaskClient, tool: str, args: Any, **kw: Any) -> TestResponse:
        return client.post(self.call_path(tool), json=self.call_body(tool, args), **kw)

    def result(self, response: TestResponse) -> Result:
        raise NotImplementedError


class Opal(Driver):
    def discover(self, client, **kw):
        return client.get("/opal/discovery", **kw)

    def names(self, response):
        return [f["name"] for f in response.get_json()["functions"]]

    def call_path(self, tool):
        return f"/opal/tools/{tool}"

    def call_body(self, tool, args):
        return {"parameters": args}

    def result(self, r):
        body = r.get_json()
        if r.status_code == 200:
            return Result("ok", body)
        kind = {400: "invalid" if "parameter_errors" in body else "malformed", 404: "unknown", 503: "unavailable",
                401: "refused", 413: "too_large", 415: "refused", 403: "refused",
                428: "needs_approval"}.get(r.status_code)
        if r.status_code == 500:
            kind = "failure" if body["error"].startswith("The tool failed with an unexpected") else "tool_error"
        return Result(kind or f"http {r.status_code}", message=body["error"])


class Oxp(Driver):
    def discover(self, client, **kw):
        return client.get("/oxp/tools", **kw)

    def names(self, response):
        return sorted({item["id"].split(".", 1)[1].split("@")[0] for item in response.get_json()["items"]})

    def call_path(self, tool):
        return "/oxp/tools/call"

    def call_body(self, tool, args):
        return {"request": {"tool_id": f"Conformance.{tool}", "input": args}}

    def result(self, r):
        body = r.get_json()
        if r.status_code == 200:
            res = body["result"]
            if res["success"]:
                return Result("ok", res["value"])
            message = res["error"]["message"]
            kind = "failure" if message.startswith("The tool failed with an unexpected") else "tool_error"
            return Result(kind, message=message)
        if r.status_code == 400:
            kind = "unknown" if body["message"].startswith("Tool not found") else "malformed"
        else:
            kind = {422: "invalid", 503: "unavailable", 401: "refused", 413: "too_large", 415: "refused",
                    403: "refused", 428: "needs_approval"}.get(r.status_code, f"http {r.status_code}")
        return Result(kind, message=body.get("message", ""))


class Tdp(Driver):
    def discover(self, client, **kw):
        return client.get("/api/v1/tools", **kw)

    def names(self, response):
        return [t["name"] for t in response.get_json()["tools"]]

    def call_path(self, tool):
        return "/api/v1/tools/execute"

    def call_body(self, tool, args):
        return {"tool_name": tool, "arguments": args}

    def result(self, r):
        body = r.get_json()
        if r.status_code == 200:
            value = body["result"]
            return Result("ok", value.get("value", value) if isinstance(value, dict) else value)
        message = body.get("error") if body.get("success") is False else body.get("message")
        if r.status_code == 500:
            kind = "failure" if message.startswith("The tool failed with an unexpected") else "tool_error"
        elif r.status_code == 400:
            kind = "malformed" if message.startswith("Malformed JSON") else "invalid"
        else:
            kind = {404: "unknown", 503: "unavailable", 401: "refused", 413: "too_large", 415: "refused",
                    403: "refused", 428: "needs_approval"}.get(r.status_code, f"http {r.status_code}")
        return Result(kind, message=str(message))


class Explorer(Driver):
    def discover(self, client, **kw):
        return client.get("/explorer/tools", **kw)

    def names(self, response):
        return [t["name"] for t in response.get_json()]

    def call_path(self, tool):
        return f"/explorer/tools/{tool}/call"

    def call_body(self, tool, args):
        return args

    def result(self, r):
        body = r.get_json()
        if r.status_code == 200 and body.get("isError") is False:
            return Result("ok", body["structuredContent"] if "structuredContent" in body
                          else _text_value(body["content"][0]["text"]))
        if "isError" in body:
            text = body["content"][0]["text"]
            if r.status_code == 400:
                return Result("invalid", message=text)
            return Result("failure" if text.startswith("The tool failed with an unexpected") else "tool_error",
                          message=text)
        kind = {400: "malformed", 404: "unknown", 503: "unavailable", 401: "refused", 403: "refused",
                413: "too_large", 415: "refused", 428: "needs_approval"}.get(r.status_code, f"http {r.status_code}")
        return Result(kind, message=body.get("error", ""))


class Mcp(Driver):
    def discover(self, client, **kw):
        return client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, **kw)

    def names(self, response):
        return [t["name"] for t in response.get_json()["result"]["tools"]]

    def call_path(self, tool):
        return "/mcp"

    def call_body(self, tool, args):
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}

    def result(self, r):
        body = r.get_json()
        if "result" in body:
            res = body["result"]
            text = res["content"][0]["text"]
            if not res["isError"]:
                structured = res.get("structuredContent")
                return Result("ok", structured.get("result", structured) if isinstance(structured, dict)
                              else _text_value(text))
            if text.startswith("Invalid arguments"):
                return Result("invalid", message=text)
            if "needs approval before it runs" in text:  # the handshake era cannot be asked
                return Result("needs_approval", message=text)
            return Result("failure" if text.startswith("The tool failed with an unexpected") else "tool_error",
                          message=text)
        code, message = body["error"]["code"], body["error"]["message"]
        if r.status_code in (401, 403, 415, 421):
            return Result("refused", message=message)
        if r.status_code == 413:
            return Result("too_large", message=message)
        kind = {-32602: "unknown" if message.startswith("Unknown tool") else "invalid", -32603: "unavailable",
                -32700: "malformed"}.get(code, f"rpc {code}")
        return Result(kind, message=message)


class Utcp(Driver):
    def discover(self, client, **kw):
        return client.get("/utcp", **kw)

    def names(self, response):
        return [t["name"] for t in response.get_json()["tools"]]

    def call_path(self, tool):
        return f"/utcp/tools/{tool}"

    def call_body(self, tool, args):
        return args

    def result(self, r):
        body = r.get_json()
        if r.status_code == 200:
            return Result("ok", body)
        kind = {400: "invalid" if "parameter_errors" in body else "malformed", 404: "unknown", 422: "tool_error",
                500: "failure", 503: "unavailable", 401: "refused", 403: "refused", 413: "too_large",
                415: "refused", 428: "needs_approval"}.get(r.status_code, f"http {r.status_code}")
        return Result(kind, message=body["error"])


DRIVERS: dict[str, Driver] = {
    "opal": Opal("opal", {"TOOLDISCOVERY_OPAL_BEARER_TOKEN": "tok-opal"}, {"Authorization": "Bearer tok-opal"}),
    "oxp": Oxp("oxp", {"TOOLDISCOVERY_OXP_API_KEY": "key-oxp"}, {"OXP-API-Key": "key-oxp"}),
    "tdp": Tdp("tdp"),
    "explorer": Explorer("explorer", execute_setting="TOOLDISCOVERY_ALLOW_EXECUTE"),
    "mcp": Mcp("mcp", {"TOOLDISCOVERY_MCP_BEARER_TOKEN": "tok-mcp"}, {"Authorization": "Bearer tok-mcp"}),
    "utcp": Utcp("utcp"),
}
