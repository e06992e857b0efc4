"""The deployment recipe end to end: gunicorn with the documented configuration (deploy/gunicorn.conf.py)
behind Debian's nginx with the documented site (deploy/nginx-site.conf), each started here on a free
port and stopped after; nginx runs as the current user with every path in a temporary folder.

Slow clients (16 connections that send their headers, or their body, a byte at a time) take every
thread of gunicorn when they reach it directly, so discovery gets no answer; behind nginx, which
reads each request whole before it passes it on, discovery answers. Every wait is bounded.

The deploying page of the documentation includes both files themselves (checked in the quick part
of the suite, so what it shows is what runs here). Without nginx the server tests skip locally, and
fail when CI is set (.ci/run installs it)."""

from __future__ import annotations

import contextlib
import http.client
import os
import pwd
import select
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from .conftest import free_port
from .test_deploy import ROOT, stop, wait_until_up

DEPLOY = ROOT / "deploy"
SITE = DEPLOY / "nginx-site.conf"
GUNICORN_CONF = DEPLOY / "gunicorn.conf.py"
DEPLOYING = (ROOT / "docs" / "deploying.rst").read_text()
#: The recipe's addresses, replaced by free ports here.
LISTEN, UPSTREAM = "listen 80;", "server 127.0.0.1:8000;"
SLOW_CLIENTS = 16
DISCOVERY = ("/opal/discovery", "/oxp/health", "/oxp/tools", "/api/v1/tools", "/explorer/tools")


def nginx_binary() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nginx tests cannot run in CI: no nginx (apt-get install nginx)")
        pytest.skip("no nginx (apt-get install nginx)")
    return found


def site(nginx_port: int, gunicorn_port: int) -> str:
    """The documented site with its two addresses on this test's ports."""
    text = SITE.read_text()
    assert text.count(LISTEN) == 1 and text.count(UPSTREAM) == 1, "the recipe's addresses moved"
    return text.replace(LISTEN, f"listen 127.0.0.1:{nginx_port};").replace(
        UPSTREAM, f"server 127.0.0.1:{gunicorn_port};")


def main_config(folder: Path, port: int, gunicorn_port: int) -> Path:
    """A whole nginx configuration around the site: in the foreground, every path in ``folder``."""
    (folder / "site.conf").write_text(site(port, gunicorn_port))
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""  # workers as root's caller
    config = folder / "nginx.conf"
    config.write_text(textwrap.dedent(f"""\
        daemon off;
        worker_processes 1;
        {user}
        pid {folder}/nginx.pid;
        error_log {folder}/error.log warn;
        events {{ worker_connections 256; }}
        http {{
            access_log {folder}/access.log;
            client_body_temp_path {folder}/client_body;
            proxy_temp_path {folder}/proxy;
            fastcgi_temp_path {folder}/fastcgi;
            uwsgi_temp_path {folder}/uwsgi;
            scgi_temp_path {folder}/scgi;
            include {folder}/site.conf;
        }}
        """))
    return config


