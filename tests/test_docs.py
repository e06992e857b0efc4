"""The documentation site: ``sphinx-build -W -n`` builds it without one warning (every
cross-reference resolves, every page is in the table of contents), and its settings reference
lists every key the code declares, as declared."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built as a release would build it: nitpicky, warnings are errors."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert built.returncode == 0 and "WARNING" not in built.stderr, built.stderr
    return out


def test_the_site_builds_with_no_warning(site: Path) -> None:
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {"index.html", "settings.html", "api.html", "changelog.html"} <= pages


def text_of(page: Path) -> str:
    """A built page's text, tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())


def test_the_settings_reference_shows_every_declared_key_with_its_default_and_doc(site: Path) -> None:
    """The core's keys, then each dialect's (its URL prefix and its block), in that order: the
    page is written from the declarations, so a key added to any block shows without a docs edit."""
    from flask_tooldiscovery import ToolDiscovery
    from flask_tooldiscovery.settings import SPECS, key, specs, url_prefix_key

    discovery = ToolDiscovery()
    declared = [(key(s.name), s.default, s.doc) for s in SPECS]
    for name in discovery.dialect_names:
        dialect = discovery.dialect(name)
        declared.append((url_prefix_key(name), dialect.default_prefix, None))
        if dialect.settings is not None:
            declared.extend((key(s.name), s.default, s.doc) for s in specs(dialect.settings))
    assert len(declared) > 60

    page = text_of(site / "settings.html")
    positions = []
    for name, default, doc in declared:
        shown = f'"{default}"' if isinstance(default, str) else repr(default)
        entry = re.search(re.escape(name) + r" ¶ Default : " + re.escape(shown), page)
        assert entry, f"{name} (default {shown}) is not in the settings reference"
        positions.append(entry.start())
        if doc:
            start = " ".join(doc.replace("``", "").split())[:50]
            assert start in page[entry.end():entry.end() + 80], f"{name}: its doc line is not shown"
    assert positions == sorted(positions), "the keys are not in declaration order"

