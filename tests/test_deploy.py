"""Deployment end to end: gunicorn with two gthread workers serving every dialect, and a wheel and
sdist built, installed into a fresh virtual environment and started from there."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest
import requests

from .loopback import free_port, stop

ROOT = Path(__file__).resolve().parent.parent
#: The environment for a fresh venv's pip: without PYTHONPATH, which would make the checkout look installed.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
pytestmark = pytest.mark.slow


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early:\n{proc.stdout.read() if proc.stdout else ''}")
        try:
            requests.get(url, timeout=1)
            return
        except (requests.ConnectionError, requests.Timeout):  # listening before a worker answers
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not come up")


def start_gunicorn(workers: int) -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--worker-class", "gthread",
         "--threads", "4", "--bind", f"127.0.0.1:{port}", "example_app.wsgi:app"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/", proc)
    except Exception:
        stop(proc)
        raise
    return base, proc


@pytest.fixture
def gunicorn_server():
    base, proc = start_gunicorn(2)
    try:
        yield base
    finally:
        stop(proc)


def round_robin_proxy(backends: list[str]):
    """A WSGI app sending each request to the next backend in turn, recording which got it."""
    from werkzeug.wrappers import Request, Response

    served: list[tuple[str, str]] = []
    counter = iter(range(10**9))

    @Request.application
    def proxy(request: Request) -> Response:
        backend = backends[next(counter) % len(backends)]
        upstream = requests.request(
            request.method, backend + request.full_path.rstrip("?"), data=request.get_data(),
            headers={k: v for k, v in request.headers if k.lower() not in ("host", "content-length")},
            timeout=30)
        served.append((backend, request.path))
        excluded = {"content-length", "transfer-encoding", "connection", "content-encoding"}
        return Response(upstream.content, status=upstream.status_code,
                        headers=[(k, v) for k, v in upstream.headers.items() if k.lower() not in excluded])

    return proxy, served


def test_gunicorn_serves_every_dialect(gunicorn_server) -> None:
    base = gunicorn_server
    # opal
    doc = requests.get(f"{base}/opal/discovery").json()
    assert any(f["name"] == "add" for f in doc["functions"])
    assert requests.post(f"{base}/opal/tools/add", json={"parameters": {"a": "1", "b": 2}}).json() == 3.0
    # oxp
    items = requests.get(f"{base}/oxp/tools").json()["items"]
    tool_id = next(t["id"] for t in items if t["name"].endswith("_add"))
    r = requests.post(f"{base}/oxp/tools/call", json={"request": {"tool_id": tool_id, "input": {"a": 1, "b": 1}}})
    assert r.json()["result"]["value"] == 2.0
    # tdp
    assert requests.get(f"{base}/api/v1/tools").json()["protocol_version"] == "1.0"
    r = requests.post(f"{base}/api/v1/tools/execute", json={"tool_name": "get_weather", "arguments": {"city": "Paris"}})
    assert r.json()["result"]["city"] == "Paris"
    # explorer (the example allows execution) and its page with static files
    assert requests.get(f"{base}/explorer/tools").json()[0]["name"] == "add"
    called = requests.post(f"{base}/explorer/tools/add/call", json={"a": 2, "b": 2}).json()
    assert called["content"] == [{"type": "text", "text": "4.0"}] and called["isError"] is False
    assert "explorer.js" in requests.get(f"{base}/explorer/").text
    assert requests.get(f"{base}/explorer/static/tooldiscovery/explorer.js").status_code == 200
    # mcp, raw
    r = requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                           "params": {"name": "add", "arguments": {"a": 1, "b": 4}}},
                      headers={"Accept": "application/json, text/event-stream"})
    assert r.json()["result"]["structuredContent"] == {"result": 5.0}


def test_official_mcp_client_against_two_workers(gunicorn_server) -> None:
    from mcp import Client

    async def run(mode: str):
        async with Client(f"{gunicorn_server}/mcp", mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            results = [await client.call_tool("add", {"a": i, "b": 1}) for i in range(6)]
            weather = await client.call_tool("get_weather", {"city": "Lisbon"})
            return names, results, weather

    for mode in ("legacy", "auto"):
        names, results, weather = asyncio.run(run(mode))
        assert "get_weather" in names
        assert [r.structured_content["result"] for r in results] == [float(i + 1) for i in range(6)]
        assert weather.structured_content["city"] == "Lisbon"


def test_mcp_session_alternating_between_two_servers() -> None:
    """Statelessness, shown deterministically: every request of one MCP client session goes to
    another gunicorn server than the one before (initialize on one, the calls on the other)."""
    from mcp import Client

    from .conftest import live_server

    (a, proc_a), (b, proc_b) = start_gunicorn(1), start_gunicorn(1)
    try:
        proxy, served = round_robin_proxy([a, b])

        async def run(base: str, mode: str):
            async with Client(f"{base}/mcp", mode=mode) as client:
                await client.list_tools()
                first = await client.call_tool("add", {"a": 1, "b": 2})
                second = await client.call_tool("get_weather", {"city": "Oslo"})
                return first, second

        with live_server(proxy) as base:
            for mode in ("legacy", "auto"):
                first, second = asyncio.run(run(base, mode))
                assert first.structured_content == {"result": 3.0}
                assert second.structured_content["city"] == "Oslo"
        assert {backend for backend, _ in served} == {a, b}
        assert len(served) >= 8
    finally:
        stop(proc_a)
        stop(proc_b)


def test_wheel_and_sdist_install_and_serve(tmp_path) -> None:
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--sdist", "--outdir", str(dist), str(ROOT)],
                           check=True, capture_output=True, text=True)
    complaints = [line for line in (built.stdout + built.stderr).splitlines()
                  if any(w in line.lower() for w in ("warning", "would be ignored", "deprecated"))
                  and "byte-compiling is disabled" not in line]  # that one is PYTHONDONTWRITEBYTECODE's
    assert not complaints, complaints
    wheel = next(dist.glob("*.whl"))
    sdist = next(dist.glob("*.tar.gz"))
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("flask_tooldiscovery/templates/tooldiscovery/explorer.html",
                   "flask_tooldiscovery/static/tooldiscovery/explorer.js",
                   "flask_tooldiscovery/static/tooldiscovery/explorer.css",
                   "flask_tooldiscovery/static/tooldiscovery/ui-host.js",
                   "flask_tooldiscovery/static/tooldiscovery/ext-apps/app-with-deps.js",
                   "flask_tooldiscovery/static/tooldiscovery/ext-apps/LICENSE",
                   "flask_tooldiscovery/static/tooldiscovery/ext-apps/README",
                   "flask_tooldiscovery/py.typed"):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "example_app/")) for n in names)
    import tarfile

    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert any(m.endswith("flask_tooldiscovery/static/tooldiscovery/explorer.js") for m in members)
    assert any(m.endswith("flask_tooldiscovery/static/tooldiscovery/ext-apps/app-with-deps.js") for m in members)
    assert any(m.endswith("/LICENSE") for m in members) and "licenses/LICENSE" in " ".join(names)
    assert not any("/tests/" in m for m in members)  # no half test suite that cannot run
    top = members[0].split("/")[0]
    # the tested deployment recipes, and every file the documentation includes, travel with the sources
    included = {f"{top}/" + os.path.normpath(os.path.relpath(page.parent / target, ROOT))
                for page in (ROOT / "docs").rglob("*.rst") if "_build" not in page.parts
                for target in re.findall(r"^ *\.\. literalinclude:: (\S+)", page.read_text(), re.M)}
    assert {f"{top}/deploy/gunicorn.conf.py", f"{top}/deploy/nginx-site.conf"} <= included
    assert included <= set(members), included - set(members)
    assert f"{top}/docs/conf.py" in members and not any("__pycache__" in m or "/_build/" in m for m in members)
    # what the package index shows: the long description renders, the metadata is complete
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(wheel)], check=True,
                   capture_output=True, text=True, env=CLEAN_ENV)
    # The example app is run from a copy outside the source tree, against the installed wheel.
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "example_app").mkdir()
    for f in (ROOT / "example_app").glob("*.py"):
        (app_dir / "example_app" / f.name).write_text(f.read_text())
    (app_dir / "example_app" / "templates").mkdir()
    for f in (ROOT / "example_app" / "templates").glob("*.html"):  # the order card's template
        (app_dir / "example_app" / "templates" / f.name).write_text(f.read_text())
    port = free_port()
    proc = subprocess.Popen([str(py), "-m", "flask", "--app", "example_app", "run", "--port", str(port)],
                            cwd=app_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/", proc)
        located = subprocess.run([str(py), "-c", "import flask_tooldiscovery; print(flask_tooldiscovery.__file__)"],
                                 cwd=app_dir, capture_output=True, text=True, check=True, env=CLEAN_ENV).stdout
        assert str(env_dir) in located
        page = requests.get(f"{base}/explorer/")
        assert page.status_code == 200 and "Example tools" in page.text
        for asset in ("explorer.js", "explorer.css"):
            assert requests.get(f"{base}/explorer/static/tooldiscovery/{asset}").status_code == 200
        assert requests.get(f"{base}/opal/discovery").status_code == 200
        card = requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                                                  "params": {"uri": "ui://example/order-card"}}).json()
        assert "window.McpApps=" in card["result"]["contents"][0]["text"]  # the bridge, from the wheel
    finally:
        stop(proc)


def test_the_readme_first_screen_on_a_fresh_venv(tmp_path) -> None:
    """pip install from the built wheel, the README's quickstart.py as written, its curl commands."""
    import re
    import textwrap

    readme = (ROOT / "README.rst").read_text()
    quickstart = textwrap.dedent(re.search(r"Save this as ``quickstart.py``:\n\n\.\. code-block:: python\n\n"
                                           r"((?:   .*\n|\n)+)", readme).group(1))
    curls = re.findall(r"^   (curl -X POST localhost:5000.*)$", readme, re.M)[:5]
    assert len(curls) == 5
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True, text=True)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(next(dist.glob("*.whl")))], check=True,
                   capture_output=True, text=True, env=CLEAN_ENV)
    work = tmp_path / "work"
    work.mkdir()
    (work / "quickstart.py").write_text(quickstart)
    port = free_port()
    proc = subprocess.Popen([str(py), "-m", "flask", "--app", "quickstart", "run", "--port", str(port)], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    try:
        wait_until_up(f"http://127.0.0.1:{port}/opal/discovery", proc)
        for command in curls:
            command = command.replace("localhost:5000", f"localhost:{port}")
            out = subprocess.run(["bash", "-c", command + " -s -w ' %{http_code}'"], capture_output=True, text=True,
                                 timeout=30).stdout
            assert out.endswith(" 200") and "3" in out, (command, out)
        assert requests.get(f"http://127.0.0.1:{port}/explorer/").status_code == 200
    finally:
        stop(proc)
