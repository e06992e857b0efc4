"""The Skills extension (``io.modelcontextprotocol/skills``, SEP-2640) over the app's skills
(:mod:`...catalog.skills`): declared in the capabilities' ``extensions`` when the app serves any,
``skills/list`` (paginated) and ``skills/get`` answer ``Skill`` entries (the ``SKILL.md`` URI, its
frontmatter as written, every file with its ``sha256:`` digest and size, or ``"dynamic"``), and
``resources/read`` reads each ``skill://`` file as the bytes the digest covers. ``resources/list``
shows each skill's ``SKILL.md``. Resources are served for the skills even without
``TOOLDISCOVERY_MCP_RESOURCES`` (the extension needs the ``resources`` capability); no
``resources/directory/read`` (``directoryRead`` is not declared).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from ...catalog import Skill, SkillFile
from ...serving.pipeline import Pipeline
from ...serving.wire import page_cursor, read_cursor
from . import jsonrpc as rpc
from . import revisions
from .request import Handler, McpRequest
from .resources import not_found
from .settings import McpSettings

EXTENSION = "io.modelcontextprotocol/skills"
METHODS = ("skills/list", "skills/get")


def capabilities(pipe: Pipeline, offered: Mapping[str, Any]) -> dict[str, Any]:
    """``offered`` with the extension declared (and the ``resources`` capability it needs) when the
    app serves skills."""
    result = dict(offered)
    if not len(pipe.core.skills):
        return result
    result.setdefault("resources", {"subscribe": False, "listChanged": False})
    result["extensions"] = {**dict(result.get("extensions") or {}), EXTENSION: {}}
    return result


def entry(skill: Skill) -> dict[str, Any]:
    """A ``Skill`` entry, as ``skills/list`` and ``skills/get`` answer it."""
    resources: Any = "dynamic" if skill.dynamic else [
        {"uri": f.uri, "digest": f.digest, "size": f.size} for f in skill.files]
    return {"uri": skill.uri, "frontmatter": dict(skill.frontmatter), "resources": resources}


def contents(found: SkillFile) -> dict[str, Any]:
    """One skill file's ``resources/read`` contents: text when it is UTF-8 text, else a blob."""
    if found.mime_type.startswith("text/"):
        try:
            return {"uri": found.uri, "mimeType": found.mime_type, "text": found.data.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"uri": found.uri, "mimeType": found.mime_type, "blob": base64.b64encode(found.data).decode()}


def methods(pipe: Pipeline, resource_methods: Mapping[str, Handler]) -> dict[str, Handler]:
    """``resource_methods`` (the resources methods), with the skills methods and skill files read
    too when the app serves skills."""
    catalog = pipe.core.skills
    if not len(catalog):
        return dict(resource_methods)
    page_size = McpSettings.of(pipe.settings).page_size

    def cacheable(result: dict[str, Any], req: McpRequest) -> dict[str, Any]:
        return {**result, "ttlMs": 0, "cacheScope": "private"} if revisions.has_cache_hints(req.revision) else result

    def list_skills(req: McpRequest) -> dict[str, Any]:
        params, skills = req.params, list(catalog)
        try:
            start = read_cursor(params["cursor"], len(skills)) if params.get("cursor") is not None else 0
        except ValueError:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "Invalid cursor.") from None
        result: dict[str, Any] = {"skills": [entry(s) for s in skills[start:start + page_size]]}
        if start + page_size < len(skills):
            result["nextCursor"] = page_cursor(start + page_size)
        return cacheable(result, req)

    def get_skill(req: McpRequest) -> dict[str, Any]:
        uri = req.params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "skills/get needs params.uri (the URI of a skill's SKILL.md).")
        skill = catalog.skill(uri)
        if skill is None:
            raise rpc.RpcError(rpc.INVALID_PARAMS, f"No skill is served at {uri}")
        return cacheable({"skill": entry(skill)}, req)

    read_other, list_other = resource_methods.get("resources/read"), resource_methods.get("resources/list")

    def read(req: McpRequest) -> rpc.Result:
        uri = req.params.get("uri")
        found = catalog.file(uri) if isinstance(uri, str) else None
        if found is not None:
            return {"contents": [contents(found)]}
        if read_other is not None:
            return read_other(req)
        if not isinstance(uri, str) or not uri:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "resources/read needs params.uri (a string).")
        raise not_found(req, uri)

    def list_resources(req: McpRequest) -> rpc.Result:
        listed = list_other(req) if list_other is not None else {"resources": []}
        assert isinstance(listed, dict)
        shown = [{"uri": s.uri, "name": s.name, "description": s.description, "mimeType": "text/markdown"}
                 for s in catalog]
        return {**listed, "resources": [*listed.get("resources", []), *shown]}

    table: dict[str, Handler] = {**resource_methods, "skills/list": list_skills, "skills/get": get_skill,
                                    "resources/read": read, "resources/list": list_resources}
    if "resources/templates/list" not in resource_methods:
        table["resources/templates/list"] = lambda req: {"resourceTemplates": []}
    return table


__all__ = ["EXTENSION", "METHODS", "capabilities", "contents", "entry", "methods"]
