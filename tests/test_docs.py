"""The documentation site: ``sphinx-build -W -n`` builds it without one warning (every
cross-reference resolves, every page is in the table of contents), and its settings reference
lists every key the code declares, as declared."""

from __future__ import annotations

import configparser
import contextlib
import html
import importlib
import json
import logging
import re
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask, request

from tests.conftest import live_server

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



# -- every code block of every page runs ------------------------------------------------------------
#
# A page's blocks, by language:
# - ``python`` (and a bare ``::`` literal block, which Sphinx shows as Python, unless it is JSON):
#   run on its own, as a reader would paste it; an ``app`` (or ``create_app()``) it builds must pass
#   ``flask tools check``.
#   A block introduced by "Save this as ``name.py``" is importable as ``name`` by the page's
#   shell commands.
# - ``sh``: each command runs: ``curl localhost:5000/...`` against the page's app (the saved module
#   named by ``flask --app`` on the page, else the example app) through Flask's test client, answered
#   below 400; ``flask --app X tools ...`` through Flask's CLI runner, exit 0; ``pip install`` names
#   only extras this package declares; ``gunicorn``/``celery`` name a config file and an app that
#   exist. Commands that set up the machine (a venv, nginx, folders) are listed in SETUP and
#   only shown.
# - ``json``: parses. ``text``, ``http`` and files shown for what they hold (``markdown``, ``html``,
#   ``html+jinja``): not code.
# Anything else (``nginx``, ``ini``...) must be a ``literalinclude`` of a file a test runs.

SETUP = {"python -m venv", ".", "source", "cp", "nginx", "mkdir", "rm", "export", "apt-get", "command",
         "python -m playwright", "python -m pytest", "python tests/golden/record.py"}
SHOWN = {"text", "http", "markdown", "html", "html+jinja"}
PAGES = sorted(p for p in DOCS.rglob("*.rst") if "_build" not in p.parts)
DIRECTIVE = re.compile(r"^( *)\.\. code-block:: ([\w-]+)\n((?:\1   :.*\n)*)\n((?:\1   .*\n|[ \t]*\n)+)", re.M)
LITERAL = re.compile(r"^( *)(?!\.\. )(\S.*)?::\n\n((?:\1 +\S.*\n|[ \t]*\n)+)", re.M)


def blocks_of(text: str) -> list[tuple[str, str, int]]:
    """``(language, source, line)`` of each code block of a page, in order."""
    found = [(m.group(2), textwrap.dedent(m.group(4)).strip("\n") + "\n", text.count("\n", 0, m.start()) + 1)
             for m in DIRECTIVE.finditer(text)]
    for m in LITERAL.finditer(text):
        if (m.group(2) or "").lstrip().startswith(".."):
            continue
        source = textwrap.dedent(m.group(3)).strip("\n") + "\n"
        found.append((literal_language(source), source, text.count("\n", 0, m.start()) + 1))
    return sorted(found, key=lambda block: block[2])


def literal_language(source: str) -> str:
    """A ``::`` block holds JSON when it parses as JSON, else Python (as Sphinx highlights it)."""
    try:
        json.loads(source)
    except ValueError:
        return "python"
    return "json"


def saved_name(text: str, line: int) -> str | None:
    """``quickstart`` when the prose just before line ``line`` says "Save this as ``quickstart.py``"."""
    before = "\n".join(text.split("\n")[max(0, line - 4):line])
    match = re.search(r"[Ss]ave (?:this|it) as ``(\w+)\.py``", before)
    return match.group(1) if match else None


def run_python(source: str, where: str, name: str = "docs_block") -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": name}
    exec(compile(source, where, "exec", dont_inherit=True), namespace)
    return namespace


def app_of(namespace: dict[str, object]) -> Flask | None:
    app = namespace.get("app")
    if not isinstance(app, Flask) and callable(namespace.get("create_app")):
        app = namespace["create_app"]()  # type: ignore[operator]
    return app if isinstance(app, Flask) else None


