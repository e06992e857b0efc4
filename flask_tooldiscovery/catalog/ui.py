"""Tool UIs: a Jinja template of the app offered as a tool's interface (``@discovery.tool(ui=...)``),
and ``visibility`` (``["app"]``: a tool only such an interface calls).

One template is one UI resource (``ui://...``, HTML of type ``text/html;profile=mcp-app``) that MCP
Apps hosts, Opal and the explorer render in a sandboxed frame. The HTML is the same for every
caller: it is rendered with the app's Jinja environment (autoescaping on) outside any request, so
``request``, ``session`` and ``g`` hold nothing of a caller's; the data arrives in the frame
through the bridge (the tool's input and result, as MCP Apps' postMessage protocol carries them).
The bridge is the App class of npm ``@modelcontextprotocol/ext-apps`` (see
``static/tooldiscovery/ext-apps/README``), put in the page by ``{{ ui_bridge }}``: a module
script that defines ``window.McpApps`` (``new McpApps.App(...)``).
"""

from __future__ import annotations

import contextvars
import functools
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import UIError as UIError
from ..tools.function_tools import OptionRule, add_option_rule
from .proteus import PROTEUS_MIME_TYPE, as_proteus, check_proteus, proteus_error, proteus_of, render_proteus

if TYPE_CHECKING:  # pragma: no cover
    from flask import Flask
    from jinja2 import Environment

    from ..tools.model import Tool
    from ..tools.watchers import Checks

#: The MIME type of an MCP App's HTML (and of every UI resource served here).
MIME_TYPE = "text/html;profile=mcp-app"
#: ``visibility`` values: who may call the tool (MCP Apps' ``_meta.ui.visibility``).
AUDIENCES = ("model", "app")
#: CSP keys a UI declares (Python names) and their wire names (``_meta.ui.csp``).
CSP_KEYS = {"connect_domains": "connectDomains", "resource_domains": "resourceDomains",
            "frame_domains": "frameDomains", "base_uri_domains": "baseUriDomains"}
#: Browser features a UI may ask for (``_meta.ui.permissions``), and the Permissions Policy names.
PERMISSIONS = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation",
               "clipboard_write": "clipboard-write"}
