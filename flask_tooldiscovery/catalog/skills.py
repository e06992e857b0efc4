"""Agent Skills an app serves (the ``io.modelcontextprotocol/skills`` extension, SEP-2640): a skill
is a directory of files, at least a ``SKILL.md`` that begins with YAML frontmatter naming it
(``name``, ``description``), addressed as ``skill://<skill-path>/SKILL.md``; each file is a resource
``skill://<skill-path>/<file-path>`` with the SHA-256 digest and size of its bytes.

Two sources: a folder the app names (``TOOLDISCOVERY_SKILLS_DIR``: every directory under it holding
a ``SKILL.md`` is a skill, its path the directory's path under the folder, its files read once at
start, so any worker serves the same bytes), and ``@discovery.skill`` functions, whose ``SKILL.md``
is written on each read (``resources: "dynamic"``). No HTTP here: :mod:`..dialects.mcp.skills`
serves them.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schema.docstrings import parse_docstring
from ..settings import SettingsError
from ..tools.function_tools import RegistrationError

SCHEME = "skill://"
SKILL_FILE = "SKILL.md"
#: The Agent Skills rule for a skill's name: lowercase letters, digits and single hyphens, 1-64.
NAME = re.compile(r"^(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)$")
#: What every host accepts of one skill (SEP-2640 "Limits").
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its resource URI, bytes, MIME type, digest and size."""

    uri: str
    data: bytes
    mime_type: str

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class Skill:
    """One skill: where it is (``path``, e.g. ``acme/billing/refunds``), its frontmatter as written,
    and either its files (``SKILL.md`` first) or, for a generated skill, the function writing its
    ``SKILL.md``."""

    path: str
    frontmatter: Mapping[str, Any]
    files: tuple[SkillFile, ...] = ()
    generate: Callable[[], str] | None = field(default=None, compare=False)

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.path}/{SKILL_FILE}"

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def dynamic(self) -> bool:
        return self.generate is not None

    def file(self, uri: str) -> SkillFile | None:
        """The file at ``uri`` (a generated skill's ``SKILL.md`` written now), or ``None``."""
        if self.generate is not None:
            return SkillFile(uri, _document(self.frontmatter, self.generate()).encode(), "text/markdown") \
                if uri == self.uri else None
        return next((f for f in self.files if f.uri == uri), None)


def mime_type_of(name: str) -> str:
    if name.lower().endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def read_frontmatter(text: str, where: str) -> dict[str, Any]:
    """The YAML frontmatter ``text`` begins with, as a JSON object (``name`` and ``description``
    checked); a :class:`~flask_tooldiscovery.tools.function_tools.RegistrationError` naming
    ``where`` otherwise. Needs PyYAML (the ``skills`` extra)."""
    import yaml

    match = _FRONTMATTER.match(text)
    if match is None:
        raise RegistrationError(f"{where} does not begin with YAML frontmatter (a '---' line, the fields, "
                                "a '---' line)")
    try:
        loaded = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError as exc:
        raise RegistrationError(f"{where}: its frontmatter is not valid YAML: {exc}") from None
    if not isinstance(loaded, dict):
        raise RegistrationError(f"{where}: its frontmatter is not a mapping of fields")
    frontmatter: dict[str, Any] = json.loads(json.dumps(loaded, default=str))  # dates as YAML wrote them
    for key in ("name", "description"):
        if not isinstance(frontmatter.get(key), str) or not frontmatter[key].strip():
            raise RegistrationError(f"{where}: its frontmatter needs {key!r} (a non-empty string)")
    return frontmatter


def _document(frontmatter: Mapping[str, Any], body: str) -> str:
    """A ``SKILL.md``: the frontmatter (JSON scalars and collections are YAML too), then the body."""
    fields = "".join(f"{key}: {json.dumps(value, ensure_ascii=False)}\n" for key, value in frontmatter.items())
    return f"---\n{fields}---\n\n{body}"


def _check(path: str, frontmatter: Mapping[str, Any], files: tuple[SkillFile, ...]) -> None:
    name = str(frontmatter["name"])
    if not NAME.match(name):
        raise RegistrationError(f"skill {path!r}: name {name!r} breaks the Agent Skills rule (1-64 lowercase letters, "
                         "digits and single hyphens, not at either end)")
    if path.rsplit("/", 1)[-1] != name:
        raise RegistrationError(f"skill {path!r}: its last path segment must be its name {name!r}")
    if len(files) > MAX_FILES or sum(f.size for f in files) > MAX_BYTES:
        raise RegistrationError(f"skill {path!r} has {len(files)} files of {sum(f.size for f in files)} bytes: "
                                f"more than hosts must accept ({MAX_FILES} files, {MAX_BYTES} bytes)")


