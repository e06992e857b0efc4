"""What an app registers besides tools: prompts, readable resources, Agent Skills, the completion
of their arguments, and the tool UIs (Jinja templates offered as a tool's interface).

This module is the catalog's face to the dialects, the only way a dialect reaches it: the serving
core hands a dialect the app's registries (``core.prompts``, ``core.resources``, ``core.skills``),
and the names below are what a dialect reads them with (the types of what they hold, and the tool
UIs' rendering). The modules behind it are the catalog's own."""

from .completion import Completion
from .prompts import Prompt, PromptRegistry, is_embedded
from .resources import Resource, ResourceRegistry
from .skills import Skill, SkillFile
from .ui import (
           MIME_TYPE,
           PROTEUS_MIME_TYPE,
           UI,
           UIError,
           proteus_of,
           render,
           render_proteus,
           resources_of,
           ui_of,
           visibility_of,
)

__all__ = ["MIME_TYPE", "PROTEUS_MIME_TYPE", "UI", "Completion", "Prompt", "PromptRegistry", "Resource",
           "ResourceRegistry", "Skill", "SkillFile", "UIError", "is_embedded", "proteus_of", "render", "render_proteus",
           "resources_of", "ui_of", "visibility_of"]
