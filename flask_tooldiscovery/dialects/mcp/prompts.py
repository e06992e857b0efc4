"""MCP prompts: the ``prompts`` capability and the ``prompts/list`` and ``prompts/get`` methods over
the prompts the app registered with ``@discovery.prompt`` (:mod:`...catalog.prompts`), served as soon
as one is. Lists are paged as ``tools/list`` is (``TOOLDISCOVERY_MCP_PAGE_SIZE``) and carry the
same cache hints in the stateless era; each caller sees the prompts its scopes allow. Errors are the
spec's: an unknown prompt and arguments that do not fit it are -32602, a prompt's own
:class:`~...tools.model.ToolError` is -32603 in its words."""

from __future__ import annotations

from typing import Any

from ...catalog import Prompt, PromptRegistry, is_embedded
from ...errors import InvalidPromptArguments, NoSuchPrompt
from ...serving.pipeline import Pipeline
from ...serving.wire import page_cursor, read_cursor
from ...tools.model import ToolError
from ..content_blocks import content_block
from . import jsonrpc as rpc
from . import revisions
from .asking import asking
from .content import forms_of
from .request import Handler, McpRequest
from .settings import McpSettings

METHODS = ("prompts/list", "prompts/get")


def capability(prompts: PromptRegistry) -> dict[str, Any]:
    """The ``prompts`` capability when the app registered a prompt: ``listChanged`` false here, made
    true by :func:`.subscriptions.capabilities` in both eras when subscriptions are on (a prompt
    registered while the app runs, or ``discovery.list_changed("prompts")``, then reaches listening
    clients on every worker); without them no client would hear of a change."""
    return {"prompts": {"listChanged": False}} if len(prompts) else {}


def listed(prompt: Prompt) -> dict[str, Any]:
    """A prompt as ``prompts/list`` shows it."""
    entry: dict[str, Any] = {"name": prompt.name}
    if prompt.title:
        entry["title"] = prompt.title
    if prompt.description:
        entry["description"] = prompt.description
    if prompt.arguments:
        entry["arguments"] = [{"name": a.name, **({"description": a.description} if a.description else {}),
                               "required": a.required} for a in prompt.arguments]
    if prompt.icons:
        entry["icons"] = [dict(icon) for icon in prompt.icons]
    return entry


def message_block(content: Any, version: str) -> dict[str, Any]:
    """A canonical message's content as an MCP content block, in the form ``version`` knows."""
    return dict(content) if is_embedded(content) else content_block(content, forms_of(version))


def methods(pipe: Pipeline) -> dict[str, Handler]:
    """The prompts methods for the MCP method table (-32601 while the app has no prompt)."""
    registry, size = pipe.core.prompts, McpSettings.of(pipe.settings).page_size

    def served(req: McpRequest) -> dict[str, Any]:
        if not len(registry):
            raise rpc.RpcError(rpc.METHOD_NOT_FOUND, "Method not found: this server offers no prompts")
        return req.params

    def list_prompts(req: McpRequest) -> dict[str, Any]:
        params = served(req)
        prompts = registry.visible_to(pipe.identity)
        try:
            start = read_cursor(params["cursor"], len(prompts)) if params.get("cursor") is not None else 0
        except ValueError:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "Invalid cursor.") from None
        result: dict[str, Any] = {"prompts": [listed(p) for p in prompts[start:start + size]]}
        if start + size < len(prompts):
            result["nextCursor"] = page_cursor(start + size)
        if revisions.has_cache_hints(req.revision):  # as tools/list: fresh for no time, for this caller only
            result.update(ttlMs=0, cacheScope="private")
        return result

    def get_prompt(req: McpRequest) -> dict[str, Any]:
        params = served(req)
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "prompts/get needs params.name (a string).")
        try:
            prompt = registry.find(name, pipe.identity)
            arguments = params.get("arguments")
            rendered = asking(pipe, req, prompt.name, arguments if isinstance(arguments, dict) else None,
                              lambda context: prompt.render(arguments, context), f"Prompt {prompt.name!r}",
                              {"name": prompt.name})
        except NoSuchPrompt as exc:
            raise rpc.RpcError(rpc.INVALID_PARAMS, str(exc), {"name": name}) from None
        except InvalidPromptArguments as exc:
            raise rpc.RpcError(rpc.INVALID_PARAMS, str(exc), {"name": name}) from None
        except ToolError as exc:  # the app's own refusal, in its words
            raise rpc.RpcError(rpc.INTERNAL_ERROR, exc.message, {"name": name}) from None
        if isinstance(rendered, dict):  # the InputRequiredResult of a prompt that asks its caller
            return rendered
        result: dict[str, Any] = {"description": prompt.description} if prompt.description else {}
        result["messages"] = [{"role": m["role"], "content": message_block(m["content"], req.revision)}
                              for m in rendered.value]
        return result

    return {"prompts/list": list_prompts, "prompts/get": get_prompt}


__all__ = ["METHODS", "capability", "listed", "message_block", "methods"]
