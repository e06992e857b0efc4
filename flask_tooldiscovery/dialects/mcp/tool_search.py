"""Tool search as MCP clients see it (``TOOLDISCOVERY_TOOL_SEARCH``): ``tools/list`` answers two
tools, ``search_tools`` (the core's search over what the caller may see, best first, each tool as
``tools/list`` would show it) and ``call_tool`` (runs the tool it names exactly as a direct
``tools/call`` would: the request is read as that call before anything else reads it), beside the
tools marked ``always_listed``. A client whose model has a small context then loads two tools'
schemas, not a thousand. The search itself is the core's (:meth:`Pipeline.search`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, NamedTuple

from flask import current_app
from flask.json.provider import DefaultJSONProvider

from ...errors import BadRequest, UnknownTool
from ...serving import wire
from ...serving.pipeline import Pipeline
from ...tools.model import Tool
from ...tools.registry import ToolSet
from . import apps
from . import jsonrpc as rpc
from .request import McpRequest

SEARCH = "search_tools"
CALL = "call_tool"

SEARCH_TOOL = Tool(
    name=SEARCH, title="Search tools",
    description=("Find the tools for a task among all this server's tools: describe what you want done in plain "
                 "words; the best matches come first, each with its input schema. Then run one with call_tool."),
    input_schema={"type": "object", "properties": {
        "query": {"type": "string", "description": "What you want done, in plain words.", "maxLength": 500},
        "limit": {"type": "integer", "description": "How many tools to answer (default 5).", "minimum": 1,
                  "maximum": 50, "default": 5}}, "required": ["query"]},
    output_schema={"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                   "required": ["tools"]},
    annotations={"title": "Search tools", "readOnlyHint": True, "openWorldHint": False},
)
CALL_TOOL = Tool(
    name=CALL, title="Call a tool",
    description=("Run a tool that search_tools found, by its name, with arguments that match its input schema."),
    input_schema={"type": "object", "properties": {
        "name": {"type": "string", "description": "The tool's name, as search_tools gave it."},
        "arguments": {"type": "object", "description": "The tool's arguments."}}, "required": ["name"]},
    annotations={"title": "Call a tool"},
    # Handshake era: a client may ask for a task; the tool it names decides (refused as directly).
    metadata={"task_support": "optional"},
)


def active(pipe: Pipeline, toolset: ToolSet) -> bool:
    """Whether ``tools/list`` answers the search tools for this tool set (the setting, and its size:
    the tools a model would be listed, not those only an interface calls)."""
    past = pipe.settings.tool_search
    return past is not None and len(toolset.for_model().latest()) > past


def listed(toolset: ToolSet, ui: bool = False) -> list[Tool]:
    """What ``tools/list`` shows when search is on: the two search tools, then the tools marked
    ``always_listed`` and, to a client that declared MCP Apps (``ui``), the tools only an interface
    calls (its host hides them from the model and lets an app call only what it listed; to any
    other client such a tool is not listed, ``always_listed`` or not). An app's own tool named like
    a search tool is not listed: ``call_tool`` with its name runs it (:func:`rewrite`,
    :meth:`Searches.answer`); a direct call of the name is the search tool's."""
    return [SEARCH_TOOL, CALL_TOOL, *(t for t in toolset.latest() if t.name not in (SEARCH, CALL) and (
        (t.metadata.get("always_listed") and t.model_visible) or (ui and not t.model_visible)))]


def rewrite(pipe: Pipeline, req: McpRequest) -> McpRequest:
    """``req`` read as the call it makes: a ``tools/call`` of ``call_tool`` becomes the call of the
    tool it names, with its arguments and every other param of the request (``_meta``, ``task``,
    ``requestState``, ``inputResponses``), and ``called_as`` saying it came through ``call_tool``:
    everything after this sees a direct call (approvals, questions, limits, tasks, streaming).
    Other requests, and a ``call_tool`` whose arguments name no tool, are ``req`` as it is (the
    call answers them)."""
    params = req.params
    if req.method != "tools/call" or params.get("name") != CALL or not active(pipe, toolset := pipe.tools()):
        return req
    arguments = params.get("arguments")
    if not isinstance(arguments, dict) or not isinstance(arguments.get("name"), str) \
            or (arguments["name"] == CALL and toolset.get(CALL) is None):  # not the app's own call_tool
        return req
    if not model_visible(toolset, arguments["name"]):  # only an interface calls it: unknown to the model
        return req
    # Every other param is the inner call's: _meta, task, requestState and inputResponses (a state
    # is sealed for the tool run and its arguments, so a round's answer reaches the round it asked).
    inner = {**{k: v for k, v in params.items() if k not in ("name", "arguments")},
             "name": arguments["name"], "arguments": arguments.get("arguments", {})}
    return replace(req, params=inner, called_as=CALL)


