"""The explorer's preview of tool UIs: ``GET /tools/<name>/ui`` serves a tool's interface (the same HTML
MCP hosts read) under the CSP its declaration asks for, for the page's sandboxed iframe; the page's
``ui-host.js`` speaks MCP Apps' postMessage protocol to it (tool input, tool result, calls of
app-only tools through this dialect's call route, with the page's credentials). The detail of a
tool says where its interface is (``ui``); summaries and details carry a declared ``visibility``.

The frame cannot send the page's credentials, so the route serves a tool's UI only when a caller
without credentials sees the tool in the explorer's list (as the pipeline decides it:
:meth:`~...serving.pipeline.Pipeline.anonymous_tools`), or when the request carries a *grant* for
that very tool. The detail a caller gets of a tool it may see says where to frame the UI from
(``ui.url``); for a tool not everyone sees, that address carries a grant sealed with the app's
``SECRET_KEY`` (:func:`~...calls.approvals.sealer`, for this use only; ``SECRET_KEY_FALLBACKS``
still verify): the tool, its version and the explorer's mount, good for :data:`GRANT_TTL` seconds,
holding no secret. Anything else (an unknown tool, a hidden one, one without a UI, a bad, expired or
other tool's grant) is one and the same 404, so probing names teaches nothing. Without a secret
key, the UIs of tools everyone sees still preview; other tools' details carry no ``url``."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, request, url_for

from ...calls import Sealer, sealer
from ...catalog import UIError, render, ui_of, visibility_of
from ...errors import CoreError, InvalidApproval, NotFound, Unavailable
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from ...tools.providers import ProviderError

#: Seconds a grant to frame a tool's UI is good for (the page asks for a fresh one before each preview).
GRANT_TTL = 300
#: What a grant is sealed for: it opens as nothing else (an approval, a round of input requests).
GRANT_PURPOSE = "explorer-ui-grant"
#: The one answer to every UI this request may not have, whatever the reason.
NO_UI = "No tool UI here."


def visibility(tool: Tool) -> list[str] | None:
    """A tool's declared ``visibility`` (``None``: undeclared)."""
    declared = visibility_of(tool)
    return list(declared) if declared is not None else None


def interface(tool: Tool) -> dict[str, Any] | None:
    """Where a tool's interface is and how to frame it: its ``resourceUri``, the preferred size, the
    frame's ``allow`` (the permissions it asks for); ``None`` without one."""
    ui = ui_of(tool)
    if ui is None:
        return None
    found: dict[str, Any] = {"resourceUri": ui.resource_uri}
    if ui.preferred_size:
        found["preferredSize"] = {"width": ui.preferred_size[0], "height": ui.preferred_size[1]}
    if ui.permissions:
        found["allow"] = ui.permissions_policy()
    return found


def _sealer(pipe: Pipeline) -> Sealer | None:
    """The app's sealer of grants (``None`` without a ``SECRET_KEY``)."""
    try:
        return sealer(GRANT_TTL, pipe.settings.server_name, purpose=GRANT_PURPOSE, max_state=1024)
    except Unavailable:
        return None


def _granted_for(pipe: Pipeline) -> dict[str, str]:
    """What a grant names besides the tool: the explorer's mount."""
    return {"mount": pipe.prefix}


def _public(pipe: Pipeline, name: str) -> Tool | None:
    shown = pipe.anonymous_tools()
    return shown.get(name) if shown is not None else None


def frame_url(pipe: Pipeline, tool: Tool) -> tuple[str | None, bool]:
    """Where the page frames ``tool``'s UI from for this request's caller (who may see the tool),
    and whether that is the same for every caller: the route's own address when everyone sees the
    tool, else with a fresh grant; ``None`` without a UI, or without a ``SECRET_KEY`` to grant one."""
    if ui_of(tool) is None:
        return None, True
    public = _public(pipe, tool.name)
    if public is not None and public.version == tool.version:
        return url_for(".ui_preview", name=tool.name), True
    seal = _sealer(pipe)
    if seal is None:
        return None, True
    return url_for(".ui_preview", name=tool.name, grant=seal.seal(tool, _granted_for(pipe), None, "")), False


def with_url(detail: dict[str, Any], url: str | None) -> dict[str, Any]:
    """A tool's ``detail`` (never changed) with ``ui.url`` when there is one."""
    if url is None or not isinstance(detail.get("ui"), dict):
        return detail
    return {**detail, "ui": {**detail["ui"], "url": url}}


def _granted(pipe: Pipeline, tool: Tool | None, grant: str) -> Tool | None:
    """``tool``, if ``grant`` opens its UI: sealed here for it, unexpired."""
    seal = _sealer(pipe) if grant and tool is not None else None
    if tool is None or seal is None:
        return None
    try:
        seal.open(grant, tool, _granted_for(pipe), None)
    except InvalidApproval as exc:
        log.info("explorer: a UI grant refused: %s (trace_id=%s)", exc.reason, pipe.trace_id)
        return None
    return tool


def add_routes(pipe: Pipeline, bp: Blueprint) -> None:
    """``GET /tools/<name>/ui``: the tool's UI, an asset of the explorer page as its static files are
    (the request guard applies; the manifest does not list it), for a tool everyone sees or with a
    grant for it (``?grant=``); :data:`NO_UI` otherwise. The HTML is the same for every caller and
    holds nothing of any (:func:`~...catalog.ui.render`)."""

    @bp.get("/tools/<path:name>/ui", endpoint="ui_preview")
    def ui_preview(name: str) -> Response:
        shown = pipe.anonymous_tools()  # what anyone sees
        try:
            toolset = pipe.core.tools()
        except ProviderError:
            log.exception("explorer: a tools provider failed (trace_id=%s)", pipe.trace_id)
            raise Unavailable() from None
        tool = _granted(pipe, toolset.get(name), request.args.get("grant", "")) or \
            (shown.get(name) if shown is not None else None)
        ui = ui_of(tool) if tool is not None else None
        if tool is None or ui is None:
            raise NotFound(NO_UI)
        # a shared UI names the tools it serves: those anyone sees and this one, never a hidden one
        viewable = [t for t in toolset.latest()
                    if t.name == tool.name or (shown is not None and shown.get(t.name) is not None)]
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        try:
            html = render(app, ui, viewable)
        except UIError as exc:
            log.error("explorer: %s (trace_id=%s)", exc, pipe.trace_id, exc_info=exc)
            raise CoreError("The tool's UI failed to render; the server log has the details.", status=500) from None
        response = Response(html, mimetype="text/html")
        response.headers["Content-Security-Policy"] = f"{ui.content_security_policy()}; frame-ancestors 'self'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"  # its address may hold a grant
        response.headers["Cache-Control"] = "no-store"
        return response


__all__ = ["GRANT_TTL", "NO_UI", "add_routes", "frame_url", "interface", "visibility", "with_url"]
