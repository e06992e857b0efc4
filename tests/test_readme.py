"""The README is the front door: the checkout's two commands first, then ``pip install
flask-tooldiscovery`` opening a quickstart of about ten lines that runs and answers every curl it
shows, then the way into the documentation; nothing a page of ``docs/`` says at length."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.rst").read_text()


def code_blocks(language: str) -> list[tuple[int, str]]:
    """``(line, source)`` of each ``language`` block of the README."""
    return [(README.count("\n", 0, m.start()) + 1, textwrap.dedent(m.group(1)))
            for m in re.finditer(rf"^\.\. code-block:: {language}\n\n((?:   .*\n|\n)+)", README, re.M)]


def test_the_readme_is_a_front_door() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    shell = code_blocks("sh")
    # the guide's two set-up commands come first; the second is the one CI runs
    example, suite = shell[0][1].strip(), shell[1][1].strip()
    assert example == "pip install -e . && flask --app example_app run"
    ci = (ROOT / ".ci" / "run").read_text()
    for command in suite.split("; "):
        assert command in ci, command
    # until the first release the install line is the checkout's; the package index's is marked for releases
    install_line = next(i for i, line in enumerate(lines, 1) if line.strip() == "pip install .")
    assert install_line <= 45
    assert "From the first release on, ``pip install flask-tooldiscovery``" in README
    (quickstart_line, quickstart), *others = code_blocks("python")
    assert quickstart_line > install_line and not others
    assert len([line for line in quickstart.splitlines() if line.strip()]) <= 10


def test_the_quickstart_answers_every_curl_it_shows() -> None:
    namespace: dict[str, object] = {"__name__": "quickstart"}
    exec(compile(code_blocks("python")[0][1], "quickstart.py", "exec", dont_inherit=True), namespace)
    app = namespace["app"]
    for target in ([], ["--target", "claude-directory"], ["--target", "chatgpt"]):  # the checks it advertises
        done = app.test_cli_runner().invoke(args=["tools", "check", *target])  # type: ignore[attr-defined]
        assert done.exit_code == 0, done.output
    client = app.test_client()  # type: ignore[attr-defined]
    curls = re.findall(r"curl -X POST localhost:5000(\S+) -H 'Content-Type: application/json' -d '(.*)'", README)
    assert len(curls) == 5
    for path, body in curls:
        r = client.post(path, data=body, content_type="application/json")
        assert r.status_code == 200, (path, r.get_data(as_text=True))
        assert "3" in r.get_data(as_text=True)


def test_every_page_the_readme_links_to_exists() -> None:
    links = re.findall(r"<((?:docs/)?[\w/.-]+\.rst)>`_", README) + re.findall(r"``(docs/[\w/.-]+\.rst)``", README)
    assert len(links) > 20
    for link in links:
        assert (ROOT / link).is_file(), link


def test_what_moved_to_the_documentation_is_gone_from_the_readme() -> None:
    """Each topic is told in one place: the README keeps no section a docs page holds."""
    sections = {line for line, under in zip(README.splitlines(), README.splitlines()[1:], strict=False)
                if re.fullmatch(r"-+", under) and len(under) >= len(line) > 0}
    assert sections == {"Quickstart", "Documentation"}
    assert "TOOLDISCOVERY_RATELIMIT" not in README and "Writing a dialect\n" not in README


def test_the_supported_pythons_are_the_ones_declared_and_tested() -> None:
    """The README's "Python X.Y or later" is setup.cfg's python_requires and its lowest classifier,
    and the interpreter running this suite is one the classifiers name."""
    import configparser
    import sys

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    lowest = re.search(r"needs Python (3\.\d+) or later", README).group(1)  # type: ignore[union-attr]
    assert config["options"]["python_requires"].strip() == f">={lowest}"
    versions = re.findall(r"Programming Language :: Python :: (3\.\d+)$", config["metadata"]["classifiers"], re.M)
    assert versions and min(versions, key=lambda v: int(v.split(".")[1])) == lowest
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in versions