def commands_of(source: str) -> list[str]:
    """One shell command per item: continuation lines joined, comments dropped, ``&&`` and ``;`` split."""
    lines, pending = [], ""
    for line in re.sub(r"\\\n\s*", " ", source).splitlines():
        pending = f"{pending} {line}" if pending else line
        try:
            shlex.split(pending)
        except ValueError:  # a quoted argument goes on to the next line
            continue
        lines.append(pending)
        pending = ""
    assert not pending, f"unbalanced quotes in {pending!r}"
    commands = []
    for line in lines:
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, ";"]:
            if word in {"&&", ";", "||"} or word.endswith(";"):
                if word.endswith(";") and word != ";":
                    current.append(word[:-1])
                if current:
                    commands.append(shlex.join(current))
                current = []
            else:
                current.append(word)
    return commands


@contextlib.contextmanager
def callback_receiver() -> Iterator[tuple[str, list[Any]]]:
    """A local stand-in for the host an Opal ``async_callback`` names: its URL and what it received."""
    received: list[Any] = []
    receiver = Flask("callback_receiver")

    @receiver.post("/<path:anything>")
    def receive(anything: str) -> tuple[str, int]:
        received.append(request.get_json(force=True))
        return "", 200

    with live_server(receiver) as url:
        yield url, received


def run_curl(client: Any, words: list[str], where: str) -> None:
    method, headers, data, url = "GET", {}, None, None
    it = iter(words[1:])
    for word in it:
        if word == "-X":
            method = next(it)
        elif word == "-H":
            name, _, value = next(it).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            data = next(it)
            method = "POST" if method == "GET" else method
        elif word in {"-N", "-s", "-i"}:
            continue
        else:
            url = word
    assert url and re.match(r"(https?://)?localhost:5000/", url), f"{where}: curl names {url!r}, not localhost:5000"
    path = "/" + url.split("localhost:5000/", 1)[1]
    sent = json.loads(data) if data else None
    if isinstance(sent, dict) and "async_callback" in sent:
        # the callback's host stands for Opal's: the result is POSTed to a local one instead
        with callback_receiver() as (receiver_url, received):
            sent["async_callback"]["url"] = receiver_url + "/callback"
            response = client.open(path, method=method, headers=headers, data=json.dumps(sent))
            assert response.status_code == 202, (where, response.get_data(as_text=True))
            deadline = time.monotonic() + 60
            while not received and time.monotonic() < deadline:
                time.sleep(0.05)
            assert received, f"{where}: the callback never came"
        return
    response = client.open(path, method=method, headers=headers, data=data)
    assert response.status_code < 400, (where, shlex.join(words), response.status_code, response.get_data(as_text=True))


def declared_extras() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return set(config["options.extras_require"])


def check_install(words: list[str], where: str) -> None:
    for word in words[words.index("install") + 1:]:
        if word.startswith("-"):
            continue
        name, _, extras = word.partition("[")
        if name in {"flask-tooldiscovery", ".", ""} or name.startswith("./"):
            wanted = set(filter(None, extras.rstrip("]").split(",")))
            assert wanted <= declared_extras(), f"{where}: pip install {word}: no such extra"


def importable(target: str, modules: dict[str, str], where: str) -> None:
    """``module:attr`` (or ``module:factory()``, or ``module.attr`` for celery -A) exists."""
    module, _, attr = target.partition(":") if ":" in target else target.rpartition(".")
    if module in modules:
        namespace = run_python(modules[module], f"{module}.py", module)
    else:
        namespace = vars(importlib.import_module(module))
    assert attr.removesuffix("()") in namespace, f"{where}: {target} names nothing"


def run_shell(source: str, where: str, modules: dict[str, str], page_app: str | None) -> None:
    for command in commands_of(source):
        words = shlex.split(command)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            words = words[1:]  # VAR=value before a command
        head = " ".join(words[:3])
        if words[0] == "curl":
            run_curl(shell_app(page_app, modules).test_client(), words, where)
        elif words[0] == "flask":
            assert words[1] == "--app", f"{where}: {command}"
            app = shell_app(words[2], modules)
            result = app.test_cli_runner().invoke(args=words[3:])
            assert result.exit_code == 0, (where, command, result.output)
        elif "install" in words and (words[0] == "pip" or words[:3] == ["python", "-m", "pip"]):
            check_install(words, where)
        elif words[0] == "gunicorn":
            if "-c" in words:
                config = words[words.index("-c") + 1]
                assert (ROOT / config).is_file() or config.removesuffix(".py") in modules, \
                    f"{where}: {command}: no such config file"
            importable(words[-1], modules, where)
        elif words[0] == "celery":
            importable(words[words.index("-A") + 1], modules, where)
        else:
            assert any(head == s or head.startswith(s + " ") for s in SETUP), \
                f"{where}: the tests cannot run {command!r}: make it one they can, or list it in SETUP"