_ORIGIN = re.compile(r"^(https?|wss?)://(\*\.)?[A-Za-z0-9.-]+(:\d+)?$")
BRIDGE = Path(__file__).resolve().parent.parent / "static" / "tooldiscovery" / "ext-apps" / "app-with-deps.js"
_ENV_KEY = "tooldiscovery.ui_env"
_LATER_KEY = "tooldiscovery.ui_later"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True)
class UI:
    """A tool's interface: the Jinja ``template`` (a name the app's template loader finds) and what
    the host should allow it.

    ``uri`` is its resource URI (default ``ui://`` + the template name); ``csp`` the origins it
    reaches, by kind (``connect_domains``, ``resource_domains``, ``frame_domains``,
    ``base_uri_domains``; none: the host's strict default); ``permissions`` the browser features it
    asks for (``camera``, ``microphone``, ``geolocation``, ``clipboard_write``); ``prefers_border``
    and ``domain`` as MCP Apps defines them; ``preferred_size`` ``(width, height)`` in pixels, the
    frame's size before the page reports its own (the explorer, Opal); ``context`` fixed values
    the template reads (the same for every caller)."""

    template: str
    uri: str | None = None
    name: str | None = None
    description: str | None = None
    csp: Mapping[str, Iterable[str]] = field(default_factory=dict)
    permissions: Iterable[str] = ()
    prefers_border: bool | None = None
    domain: str | None = None
    preferred_size: tuple[int, int] | None = None
    context: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.template, str) or not self.template.strip():
            raise ValueError("template must be a template name such as 'orders.html'")
        uri = self.uri or f"ui://{self.template}"
        if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) == len("ui://") or " " in uri:
            raise ValueError(f"uri must start with 'ui://' (not {uri!r})")
        object.__setattr__(self, "uri", uri)
        unknown = sorted(set(self.csp) - set(CSP_KEYS))
        if unknown:
            raise ValueError(f"csp keys are {', '.join(CSP_KEYS)}, not {', '.join(unknown)}")
        csp = {key: tuple(self.csp[key]) for key in CSP_KEYS if key in self.csp}
        bad = [o for origins in csp.values() for o in origins if not isinstance(o, str) or not _ORIGIN.match(o)]
        if bad:
            raise ValueError(f"csp origins are scheme://host[:port] (https, wss...), not {bad[0]!r}")
        object.__setattr__(self, "csp", csp)
        if isinstance(self.permissions, str) or sorted(set(self.permissions) - set(PERMISSIONS)):
            raise ValueError(f"permissions are a list among {', '.join(PERMISSIONS)}")
        object.__setattr__(self, "permissions", tuple(self.permissions))
        size = self.preferred_size
        if size is not None and (len(size) != 2 or not all(isinstance(n, int) and not isinstance(n, bool)
                                                            and 0 < n <= 10_000 for n in size)):
            raise ValueError("preferred_size is (width, height), whole pixels")
        if self.prefers_border is not None and not isinstance(self.prefers_border, bool):
            raise ValueError("prefers_border is True, False or None")
        if not isinstance(self.context, Mapping):
            raise ValueError("context is a dict of values the template reads")
        object.__setattr__(self, "context", dict(self.context))

    @property
    def resource_uri(self) -> str:
        return str(self.uri)

    @property
    def resource_name(self) -> str:
        return self.name or self.template

    def wire_meta(self) -> dict[str, Any]:
        """``_meta.ui`` of the resource: ``csp``, ``permissions``, ``domain``, ``prefersBorder``."""
        meta: dict[str, Any] = {}
        if self.csp:
            meta["csp"] = {CSP_KEYS[k]: list(v) for k, v in self.csp.items()}
        if self.permissions:
            meta["permissions"] = {_camel(p): {} for p in self.permissions}
        if self.domain:
            meta["domain"] = self.domain
        if self.prefers_border is not None:
            meta["prefersBorder"] = self.prefers_border
        return meta

    def content_security_policy(self) -> str:
        """The CSP the spec tells a host to build from ``csp`` (its strict default when empty)."""
        res = " ".join(self.csp.get("resource_domains", ()))
        connect = " ".join(self.csp.get("connect_domains", ()))
        frames = " ".join(self.csp.get("frame_domains", ())) or "'none'"
        base = " ".join(self.csp.get("base_uri_domains", ())) or "'self'"
        return "; ".join(part.strip() for part in (
            "default-src 'none'", f"script-src 'self' 'unsafe-inline' {res}", f"style-src 'self' 'unsafe-inline' {res}",
            f"connect-src 'self' {connect}", f"img-src 'self' data: {res}", f"font-src 'self' {res}",
            f"media-src 'self' data: {res}", f"frame-src {frames}", "object-src 'none'", f"base-uri {base}"))

    def permissions_policy(self) -> str:
        """The frame's ``allow`` attribute for the permissions asked."""
        return "; ".join(PERMISSIONS[p] for p in self.permissions)


def options_error(ui: Any, visibility: Any) -> str | None:
    """Why the ``ui`` / ``visibility`` options cannot work, or ``None``."""
    if ui is not None and not isinstance(ui, (str, UI)):
        return "ui must be a template name ('orders.html') or a UI(...)"
    if isinstance(ui, str):
        try:
            UI(ui)
        except ValueError as exc:
            return f"ui: {exc}"
    if visibility is not None and (isinstance(visibility, str) or not visibility
                                   or not set(visibility) <= set(AUDIENCES)):
        return "visibility must be a non-empty list among 'model' and 'app'"
    return None


def as_ui(value: str | UI) -> UI:
    """The :class:`UI` of a ``ui`` option (a template name is ``UI(name)``)."""
    return value if isinstance(value, UI) else UI(value)


def ui_of(tool: Tool) -> UI | None:
    """The tool's interface, or ``None``."""
    ui = tool.metadata.get("ui") if tool.metadata else None
    return ui if isinstance(ui, UI) else None


def visibility_of(tool: Tool) -> tuple[str, ...] | None:
    """The tool's declared ``visibility`` (``None``: undeclared, i.e. model and app)."""
    return tool.visibility


def model_visible(tool: Tool) -> bool:
    """False for a tool only an interface may call (``visibility`` without ``"model"``)."""
    return tool.model_visible


def resources_of(tools: Iterable[Tool]) -> dict[str, UI]:
    """The UI resources of ``tools`` by URI; :class:`UIError` when one URI names two different UIs."""
    found: dict[str, UI] = {}
    for tool in tools:
        ui = ui_of(tool)
        if ui is None:
            continue
        known = found.setdefault(ui.resource_uri, ui)
        if known != ui:
            raise UIError(f"tool {tool.name!r}: {ui.resource_uri} already names another UI ({known.template}); "
                          f"give one of them its own uri=")
    return found


