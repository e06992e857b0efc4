"""MCP completion: the ``completions`` capability and ``completion/complete``, suggestions for a
prompt's argument (``ref/prompt``) or a resource template's variable (``ref/resource``, when
``TOOLDISCOVERY_MCP_RESOURCES`` is on), from the completer declared beside the prompt or resource
or the values of its ``Literal``/``Enum`` annotation (:mod:`...catalog.completion`). At most 100
values go back, with ``total`` and ``hasMore``; what the caller may not see is unknown to it."""

from __future__ import annotations

from typing import Any

from ...catalog import Completion, PromptRegistry, ResourceRegistry
from ...errors import NoSuchPrompt, NoSuchResource, UnknownArgument
from ...serving.pipeline import Pipeline
from ...settings import Settings
from ...tools.model import ToolError
from . import jsonrpc as rpc
from .request import Handler, McpRequest
from .settings import McpSettings

METHOD = "completion/complete"


def _templates(settings: Settings, resources: ResourceRegistry) -> bool:
    return McpSettings.of(settings).resources and any(r.is_template for r in resources)


def capability(settings: Settings, prompts: PromptRegistry, resources: ResourceRegistry) -> dict[str, Any]:
    """``completions`` when there is something to complete: a prompt, or a served resource template."""
    return {"completions": {}} if len(prompts) or _templates(settings, resources) else {}


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise rpc.RpcError(rpc.INVALID_PARAMS, f"completion/complete needs {what} (a string).")
    return value


def answer(found: Completion) -> dict[str, Any]:
    """A ``CompleteResult``."""
    return {"completion": {"values": list(found.values), "total": found.total, "hasMore": found.has_more}}


def methods(pipe: Pipeline) -> dict[str, Handler]:
    """``completion/complete`` for the MCP method table (-32601 while there is nothing to complete)."""
    core = pipe.core

    def complete(req: McpRequest) -> dict[str, Any]:
        params = req.params
        if not capability(pipe.settings, core.prompts, core.resources):
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, "Method not found: this server offers no completions")
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "completion/complete needs params.ref, of type 'ref/prompt' "
                               "or 'ref/resource'.")
        if not isinstance(argument, dict):
            raise rpc.RpcError(rpc.INVALID_PARAMS, "completion/complete needs params.argument {name, value}.")
        name, value = _text(argument.get("name"), "argument.name"), _text(argument.get("value"), "argument.value")
        given = params.get("context")
        chosen = given.get("arguments") if isinstance(given, dict) else None
        chosen = {str(k): v for k, v in chosen.items() if isinstance(v, str)} if isinstance(chosen, dict) else {}
        meta = params.get("_meta")
        context = pipe.context(extra={"meta": meta if isinstance(meta, dict) else {}})
        try:
            if ref["type"] == "ref/prompt":
                prompt = core.prompts.find(_text(ref.get("name"), "ref.name"), pipe.identity)
                return answer(prompt.complete(name, value, chosen, context))
            uri = _text(ref.get("uri"), "ref.uri")
            if not _templates(pipe.settings, core.resources):
                raise NoSuchResource(uri)
            return answer(core.resources.template(uri, pipe.identity).complete(name, value, chosen, context))
        except NoSuchPrompt as exc:
            raise rpc.RpcError(rpc.INVALID_PARAMS, str(exc), {"name": exc.name}) from None
        except NoSuchResource as exc:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "Resource not found", {"uri": exc.uri}) from None
        except UnknownArgument as exc:
            raise rpc.RpcError(rpc.INVALID_PARAMS, str(exc)) from None
        except ToolError as exc:  # the app's own refusal, in its words
            raise rpc.RpcError(rpc.INTERNAL_ERROR, exc.message) from None

    return {METHOD: complete}


__all__ = ["METHOD", "answer", "capability", "methods"]