def shell_app(name: str | None, modules: dict[str, str]) -> Flask:
    if name in modules:
        app = app_of(run_python(modules[name], f"{name}.py", name))
        assert app is not None, f"{name}.py builds no app"
    else:
        from example_app import create_app

        assert name in {None, "example_app"}, f"flask --app {name}: no such module on the page"
        # Opal's callbacks go to the test's own receiver (callback_receiver) on loopback
        app = create_app({"TESTING": True, "TOOLDISCOVERY_OPAL_CALLBACK_HOSTS": ["127.0.0.1"]})
    return app


def page_cases() -> list[Any]:
    cases = []
    for page in PAGES:
        text = page.read_text()
        if blocks_of(text):
            cases.append(pytest.param(page, id=page.relative_to(DOCS).as_posix()))
    return cases


@pytest.fixture
def process_globals() -> Iterator[None]:
    """What a page's blocks may set for the whole process, as an app's own setup does (the
    package's log level, OpenTelemetry's tracer provider), put back afterwards for the other tests."""
    logger = logging.getLogger("flask_tooldiscovery")
    level = logger.level
    trace = pytest.importorskip("opentelemetry.trace")
    provider, done = trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done
    yield
    logger.setLevel(level)
    if trace._TRACER_PROVIDER is not provider:
        trace._TRACER_PROVIDER.shutdown()
        trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done = provider, done


@pytest.mark.parametrize("page", page_cases())
@pytest.mark.usefixtures("process_globals")
def test_every_code_block_of_the_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = page.read_text()
    name = page.relative_to(DOCS).as_posix()
    modules: dict[str, str] = {}
    apps = re.findall(r"flask --app (\w+)", text)
    for language, source, line in blocks_of(text):
        where = f"{name}:{line}"
        if language == "python":
            if saved := saved_name(text, line):
                modules[saved] = source
            app = app_of(run_python(source, where, saved or "docs_block"))
            if app is not None:
                checked = app.test_cli_runner().invoke(args=["tools", "check"])
                assert checked.exit_code == 0, (where, checked.output)
        elif language in {"sh", "bash", "console"}:
            run_shell(source, where, modules, next((a for a in apps if a in modules), None))
        elif language == "json":
            json.loads(source)
        else:
            assert language in SHOWN, f"{where}: a {language} block: show a tested file with literalinclude"


def test_every_included_file_is_one_a_test_runs() -> None:
    tests = "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    included = [(page, m.group(1)) for page in PAGES
                for m in re.finditer(r"\.\. literalinclude:: (\S+)", page.read_text())]
    for page, target in included:
        path = (page.parent / target).resolve()
        assert path.is_file(), f"{page.name}: {target} does not exist"
        assert path.name in tests, f"{page.name}: no test runs {path.relative_to(ROOT)}"


def test_the_api_reference_documents_every_exception_and_public_name(site: Path) -> None:
    """Each exception the package defines (every ToolDiscoveryError, wherever it lives, but the
    private ones: raised and caught in their own module) and each name ``flask_tooldiscovery``
    exports has its entry, so a new one cannot go unmentioned."""
    import pkgutil

    import flask_tooldiscovery
    from flask_tooldiscovery import ToolDiscoveryError

    for info in pkgutil.walk_packages(flask_tooldiscovery.__path__, "flask_tooldiscovery."):
        importlib.import_module(info.name)
    exceptions = set()
    pending = [ToolDiscoveryError]
    while pending:
        kind = pending.pop()
        exceptions.add(kind)
        pending.extend(kind.__subclasses__())
    documented = set(re.findall(r'<dt class="sig sig-object py" id="([\w.]+)"', (site / "api.html").read_text()))
    short = {name.rsplit(".", 1)[-1] for name in documented}
    missing = sorted(f"{k.__module__}.{k.__qualname__}" for k in exceptions  # private ones never reach a user
                     if k.__module__.startswith("flask_tooldiscovery") and not k.__qualname__.startswith("_")
                     and k.__qualname__ not in short)
    assert not missing, f"not in docs/api.rst: {missing}"
    assert not [name for name in flask_tooldiscovery.__all__ if f"flask_tooldiscovery.{name}" not in documented]