def _environment(app: Flask) -> Environment:
    """The app's Jinja environment with autoescaping on for every template (shares its loader,
    filters and globals)."""
    env: Environment | None = app.extensions.get(_ENV_KEY)
    if env is None:
        env = app.extensions[_ENV_KEY] = app.jinja_env.overlay(autoescape=True)
    return env


def check_templates(app: Flask, tools: Iterable[Tool]) -> None:
    """``init_app``: every UI's template exists and parses (:class:`UIError` naming it otherwise)."""
    from jinja2 import TemplateError, TemplateNotFound

    env, tools = _environment(app), list(tools)
    for uri, ui in resources_of(tools).items():
        try:
            env.get_template(ui.template)
        except TemplateNotFound:
            raise UIError(f"UI {uri}: template {ui.template!r} not found by the app's template loader "
                          f"(templates/ of the app or its blueprints)") from None
        except TemplateError as exc:
            raise UIError(f"UI {uri}: template {ui.template!r} does not compile: {exc}") from None
    check_proteus(app, tools, ui_of)  # every native Opal UI's template renders a Proteus document


class _LaterTools:
    """Checks the UI template of each tool registered after ``init_app`` against one app (held
    weakly, as this check is by the registry: it lives in the app's extensions)."""

    def __init__(self, app: Flask) -> None:
        self._app = weakref.ref(app)

    def check(self, tool: object) -> None:
        app = self._app()
        if app is not None:
            check_templates(app, [cast("Tool", tool)])


def watch_templates(app: Flask, tools: Iterable[Tool], checks: Checks) -> None:
    """``init_app``: :func:`check_templates` of ``tools``, and of every tool the registry is asked
    about later (``checks``: its :class:`~...tools.watchers.Checks`), so that one registered after
    ``init_app`` with a missing template is refused at registration."""
    check_templates(app, tools)
    later = app.extensions[_LATER_KEY] = _LaterTools(app)
    checks.add(later.check)


@functools.lru_cache(maxsize=1)
def bridge_script() -> str:
    """The ext-apps App bundle as one module script defining ``window.McpApps`` (its exports)."""
    text = BRIDGE.read_text(encoding="utf-8")
    found = re.search(r"export\s*\{([^{}]*)\}\s*;?\s*$", text)
    if found is None or "</script" in text.lower():
        raise UIError(f"{BRIDGE.name}: not the ext-apps bundle this package expects")
    pairs = [part.strip().split(" as ") for part in found.group(1).split(",") if part.strip()]
    exports = ",".join(f"{alias.strip()}:{local.strip()}" for local, alias in pairs)
    return (f'<script type="module">{text[:found.start()]}\nwindow.McpApps=Object.freeze({{{exports}}});'
            f"\n</script>")


def render(app: Flask, ui: UI, tools: Iterable[Tool] = ()) -> str:
    """The UI's HTML, the same for every caller: rendered in an empty context (no request, no
    session, a fresh ``g``) with the tool(s) it serves, ``ui`` and ``ui_bridge`` (the bridge's
    script tag). :class:`UIError` when the template fails (its cause chained, for the log)."""
    from markupsafe import Markup

    served = [{"name": t.name, "title": t.title, "description": t.description} for t in tools if ui_of(t) == ui]
    values = {**ui.context, "ui": ui, "tool": served[0] if served else None, "tools": served,
              "ui_bridge": Markup(bridge_script())}

    def run() -> str:
        with app.app_context():
            return _environment(app).get_template(ui.template).render(values)

    try:
        return contextvars.Context().run(run)
    except Exception as exc:
        raise UIError(f"UI {ui.resource_uri}: template {ui.template!r} failed to render") from exc


def _options_error(options: Mapping[str, Any]) -> str | None:
    return options_error(options.get("ui"), options.get("visibility")) or proteus_error(options.get("proteus"))


def _keep_options(options: Mapping[str, Any], metadata: dict[str, Any]) -> None:
    if "ui" in metadata:
        metadata["ui"] = as_ui(metadata["ui"])
    if options.get("proteus") is not None:
        metadata["proteus"] = as_proteus(options["proteus"])


# A tool's ui, visibility and proteus options are checked and kept by the rules above.
add_option_rule(OptionRule(error=_options_error, keep=_keep_options))


__all__ = ["AUDIENCES", "MIME_TYPE", "PROTEUS_MIME_TYPE", "UI", "UIError", "as_proteus", "as_ui", "bridge_script",
           "check_templates", "model_visible", "options_error", "proteus_error", "proteus_of", "render",
           "render_proteus", "resources_of", "ui_of", "visibility_of"]