def skills_from_directory(root: str | Path) -> list[Skill]:
    """Every skill under ``root``: each directory holding a ``SKILL.md`` (nested ones too), with all
    the files under it (a nested skill's files are supporting files of the enclosing one), in path
    order. Hidden files and directories (``.git``...) are left out."""
    base = Path(root)
    if not base.is_dir():
        raise RegistrationError(f"{root} is not a directory")
    skills = []
    for marker in sorted(base.rglob(SKILL_FILE)):
        folder = marker.parent
        relative = folder.relative_to(base)
        if folder == base or any(part.startswith(".") for part in relative.parts):
            continue
        path = relative.as_posix()
        prefix = f"{SCHEME}{path}/"
        text = marker.read_bytes().decode("utf-8", errors="replace")
        frontmatter = read_frontmatter(text, f"{marker}")
        found = [p for p in sorted(folder.rglob("*")) if p.is_file()
                 and not any(part.startswith(".") for part in p.relative_to(folder).parts)]
        files = tuple(SkillFile(prefix + p.relative_to(folder).as_posix(), p.read_bytes(),
                                mime_type_of(p.name)) for p in sorted(found, key=lambda p: p != marker))
        _check(path, frontmatter, files)
        skills.append(Skill(path, frontmatter, files))
    return skills


def skill_from_function(func: Callable[[], str], options: Mapping[str, Any]) -> Skill:
    """A generated skill: ``func()`` returns the body of its ``SKILL.md`` (markdown) on each read.
    Options: ``name`` (default: the function's name, ``_`` as ``-``), ``description`` (default: the
    docstring's summary), ``path`` (default: the name; a prefix such as ``reports/daily`` organises),
    ``frontmatter`` (more fields: ``license``, ``metadata``...)."""
    unknown = set(options) - {"name", "description", "path", "frontmatter"}
    if unknown:
        raise RegistrationError(f"skill() takes name, description, path and frontmatter, not {sorted(unknown)}")
    path = str(options.get("path") or options.get("name") or func.__name__.replace("_", "-")).strip("/")
    name = str(options.get("name") or path.rsplit("/", 1)[-1])
    description = options.get("description") or parse_docstring(func.__doc__)[0].split("\n\n")[0]
    if not isinstance(description, str) or not description.strip():
        raise RegistrationError(f"skill {name!r} needs a description (a docstring or description=)")
    frontmatter = {**dict(options.get("frontmatter") or {}), "name": name, "description": description.strip()}
    _check(path, frontmatter, ())
    return Skill(path, frontmatter, generate=func)


class SkillCatalog:
    """The skills one app serves, in order: those registered in code, then the folder's."""

    def __init__(self, skills: list[Skill] | None = None) -> None:
        self._skills: list[Skill] = []
        for skill in skills or ():
            self.add(skill)

    def add(self, skill: Skill) -> Skill:
        if any(s.uri == skill.uri for s in self._skills):
            raise RegistrationError(f"skill {skill.uri!r} is already registered")
        self._skills.append(skill)
        return skill

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills)

    def __len__(self) -> int:
        return len(self._skills)

    def skill(self, uri: str) -> Skill | None:
        """The skill whose ``SKILL.md`` is at ``uri``."""
        return next((s for s in self._skills if s.uri == uri), None)

    def file(self, uri: str) -> SkillFile | None:
        """The skill file at ``uri`` (the innermost skill holding it answers)."""
        for skill in sorted(self._skills, key=lambda s: -len(s.path)):
            found = skill.file(uri)
            if found is not None:
                return found
        return None


def serve_skills(registered: Iterable[Skill], skills_dir: str | None) -> SkillCatalog:
    """The skills an app serves: those registered in code, then those of TOOLDISCOVERY_SKILLS_DIR
    (``skills_dir``, read now; a broken one is a :class:`~flask_tooldiscovery.SettingsError`)."""
    if not skills_dir:
        return SkillCatalog(list(registered))
    try:
        import yaml  # noqa: F401
    except ImportError:
        raise SettingsError("TOOLDISCOVERY_SKILLS_DIR needs PyYAML to read SKILL.md frontmatter: "
                            "pip install 'flask-tooldiscovery[skills]'") from None
    try:
        return SkillCatalog([*registered, *skills_from_directory(skills_dir)])
    except (RegistrationError, OSError) as exc:
        raise SettingsError(f"TOOLDISCOVERY_SKILLS_DIR: {exc}") from None


__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "SCHEME",
    "SKILL_FILE",
    "Skill",
    "SkillCatalog",
    "SkillFile",
    "read_frontmatter",
    "serve_skills",
    "skill_from_function",
    "skills_from_directory",
]
