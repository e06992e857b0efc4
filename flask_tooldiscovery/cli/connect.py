"""``flask tools connect CLIENT``: what an MCP client needs to reach this app's MCP endpoint.

The configuration goes to stdout exactly as the client takes it (a JSON file's content, or the
command to run), so it can be parsed or pasted; where it goes and what it needs (a public HTTPS
address, a sign-in, the token) go to stderr. ``--toolset`` and ``--readonly`` point the client
at a part of the tools: a toolset's URL, the ``X-MCP-Toolsets`` header, the ``/readonly`` URL. A
credential is never printed: where the client needs one, the configuration names the environment
variable that holds it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import click
from flask import current_app
from flask.cli import with_appcontext

from ..dialects.mcp.auth import remote_auth
from ..dialects.mcp.choice import READONLY_HEADER, READONLY_SUFFIX, TOOLSETS_HEADER
from ..dialects.mcp.settings import McpSettings
from ..dialects.server_card import shorten

#: The registry's schema of ``server.json`` (the version its publisher takes today).
SERVER_JSON_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
DEFAULT_ROOT = "http://127.0.0.1:5000"
LOOPBACK = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Header:
    """The header a call needs: its name, the text before the secret, and the environment
    variable that holds the secret (named after the setting it comes from)."""

    name: str
    prefix: str
    variable: str

    def value(self, secret: str) -> str:
        return f"{self.prefix}{secret}"


@dataclass(frozen=True)
class Endpoint:
    """This app's MCP endpoint as a client configuration names it."""

    name: str
    url: str
    #: The header a static credential goes in (``None``: no static credential).
    header: Header | None
    #: Clients sign in by OAuth (the endpoint serves protected resource metadata).
    oauth: bool
    title: str
    description: str
    version: str
    #: Headers every request sends as they are (``X-MCP-Toolsets``: several toolsets chosen).
    chosen: tuple[tuple[str, str], ...] = ()

    @property
    def https(self) -> bool:
        return urlsplit(self.url).scheme == "https"

    @property
    def loopback(self) -> bool:
        return (urlsplit(self.url).hostname or "") in LOOPBACK


@dataclass(frozen=True)
class Snippet:
    """What one client takes (stdout) and what to do with it (stderr lines)."""

    text: str
    notes: list[str]


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _signing_in(endpoint: Endpoint) -> list[str]:
    """What the client's user does to be let in."""
    if endpoint.oauth:
        return ["The endpoint asks for OAuth: the client opens the sign-in page the first time it connects."]
    if endpoint.header is not None:
        return [f"Set {endpoint.header.variable} in the client's environment to the credential "
                f"({endpoint.header.name}: {endpoint.header.prefix}...); it is never printed here."]
    return []


def claude_desktop(endpoint: Endpoint) -> Snippet:
    """Claude Desktop starts local servers only: ``mcp-remote`` (Node) bridges to the URL; or, for
    an https URL Anthropic's servers reach, a Custom Connector."""
    args = ["-y", "mcp-remote", endpoint.url]
    if not endpoint.https and not endpoint.loopback:
        args.append("--allow-http")
    args += ["--transport", "http-only"]
    entry: dict[str, Any] = {"command": "npx", "args": args}
    for name, value in endpoint.chosen:
        args += ["--header", f"{name}:{value}"]
    if endpoint.header is not None and not endpoint.oauth:
        # The value travels in env: Claude Desktop splits an argument at its spaces on Windows.
        args += ["--header", f"{endpoint.header.name}:${{AUTH_HEADER}}"]
        entry["env"] = {"AUTH_HEADER": endpoint.header.value(f"<{endpoint.header.variable}>")}
    notes = ["claude_desktop_config.json (Settings > Developer > Edit Config; macOS: ~/Library/Application Support/"
             "Claude/, Windows: %APPDATA%\\Claude\\): merge this server into mcpServers, then restart Claude "
             "Desktop. It runs the mcp-remote bridge with npx: it needs Node.js on this computer."]
    if endpoint.header is not None and not endpoint.oauth:
        notes.append(f"Replace <{endpoint.header.variable}> with the credential: Claude Desktop does not read "
                     "it from the environment.")
    if endpoint.https:
        notes.append(f"Or, without Node: Settings > Connectors > Add custom connector, URL {endpoint.url}. Claude "
                     "reaches a connector from Anthropic's servers, so the URL must be public; it signs in by "
                     "OAuth or not at all (a static token is not a connector's sign-in).")
    else:
        notes.append("A Custom Connector (Settings > Connectors) needs a public https URL, which this is not: "
                     "see --url and the tunnel walkthrough in the docs (Connect clients).")
    if endpoint.oauth:  # a static credential was said above: Claude Desktop takes it written out
        notes += _signing_in(endpoint)
    return Snippet(_json({"mcpServers": {endpoint.name: entry}}), notes)


