"""The README's Python blocks run as written, and the tour passes the project's own checks."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from flask import Flask

README = (Path(__file__).resolve().parent.parent / "README.rst").read_text()


def python_blocks() -> list[str]:
    blocks = []
    for match in re.finditer(r"^( *)\.\. code-block:: python\n\n((?:\1   .*\n|\n)+)", README, re.M):
        blocks.append(textwrap.dedent(match.group(2)))
    return blocks


BLOCKS = python_blocks()


def test_the_readme_has_its_python_blocks() -> None:
    assert len(BLOCKS) >= 3  # the quickstart, the tour, the auth hook


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_python_block_runs_and_its_tools_pass_the_checks(source: str) -> None:
    namespace: dict[str, object] = {"__name__": "readme_block"}
    exec(compile(source, "README.rst", "exec", dont_inherit=True), namespace)
    app = namespace.get("app")
    if app is None and callable(namespace.get("create_app")):
        app = namespace["create_app"]()  # type: ignore[operator]
    if isinstance(app, Flask):
        result = app.test_cli_runner().invoke(args=["tools", "check"])
        assert result.exit_code == 0, result.output


def test_the_quickstart_answers_every_curl_it_shows(tmp_path: Path) -> None:
    namespace: dict[str, object] = {"__name__": "quickstart"}
    exec(compile(BLOCKS[0], "quickstart.py", "exec", dont_inherit=True), namespace)
    client = namespace["app"].test_client()  # type: ignore[attr-defined]
    curls = re.findall(r"curl -X POST localhost:5000(\S+) -H 'Content-Type: application/json' -d '(.*)'", README)
    assert len(curls) >= 5
    for path, body in curls[:5]:
        r = client.post(path, data=body, content_type="application/json")
        assert r.status_code == 200, (path, r.get_data(as_text=True))
        assert "3" in r.get_data(as_text=True)


def settings_table() -> dict[str, tuple[str, str]]:
    """The README's settings table: key -> (default, meaning)."""
    lines = README.split("\n")
    start = lines.index(next(line for line in lines if line.startswith("key ") and "meaning" in line)) - 1
    key_width, default_width, _ = (len(column) for column in lines[start].split(" "))
    rows = {}
    for line in lines[start + 3:]:
        if line.startswith("="):
            break
        rows[line[:key_width].strip()] = (line[key_width + 1:key_width + 1 + default_width].strip(),
                                          line[key_width + default_width + 2:].strip())
    return rows


def test_the_settings_table_shows_every_setting_as_declared() -> None:
    """Core keys and the blocks of every dialect this package ships, in that order, with their
    defaults and doc lines; nothing more."""
    from flask_tooldiscovery import ToolDiscovery
    from flask_tooldiscovery.dialects import BUILTIN
    from flask_tooldiscovery.settings import SPECS, specs

    table = settings_table()
    declared = list(SPECS)
    for name in BUILTIN:
        block = ToolDiscovery().dialect(name).settings
        declared.extend(specs(block) if block else ())
    written = {"DIALECTS": "all 9", "SERVER_NAME": "the app's name"}
    expected = {
        f"``TOOLDISCOVERY_{spec.name}``": (
            written.get(spec.name) or (f'``"{spec.default}"``' if isinstance(spec.default, str)
                                       else f"``{spec.default!r}``"), spec.doc)
        for spec in declared}
    prefixes = {f"``TOOLDISCOVERY_{name.upper()}_URL_PREFIX``": ToolDiscovery().dialect(name).default_prefix
                for name in BUILTIN}
    assert list(table)[:len(expected)] == list(expected)
    assert {k: table[k] for k in expected} == expected
    assert {k: v[0] for k, v in table.items() if k not in expected} == {k: f'``"{v}"``' for k, v in prefixes.items()}
