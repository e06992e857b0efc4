"""The explorer's prompts API, for the page's prompts list a developer can try:

``GET /prompts`` lists them as MCP's ``prompts/list`` shows them (name, title, description,
arguments, icons); ``POST /prompts/<name>/get`` takes the arguments (a JSON object of strings) and
answers ``{description, messages}``, each message MCP-shaped; ``POST /prompts/<name>/complete``
takes ``{argument, value, arguments}`` and answers ``{values, total, hasMore}``. Getting and
completing run the app's code, so they need ``TOOLDISCOVERY_ALLOW_EXECUTE`` as calls do (403
otherwise). Errors are the explorer's ``{"error": message}``: 400 for arguments that do not fit,
404 for a prompt the caller may not see, 500 (logged, no details) when the prompt fails."""

from __future__ import annotations

from typing import Any

from flask import Response

from ...catalog import Prompt, is_embedded
from ...errors import BadRequest, Forbidden, InvalidPromptArguments, NoSuchPrompt, NotFound, UnknownArgument
from ...observe.logs import log
from ...serving.pipeline import Pipeline
from ...serving.wire import json_response
from ...tools.model import ToolError
from ...tools.questions import CannotAsk
from ..content_blocks import LATEST, content_block


def shown(prompt: Prompt) -> dict[str, Any]:
    """A prompt as the list shows it (MCP's ``Prompt``)."""
    entry: dict[str, Any] = {"name": prompt.name, "title": prompt.title, "description": prompt.description,
                             "arguments": [{"name": a.name, "description": a.description, "required": a.required}
                                           for a in prompt.arguments]}
    if prompt.icons:
        entry["icons"] = [dict(icon) for icon in prompt.icons]
    return {k: v for k, v in entry.items() if v is not None}


def add_routes(pipe: Pipeline, allow_execute: bool) -> None:
    """The prompts routes on the explorer's blueprint."""

    def find(name: str) -> Prompt:
        if not allow_execute:
            raise Forbidden("Running prompts is disabled (TOOLDISCOVERY_ALLOW_EXECUTE).")
        try:
            return pipe.core.prompts.find(name, pipe.identity)
        except NoSuchPrompt:
            raise NotFound(f"Unknown prompt: {name}") from None

    def body() -> dict[str, Any]:
        given = pipe.body()
        if given is None:
            return {}
        if not isinstance(given, dict):
            raise BadRequest("The body is a JSON object.")
        return given

    @pipe.route("/prompts", "discovery", ["GET"], endpoint="list_prompts", guard_methods=False)
    def list_prompts() -> Response:
        return json_response({"prompts": [shown(p) for p in pipe.core.prompts.visible_to(pipe.identity)]})

    @pipe.route("/prompts/<path:prompt>/get", "call", ["POST"], endpoint="get_prompt", guard_methods=False)
    def get_prompt(prompt: str) -> Response:
        return pipe.admitted(lambda: render(find(prompt)))

    def render(prompt: Prompt) -> Response:
        name, arguments = prompt.name, body()
        try:
            with pipe.core.slots.hold():
                rendered = prompt.render(arguments, pipe.context())
        except InvalidPromptArguments as exc:
            return json_response({"error": str(exc)}, 400)
        except ToolError as exc:
            return json_response({"error": exc.message}, 500)
        except CannotAsk as exc:  # it asks its caller (an MCP client can answer; this page cannot)
            return json_response({"error": f"This prompt asks its caller, which the explorer cannot answer: {exc}"},
                                 422)
        except Exception:  # the prompt's bug: logged, not sent
            log.exception("explorer: prompt %s failed (trace_id=%s)", name, pipe.trace_id)
            return json_response({"error": "The prompt failed."}, 500)
        messages = [{"role": m["role"], "content": dict(m["content"]) if is_embedded(m["content"])
                     else content_block(m["content"], LATEST)} for m in rendered]
        return json_response({"description": prompt.description, "messages": messages})

    @pipe.route("/prompts/<path:prompt>/complete", "call", ["POST"], endpoint="complete_prompt", guard_methods=False)
    def complete_prompt(prompt: str) -> Response:
        return pipe.admitted(lambda: complete(find(prompt)))

    def complete(prompt: Prompt) -> Response:
        given = body()
        argument, value, chosen = given.get("argument"), given.get("value", ""), given.get("arguments") or {}
        if not isinstance(argument, str) or not isinstance(value, str) or not isinstance(chosen, dict):
            raise BadRequest("Send {argument: name, value: text, arguments: {name: value}}.")
        try:
            found = prompt.complete(argument, value, {str(k): str(v) for k, v in chosen.items()}, pipe.context())
        except UnknownArgument as exc:
            return json_response({"error": str(exc)}, 400)
        except ToolError as exc:
            return json_response({"error": exc.message}, 500)
        return json_response({"values": list(found.values), "total": found.total, "hasMore": found.has_more})


__all__ = ["add_routes", "shown"]