def claude_code(endpoint: Endpoint) -> Snippet:
    """``claude mcp add --transport http NAME URL``, the header read from the shell's environment."""
    words = ["claude", "mcp", "add", "--transport", "http", shlex.quote(endpoint.name), shlex.quote(endpoint.url)]
    for name, value in endpoint.chosen:
        words += ["--header", shlex.quote(f"{name}: {value}")]
    if endpoint.header is not None and not endpoint.oauth:
        words += ["--header", f'"{endpoint.header.name}: {endpoint.header.prefix}${endpoint.header.variable}"']
    notes = ["Run it in a shell (add --scope user to use the server in every project)."]
    return Snippet(" ".join(words), notes + _signing_in(endpoint))


def _headers(endpoint: Endpoint, reference: Callable[[str], str]) -> dict[str, Any]:
    headers = dict(endpoint.chosen)
    if endpoint.header is not None and not endpoint.oauth:
        headers[endpoint.header.name] = endpoint.header.value(reference(endpoint.header.variable))
    return {"headers": headers} if headers else {}


def cursor(endpoint: Endpoint) -> Snippet:
    """``~/.cursor/mcp.json`` (or ``.cursor/mcp.json`` in a project)."""
    entry = {"url": endpoint.url, **_headers(endpoint, lambda name: f"${{env:{name}}}")}
    where = "~/.cursor/mcp.json (every project) or .cursor/mcp.json (this one): merge this server into mcpServers."
    return Snippet(_json({"mcpServers": {endpoint.name: entry}}), [where, *_signing_in(endpoint)])


def vscode(endpoint: Endpoint) -> Snippet:
    """``.vscode/mcp.json``: the secret asked once by VS Code and kept in its secret storage."""
    document: dict[str, Any] = {"servers": {endpoint.name: {"type": "http", "url": endpoint.url}}}
    if endpoint.chosen:
        document["servers"][endpoint.name]["headers"] = dict(endpoint.chosen)
    if endpoint.header is not None and not endpoint.oauth:
        key = "tooldiscovery-token"
        document["inputs"] = [{"type": "promptString", "id": key, "password": True,
                               "description": f"{endpoint.header.variable} of {endpoint.title}"}]
        value = endpoint.header.value(f"${{input:{key}}}")
        document["servers"][endpoint.name]["headers"] = {**dict(endpoint.chosen), endpoint.header.name: value}
    notes = [".vscode/mcp.json in the workspace (or MCP: Open User Configuration): merge servers (and inputs)."]
    if endpoint.header is not None and not endpoint.oauth:
        notes.append(f"VS Code asks for the credential ({endpoint.header.variable}) once and keeps it.")
    return Snippet(_json(document), notes + (_signing_in(endpoint) if endpoint.oauth else []))


def windsurf(endpoint: Endpoint) -> Snippet:
    """``~/.codeium/windsurf/mcp_config.json``: a remote server is ``serverUrl``."""
    entry = {"serverUrl": endpoint.url, **_headers(endpoint, lambda name: f"${{env:{name}}}")}
    where = ("~/.codeium/windsurf/mcp_config.json (Windsurf: MCP servers > Configure): merge this server into "
             "mcpServers, then refresh.")
    return Snippet(_json({"mcpServers": {endpoint.name: entry}}), [where, *_signing_in(endpoint)])


def mcp_json(endpoint: Endpoint) -> Snippet:
    """The ``mcpServers`` form most clients read (Claude Code's ``.mcp.json`` among them)."""
    entry = {"type": "http", "url": endpoint.url, **_headers(endpoint, lambda name: f"${{{name}}}")}
    where = ("The generic mcpServers form (a project's .mcp.json, and clients that read the same shape); some "
             "clients name the URL key differently (Windsurf: serverUrl).")
    return Snippet(_json({"mcpServers": {endpoint.name: entry}}), [where, *_signing_in(endpoint)])