@contextlib.contextmanager
def recipe_stack(folder: Path, env: dict[str, str] | None = None,
                 gunicorn_args: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """gunicorn (the documented config, one worker of 4 threads, ``env`` added to its environment)
    and nginx (the documented site) in front, with every path in ``folder``: the base URL of
    gunicorn itself and of nginx. Both are stopped after."""
    binary = nginx_binary()
    gunicorn_port, nginx_port = free_port(), free_port()
    procs: list[subprocess.Popen[str]] = []
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "--bind", f"127.0.0.1:{gunicorn_port}",
             "--workers", "1", "--threads", "4", *gunicorn_args, "example_app.wsgi:app"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "TOOLDISCOVERY_WARN_UNAUTHENTICATED": "false",
                           **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        direct = f"http://127.0.0.1:{gunicorn_port}"
        wait_until_up(direct + "/oxp/health", procs[0], timeout=60)
        config = main_config(folder, nginx_port, gunicorn_port)
        subprocess.run([binary, "-t", "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(config)],
                       check=True, capture_output=True, timeout=30)
        procs.append(subprocess.Popen(
            [binary, "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(config)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        proxied = f"http://127.0.0.1:{nginx_port}"
        wait_until_up(proxied + "/oxp/health", procs[1], timeout=30)
        yield direct, proxied
    finally:
        for proc in reversed(procs):
            stop(proc)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The recipe's stack: the base URL of gunicorn itself and of nginx."""
    with recipe_stack(tmp_path_factory.mktemp("nginx")) as urls:
        yield urls


class SlowClients:
    """``count`` connections that each start a request and then send it a byte every half second:
    the rest of a header (``headers``) or of a 100 kB JSON body (``body``). Which of them the
    server closed is recorded."""

    def __init__(self, base: str, count: int, mode: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        if mode == "headers":
            opening, self.byte = f"GET /opal/discovery HTTP/1.1\r\nHost: {host}\r\nX-Slow: ", b"a"
        else:
            opening, self.byte = (f"POST /opal/tools/add HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json"
                                  "\r\nContent-Length: 100000\r\n\r\n{"), b" "
        self.sockets = [socket.create_connection((host, int(port)), timeout=5) for _ in range(count)]
        for sock in self.sockets:
            sock.sendall(opening.encode())
        self.closed: set[int] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _trickle(self) -> None:
        while not self._done.wait(0.5):
            for number, sock in enumerate(self.sockets):
                if number in self.closed:
                    continue
                try:
                    if select.select([sock], [], [], 0)[0]:  # an answer or the end: the server gave up on it
                        self.closed.add(number)
                    else:
                        sock.send(self.byte)
                except OSError:
                    self.closed.add(number)

    def all_closed_by_the_server(self, within: float) -> bool:
        deadline = time.monotonic() + within
        while len(self.closed) < len(self.sockets) and time.monotonic() < deadline:
            time.sleep(0.2)
        return len(self.closed) == len(self.sockets)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5)
        for sock in self.sockets:
            sock.close()


@contextlib.contextmanager
def slow_clients(base: str, mode: str) -> Iterator[SlowClients]:
    clients = SlowClients(base, SLOW_CLIENTS, mode)
    try:
        yield clients
    finally:
        clients.stop()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["headers", "body"])
def test_slow_clients_starve_gunicorn_alone(stack, mode) -> None:
    """The finding: gunicorn's gthread worker reads a request in one of its threads, so 16 slow
    clients hold all 4 and discovery gets no answer while they last."""
    direct, _ = stack
    with slow_clients(direct, mode):
        with pytest.raises(requests.exceptions.Timeout):
            requests.get(direct + "/opal/discovery", timeout=4)
    assert requests.get(direct + "/opal/discovery", timeout=10).status_code == 200  # free once they leave


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["headers", "body"])
def test_behind_the_recipes_nginx_discovery_answers_while_slow_clients_trickle(stack, mode) -> None:
    _, proxied = stack
    with slow_clients(proxied, mode) as clients:
        for path in DISCOVERY:
            assert requests.get(proxied + path, timeout=10).status_code == 200, path
        call = requests.post(proxied + "/opal/tools/add", json={"parameters": {"a": 1, "b": 2}}, timeout=10)
        assert (call.status_code, call.json()) == (200, 3)
        if mode == "headers":  # nginx ends a header that takes longer than client_header_timeout
            assert clients.all_closed_by_the_server(within=60)


@pytest.mark.slow
def test_behind_nginx_a_body_over_the_limit_is_refused_and_a_chunked_one_passes(stack) -> None:
    _, proxied = stack
    host, port = proxied.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:  # a body announced over client_max_body_size: refused before it is sent
        connection.putrequest("POST", "/opal/tools/add")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(2 * 1024 * 1024))
        connection.endheaders()
        assert connection.getresponse().status == 413
    finally:
        connection.close()
    chunks = (part for part in (b'{"parameters": ', b'{"a": 2, "b": 5}}'))
    chunked = requests.post(proxied + "/opal/tools/add", data=chunks,
                            headers={"Content-Type": "application/json"}, timeout=10)
    assert (chunked.status_code, chunked.json()) == (200, 7)


@pytest.mark.parametrize("recipe", [SITE, GUNICORN_CONF], ids=lambda path: path.name)
def test_the_deploying_page_includes_the_recipe_the_tests_run(recipe: Path) -> None:
    """The page shows the file itself (literalinclude), not a copy that could drift from it."""
    assert f".. literalinclude:: ../deploy/{recipe.name}\n" in DEPLOYING