def model_visible(toolset: ToolSet, name: str) -> bool:
    """Whether the model may find or run tool ``name`` through search: not one only an interface
    calls (``visibility=["app"]``: an app's UI calls it with a direct ``tools/call``). A tool the
    caller cannot see counts as visible here: the direct call refuses it."""
    tool = toolset.get(name)
    return tool is None or tool.model_visible


class Shown(NamedTuple):
    """A found tool as ``search_tools`` answers it, made once per tool content (and era, interface
    and response encoding) by :class:`Searches`: :func:`shown_as`."""

    #: Its ``tools/list`` entry.
    entry: dict[str, Any]
    #: Its JSON text (``json.dumps``): the answer's text content is joined from these.
    text: str
    #: The entry as the response's encoder writes it, and the text as that encoder writes it
    #: inside a JSON string (without the quotes), in UTF-8: the response is joined from these
    #: (:meth:`Splice.join`); ``None`` when the encoder is not known (another JSON provider).
    encoded: bytes | None = None
    quoted: bytes | None = None


def shown_as(entry: dict[str, Any], dumps: Callable[[Any], str] | None = None) -> Shown:
    """A tool's :class:`Shown`, of its ``tools/list`` entry; with ``dumps``, the response's
    encoder, also as that encoder writes it."""
    text = json.dumps(entry)
    return Shown(entry, text) if dumps is None else \
        Shown(entry, text, dumps(entry).encode("utf-8"), dumps(text)[1:-1].encode("utf-8"))


class Searches:
    """``search_tools`` as one mount of the dialect answers it (:meth:`answer`), with what it makes
    once: each found tool's :class:`Shown` per era, interface and encoding, kept in the tool's own
    derived values (dropped with them when a shown field of the tool is assigned) and, for the tool
    set searched last, by name in a table of that set's (a changed tool makes a new set, which starts
    a new table); and, per era and encoding, the text around the tools in the answer (:class:`Splice`).

    ``entry(tool, stateless, ui)``: a tool as ``tools/list`` shows it; ``finish(result, stateless)``:
    what the era adds to a result."""

    def __init__(self, pipe: Pipeline, entry: Callable[[Tool, bool, bool], dict[str, Any]],
                 finish: Callable[[dict[str, Any], bool], dict[str, Any]]) -> None:
        self._pipe, self._entry, self._finish = pipe, entry, finish
        #: This mount's part of the key of a tool's :class:`Shown` in its derived values.
        self._own = object()
        #: By (era is stateless, ``ensure_ascii``): the answer's text around the tools, or
        #: ``None`` when the finished result does not begin as expected.
        self._splices: dict[tuple[bool, bool], Splice | None] = {}
        #: By (era is stateless, ``ui``, ``ensure_ascii`` or ``None``): the tool set searched last and
        #: the :class:`Shown` of its tools found, by name (a search's tools, without looking each up
        #: in the set and its derived values).
        self._last: dict[tuple[bool, bool, bool | None], tuple[ToolSet, dict[str, Shown]]] = {}

    def answer(self, req: McpRequest) -> rpc.Result | None:
        """The result of ``req``, a ``tools/call``, when it calls ``search_tools`` or is a
        ``call_tool`` that names no tool (``None``: the call is another tool's: ``req.called_as``,
        set by :func:`rewrite`, says whether it came through ``call_tool``). What cannot be searched
        or called is a tool error the model can read and mend (``isError``), not a protocol error.
        Each tool found is shown as ``tools/list`` shows it in the request's era, to its client
        (MCP Apps declared or not); with the app's JSON provider Flask's default one, the tools
        found are answered already encoded (:class:`.jsonrpc.Encoded`, finished for the era): the
        bytes it would write of the result, joined from each tool's texts made once instead of
        encoding the tools twice (the text content and ``structuredContent``) on every search."""
        params, pipe = req.params, self._pipe
        name = params.get("name")
        if name not in (SEARCH, CALL) or not active(pipe, toolset := pipe.tools()):
            return None
        if req.called_as == CALL and toolset.get(name) is not None:
            return None  # call_tool of the app's own tool of that name (:func:`listed`)
        arguments = params.get("arguments")
        if name == CALL:
            if isinstance(arguments, dict) and arguments.get("name") == CALL:  # a model wrapping its call twice
                return _error("call_tool runs the tool it names: give arguments.name the tool's own name (from "
                              "search_tools), not call_tool, and its arguments in arguments.arguments.")
            if isinstance(arguments, dict) and isinstance(arguments.get("name"), str):
                raise UnknownTool(arguments["name"])  # one only an interface calls (:func:`rewrite`)
            return _error("call_tool needs arguments.name (a tool's name, from search_tools) and "
                          "arguments.arguments (an object).")
        if not isinstance(arguments, dict):
            return _error("search_tools needs arguments.query (what you want done, in plain words).")
        try:
            limit = arguments.get("limit")
            if isinstance(limit, float) and limit.is_integer():
                limit = int(limit)  # 5.0 is an integer to JSON Schema (true and "5" are not)
            names = pipe.search_names(searched := toolset.for_model(), arguments.get("query"), limit)
        except BadRequest as exc:
            return _error(exc.message)
        stateless, ui = req.stateless, apps.shows_ui(req)
        provider = current_app._get_current_object().json  # type: ignore[attr-defined]  # (not the proxy's lookup)
        # Flask's default provider: its encoding is wire.dumps'
        known = provider if type(provider) is DefaultJSONProvider else None
        ascii_ = known is not None and bool(known.ensure_ascii)
        variant = (stateless, ui, None if known is None else ascii_)
        last = self._last.get(variant)
        if last is None or last[0] is not searched:  # (a set's content never changes: a changed tool makes a new set)
            last = self._last[variant] = (searched, {})
        by_name = last[1]
        entries: list[Shown] = []
        for name in names:
            shown = by_name.get(name)
            if shown is None:
                tool = searched.get(name)
                if tool is None:
                    continue
                derived = tool._derived  # (emptied when a shown field of the tool is assigned)
                shown = derived.get(key := (self._own, *variant))
                if shown is None:
                    shown = derived[key] = shown_as(self._entry(tool, stateless, ui),
                                                    None if known is None else partial(wire.dumps, provider=known))
                by_name[name] = shown
            entries.append(shown)
        if known is not None:
            splices = self._splices
            if (stateless, ascii_) not in splices:
                splices[(stateless, ascii_)] = _splice(partial(wire.dumps, provider=known),
                                                       lambda result: self._finish(result, stateless))
            splice = splices[(stateless, ascii_)]
            spliced = None if splice is None else splice.join(entries)
            if spliced is not None:
                return spliced
        # the text json.dumps({"tools": tools}) writes, of each tool's text made once (not per search)
        text = '{"tools": [' + ", ".join(shown.text for shown in entries) + "]}"
        return {"content": [{"type": "text", "text": text}],
                "structuredContent": {"tools": [s.entry for s in entries]}, "isError": False}


