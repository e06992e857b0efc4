"""Documents that are not a dialect's own: an OpenAI function-calling tool list, the OpenAPI 3.1
document of one mounted dialect's call routes (as the ``openapi`` dialect serves it), and the tools
as a target accepts them (``flask tools export --target NAME``)."""

from __future__ import annotations

import re
from typing import Any

from ..dialects.openapi import NAME, describe
from ..lint.check import dialect_of, mounted
from ..lint.targets import Target
from ..schema.json_schema import inline_refs
from ..serving.root import Root

_OPENAI_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def openai_tools(ext: Any) -> list[dict[str, Any]]:
    """The tools as OpenAI's function-calling ``tools`` list: those a model may call (not one only
    an interface calls, ``visibility=["app"]``)."""
    out = []
    for tool in ext.tools().latest():
        if not tool.model_visible:
            continue
        parameters = inline_refs(tool.input_schema or {"type": "object", "properties": {}})
        parameters.setdefault("type", "object")
        parameters.pop("$schema", None)
        out.append({"type": "function", "function": {
            "name": _OPENAI_NAME.sub("_", tool.name)[:64],
            "description": tool.description or tool.title or tool.name,
            "parameters": parameters,
        }})
    return out


def openapi_document(ext: Any, server_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the call routes of the dialect ``TOOLDISCOVERY_OPENAPI_DIALECT``
    names (:func:`~..dialects.openapi.describe`); ``ValueError`` when that dialect is not mounted
    or describes no routes."""
    return describe(ext.pipeline(NAME), server_url)


def target_notes(ext: Any, target: Target) -> list[str]:
    """What ``export --target`` could not derive for ``target`` (to say on stderr)."""
    if target.export_notes is None:
        return []
    return target.export_notes(ext.tools().latest(), ext.settings, mounted(ext))


def for_target(ext: Any, target: Target, root: Root) -> Any:
    """The tool list (or discovery document, as served at ``root``) ``target`` accepts, its schemas
    simplified. A model vendor's list (``target.tool_list``) leaves out the tools only an interface
    calls (``visibility=["app"]``): it is handed to a model."""
    tools = ext.tools().latest()
    if target.tool_list is not None:
        return target.tool_list([t for t in tools if t.model_visible], target)
    dialect = ext.dialect(str(dialect_of(ext, target)))
    assert dialect.export_document is not None, f"{dialect.name} declares a target but no export_document"
    document = dialect.export_document(ext.pipeline(dialect.name), root)
    return target.rewrite(document, {t.name: t for t in tools}) if target.rewrite is not None else document