def server_json(endpoint: Endpoint) -> Snippet:
    """The MCP registry's ``server.json`` for a remote: the endpoint under ``remotes``."""
    remote: dict[str, Any] = {"type": "streamable-http", "url": endpoint.url}
    headers: list[dict[str, Any]] = [{"name": name, "value": value, "isRequired": True, "isSecret": False}
                                     for name, value in endpoint.chosen]
    if endpoint.header is not None and not endpoint.oauth:
        headers.append({"name": endpoint.header.name, "value": endpoint.header.value("{token}"),
                        "isRequired": True, "isSecret": True, "description": "The credential this server "
                        "issued you.", "variables": {"token": {"isRequired": True, "isSecret": True}}})
    if headers:
        remote["headers"] = headers
    document = {"$schema": SERVER_JSON_SCHEMA, "name": registry_name(endpoint), "title": shorten(endpoint.title),
                "description": shorten(endpoint.description), "version": endpoint.version, "remotes": [remote]}
    notes = ["server.json for the MCP registry: publish it with the registry's mcp-publisher (its name's namespace "
             "must be a domain or account you prove you own: TOOLDISCOVERY_SERVER_CARD_NAME sets the name)."]
    if not endpoint.https or endpoint.loopback:
        notes.append("The registry lists public servers: give --url the public https URL.")
    return Snippet(_json(document), notes)


#: The clients, by the name ``flask tools connect`` takes.
CLIENTS: dict[str, Callable[[Endpoint], Snippet]] = {
    "claude-desktop": claude_desktop, "claude-code": claude_code, "cursor": cursor, "vscode": vscode,
    "windsurf": windsurf, "mcp.json": mcp_json, "server.json": server_json,
}


def registry_name(endpoint: Endpoint) -> str:
    """``TOOLDISCOVERY_SERVER_CARD_NAME``, else the URL's host reversed, ``/``, the server's name."""
    named = current_app.config.get("TOOLDISCOVERY_SERVER_CARD_NAME")
    if isinstance(named, str) and named:
        return named
    host = re.sub(r"[^a-z0-9.-]", "-", urlsplit(endpoint.url).hostname or "localhost")
    return f"{'.'.join(reversed(host.split('.')))}/{endpoint.name}"[:200]


def server_name(settings: Any) -> str:
    """The name clients list the server under: ``TOOLDISCOVERY_SERVER_NAME`` when it is set, else
    the title, made a short identifier (``Acme tools`` -> ``acme-tools``)."""
    given = current_app.config.get("TOOLDISCOVERY_SERVER_NAME")
    source = given if isinstance(given, str) and given.strip() else settings.server_title
    return re.sub(r"[^a-z0-9_-]+", "-", source.lower()).strip("-")[:64] or "tools"


def default_url(prefix: str) -> str:
    """The endpoint's address when nothing names it whole: Flask's ``SERVER_NAME`` (with
    ``PREFERRED_URL_SCHEME`` and ``APPLICATION_ROOT``), else the development server's
    ``http://127.0.0.1:5000``; then the MCP prefix."""
    config = current_app.config
    if config.get("SERVER_NAME"):
        root = f"{config.get('PREFERRED_URL_SCHEME') or 'http'}://{config['SERVER_NAME']}"
        root += (config.get("APPLICATION_ROOT") or "/").rstrip("/")
    else:
        root = DEFAULT_ROOT
    return root + prefix


def credential(settings: Any) -> tuple[Header | None, bool]:
    """The static header a call of the MCP endpoint needs (``None``: none), and whether clients
    sign in by OAuth (an authorization server of ``MCP_AUTHORIZATION_SERVERS``, or the app itself
    with ``OAUTH_SERVER``), from the settings that give the endpoint its credentials: MCP's own,
    then the identity layer's (unless ``mcp`` is in ``OPEN_DIALECTS``)."""
    options = McpSettings.of(settings)
    oauth = remote_auth(settings).oauth  # MCP_AUTHORIZATION_SERVERS, or the app's own (OAUTH_SERVER)
    if options.bearer_token:
        return Header("Authorization", "Bearer ", "TOOLDISCOVERY_MCP_BEARER_TOKEN"), oauth
    if "mcp" in settings.open_dialects:
        return None, oauth
    if settings.bearer_token:
        return Header("Authorization", "Bearer ", "TOOLDISCOVERY_BEARER_TOKEN"), oauth
    if settings.api_key:
        return Header(settings.api_key_header, "", "TOOLDISCOVERY_API_KEY"), oauth
    if (settings.jwt_secret or settings.jwt_jwks_url) and not oauth:  # a JWT the app's sign-in issues
        return Header("Authorization", "Bearer ", "MCP_ACCESS_TOKEN"), oauth
    return None, oauth