#: How the result :meth:`Searches.answer` finds begins, encoded (the text and the tools empty): the
#: texts of the tools found go where the two are empty.
_HEAD = '{"content": [{"type": "text", "text": ""}], "structuredContent": {"tools": []}, "isError": false'
_TEXT_AT, _TOOLS_AT = _HEAD.index('""') + 1, _HEAD.index("[]") + 1


class Splice(NamedTuple):
    """The encoded result of a search but the texts of the tools it found: what comes before their
    texts in the text content, between those and their entries in ``structuredContent``, and
    after the entries (:func:`_splice`), in UTF-8."""

    before: bytes
    between: bytes
    after: bytes

    def join(self, entries: list[Shown]) -> rpc.Encoded | None:
        """The encoded result of the tools ``entries`` (``None`` when one's texts were not made by
        the encoder this splice was made by)."""
        texts, tools = [self.before], [self.between]
        for shown in entries:
            text, tool = shown.quoted, shown.encoded
            if text is None or tool is None:
                return None
            texts.append(text)
            texts.append(b", ")
            tools.append(tool)
            tools.append(b", ")
        if entries:  # (no comma after the last)
            texts.pop()
            tools.pop()
        return rpc.Encoded(*texts, *tools, self.after)  # joined once, with the response's envelope


def _splice(dumps: Callable[[Any], str], finish: Callable[[dict[str, Any]], dict[str, Any]]) -> Splice | None:
    """The :class:`Splice` of results ``dumps`` writes once ``finish`` finished them: the finished
    result is encoded with the text and the tools empty, and the texts of the tools found go where
    ``dumps`` wrote them empty (it writes a list ``[`` items joined by ``, `` ``]``, and a string's
    characters one by one). ``None`` when the result does not begin as expected."""
    head = dumps(finish({"content": [{"type": "text", "text": ""}], "structuredContent": {"tools": []},
                         "isError": False}))
    if not head.startswith(_HEAD):
        return None
    return Splice((_HEAD[:_TEXT_AT] + dumps('{"tools": [')[1:-1]).encode("utf-8"),
                  (dumps("]}")[1:-1] + _HEAD[_TEXT_AT:_TOOLS_AT]).encode("utf-8"), head[_TOOLS_AT:].encode("utf-8"))


def _error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
