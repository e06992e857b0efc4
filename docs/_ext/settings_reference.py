"""The ``tooldiscovery-settings`` directive: the settings reference, written from the declarations.

Every ``TOOLDISCOVERY_*`` key is declared once, with :func:`flask_tooldiscovery.settings.setting`:
the core's in :class:`flask_tooldiscovery.settings.Settings`, each dialect's in its own
``DialectSettings`` block. The directive walks them (the core's first, then every dialect of a
``ToolDiscovery()``'s table, in mounting order, with its ``URL_PREFIX`` key) and writes one
``confval`` per key, so pages link to a key with ``:confval:`TOOLDISCOVERY_...```. A key a new
dialect declares shows up here without touching the docs.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def default_text(value: Any) -> str:
    """A default as a config holds it, written as a literal (``None`` and empty lists included)."""
    if isinstance(value, str):
        return f'``"{value}"``'
    return f"``{value!r}``"


def core_groups() -> dict[str, str]:
    """Each core field's group, by field name, from the ``# --- group ---`` comments that divide
    :class:`~flask_tooldiscovery.settings.Settings` (empty when it has none)."""
    from flask_tooldiscovery.settings import Settings

    groups, current = {}, ""
    for line in inspect.getsource(Settings).splitlines():
        if heading := re.fullmatch(r"\s*# --- (.+?) ---\s*", line):
            current = heading.group(1)
        elif (field := re.match(r"\s{4}(\w+):", line)) and current:
            groups[field.group(1)] = current[0].upper() + current[1:]
    return groups


def entries() -> list[tuple[str, str, list[tuple[str, Any, str]]]]:
    """``(section title, label, [(key, default, doc)])``: the core's keys, then each dialect's, then
    the authorization server's."""
    from flask_tooldiscovery import ToolDiscovery
    from flask_tooldiscovery.settings import SPECS, key, specs, url_prefix_key

    sections = [("Core", "settings-core", [(key(s.name), s.default, s.doc) for s in SPECS])]
    discovery = ToolDiscovery()
    for name in discovery.dialect_names:
        dialect = discovery.dialect(name)
        rows: list[tuple[str, Any, str]] = [
            (url_prefix_key(name), dialect.default_prefix, f"Where {name} mounts (a path starting with ``/``).")]
        if dialect.settings is not None:
            rows.extend((key(s.name), s.default, s.doc) for s in specs(dialect.settings))
        sections.append((name, f"settings-{name.replace('_', '-')}", rows))
    from flask_tooldiscovery.identity.authorization_server.settings import OAuthServerSettings

    sections.append(("OAuth authorization server", "settings-oauth",
                     [(key(s.name), s.default, s.doc) for s in specs(OAuthServerSettings)]))
    return sections


def group_of(groups: dict[str, str], key_name: str) -> str:
    """The group of the core key ``TOOLDISCOVERY_X`` (its field is ``x``)."""
    return groups.get(key_name.removeprefix("TOOLDISCOVERY_").lower(), "")


class SettingsReference(SphinxDirective):
    """Write every declared key as a ``confval``, one section per declaring block."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        lines: list[str] = []
        groups = core_groups()
        for title, label, rows in entries():
            lines += [f".. _{label}:", "", title, "-" * len(title), ""]
            group = ""
            for name, default, doc in rows:
                if label == "settings-core" and group_of(groups, name) not in ("", group):
                    group = group_of(groups, name)
                    lines += [group, "~" * len(group), ""]
                lines += [f".. confval:: {name}", f"   :default: {default_text(default)}", "",
                          f"   {doc or 'Not documented.'}", ""]
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="settings declarations"), container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("tooldiscovery-settings", SettingsReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