def _checked_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{value!r} is not the endpoint's full address: http(s)://host/path, as "
                                 "https://tools.example.com/mcp")
    return value


def chosen(address: str, name: str, toolsets: tuple[str, ...], read_only: bool,
           mounted: dict[str, Any], readonly_mounts: bool) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """The address, the server's name and the headers that choose ``toolsets`` (and only the tools
    that read, when ``read_only``): one toolset mounted under MCP is its URL (``/mcp/x/issues``),
    several go in ``X-MCP-Toolsets``; read-only is the ``/readonly`` URL (or ``X-MCP-Readonly``
    when those mounts are off). ``mounted``: the app's toolsets, by name, with their MCP mounts."""
    names = list(dict.fromkeys(toolsets))
    if unknown := [n for n in names if n not in mounted]:
        there = ", ".join(sorted(mounted)) or "none (TOOLDISCOVERY_TOOLSETS declares them)"
        raise click.BadParameter(f"unknown toolset(s) {', '.join(map(repr, unknown))}; the toolsets are: {there}",
                                 param_hint="--toolset")
    headers: list[tuple[str, str]] = []
    if len(names) == 1 and "mcp" in mounted[names[0]]:
        address = f"{address.rstrip('/')}/x/{names[0]}"
    elif names:
        headers.append((TOOLSETS_HEADER, ",".join(names)))
    if read_only and readonly_mounts:
        address = f"{address.rstrip('/')}{READONLY_SUFFIX}"
    elif read_only:
        headers.append((READONLY_HEADER, "true"))
    name = "-".join([name, *names, *(["readonly"] if read_only else [])])[:64]
    return address, name, tuple(headers)


@click.command("connect")
@click.argument("client", metavar="CLIENT", type=click.Choice(list(CLIENTS)))
@click.option("--url", metavar="URL", callback=_checked_url,
              help="The MCP endpoint's public address (default: TOOLDISCOVERY_MCP_RESOURCE, else Flask's "
                   "SERVER_NAME, else http://127.0.0.1:5000, with the mcp prefix).")
@click.option("--toolset", "toolsets", metavar="NAME", multiple=True,
              help="Only the tools of this toolset (TOOLDISCOVERY_TOOLSETS); repeat it for several: one is its "
                   "URL (/mcp/x/NAME), several the X-MCP-Toolsets header.")
@click.option("--readonly", "read_only", is_flag=True,
              help="Only the tools annotated readOnlyHint: the /readonly URL (or the X-MCP-Readonly header).")
@with_appcontext
def connect(client: str, url: str | None, toolsets: tuple[str, ...] = (), read_only: bool = False) -> None:
    """Print what CLIENT needs to reach this app's MCP endpoint: its configuration on stdout, where it
    goes and what it needs on stderr. A credential is never printed; the configuration names it."""
    ext = current_app.extensions["tooldiscovery"]
    if "mcp" not in ext.pipelines():
        raise click.ClickException("this app serves no MCP endpoint: mount the mcp dialect (TOOLDISCOVERY_DIALECTS)")
    settings = ext.settings
    header, oauth = credential(settings)
    address = url or McpSettings.of(settings).resource or default_url(settings.prefixes["mcp"])
    address, name, headers = chosen(address, server_name(settings), toolsets, read_only,
                                    dict(ext.toolset_pipelines()), settings.readonly_mounts)
    description = settings.server_description or f"Tools from {settings.server_title}, over MCP."
    endpoint = Endpoint(name=name, url=address, header=header, oauth=oauth, title=settings.server_title,
                        description=description, version=settings.server_version, chosen=headers)
    snippet = CLIENTS[client](endpoint)
    click.echo(snippet.text)
    for note in snippet.notes:
        click.echo(note, err=True)


__all__ = ["CLIENTS", "SERVER_JSON_SCHEMA", "Endpoint", "Header", "Snippet", "chosen", "connect", "credential",
           "default_url", "registry_name", "server_name"]
