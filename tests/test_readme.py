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

