"""How the conformance suite speaks each dialect: the dialect's own client driver
(:attr:`Dialect.driver <flask_tooldiscovery.dialects.Dialect.driver>`, the one ``flask tools check
--replay`` uses too), wrapped for a test client, with what the suite needs to know to set a dialect
up: the settings that require its own credentials and the headers that carry them, and the setting
that turns its execution off.

To run the suite against a dialect of your own, give its ``Dialect`` a driver, add a
:class:`Driver` for it to :data:`DRIVERS` (or pass one to the suite's ``driver`` fixture), and
``pytest tests/conformance`` checks it for every behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.dialects import BUILTIN, Dialect, load
from flask_tooldiscovery.dialects.driver import Driver as WireDriver
from flask_tooldiscovery.dialects.driver import Observation

#: What a call came to, whatever the wire said (the driver module lists the kinds).
Kind = str
Result = Observation


@dataclass
class Driver:
    """A dialect's client driver, speaking to an app through its test client."""

    dialect: Dialect
    #: Settings that require credentials, and the headers that carry them; None: no auth of its own.
    auth_config: dict[str, Any] | None = None
    auth_headers: dict[str, str] = field(default_factory=dict)
    #: The setting that turns execution off (None: always on).
    execute_setting: str | None = None

    @property
    def name(self) -> str:
        return self.dialect.name

    @property
    def wire(self) -> WireDriver:
        assert self.dialect.driver is not None, f"{self.name} declares no client driver"
        return self.dialect.driver

    def _prefix(self, client: FlaskClient | None) -> str:
        if client is not None:
            pipelines = ToolDiscovery.pipelines(client.application)
            if self.name in pipelines:
                return pipelines[self.name].prefix
        return self.dialect.default_prefix

    def discover(self, client: FlaskClient, **kw: Any) -> TestResponse:
        listing = self.wire.list_tools(self._prefix(client))
        return client.open(listing.path, method=listing.method, json=listing.json, **kw)

    def names(self, response: TestResponse) -> list[str]:
        return self.wire.tool_names(response.get_json())

    def call_path(self, tool: str, client: FlaskClient | None = None) -> str:
        return self.wire.call_path(self._prefix(client), tool)

    def call(self, client: FlaskClient, tool: str, args: Any, **kw: Any) -> TestResponse:
        settings = ToolDiscovery.state(client.application).settings
        request = self.wire.call_tool(self._prefix(client), tool, args, settings)
        return client.open(request.path, method=request.method, json=request.json, **kw)

    def result(self, response: TestResponse) -> Result:
        return self.wire.read(response.status_code, response.get_json(silent=True))


def _builtin(name: str, **extras: Any) -> Driver:
    return Driver(load(BUILTIN[name]), **extras)


DRIVERS: dict[str, Driver] = {
    "opal": _builtin("opal", auth_config={"TOOLDISCOVERY_OPAL_BEARER_TOKEN": "tok-opal"},
                     auth_headers={"Authorization": "Bearer tok-opal"}),
    "oxp": _builtin("oxp", auth_config={"TOOLDISCOVERY_OXP_API_KEY": "key-oxp"},
                    auth_headers={"OXP-API-Key": "key-oxp"}),
    "tdp": _builtin("tdp"),
    "explorer": _builtin("explorer", execute_setting="TOOLDISCOVERY_ALLOW_EXECUTE"),
    "mcp": _builtin("mcp", auth_config={"TOOLDISCOVERY_MCP_BEARER_TOKEN": "tok-mcp"},
                    auth_headers={"Authorization": "Bearer tok-mcp"}),
    "utcp": _builtin("utcp"),
}
