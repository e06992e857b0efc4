"""Servers on 127.0.0.1 that the tests and the benchmarks both start: a free port, a WSGI app
served in a thread, a quiet HTTP server in a thread, the receiver Opal callbacks are POSTed to, and
a tarpit that accepts every connection and never answers, and a redis-server of our own. No pytest
here: bench/ imports it too."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server

WAIT = 60  # seconds a receiver waits for a callback at most (it normally comes at once)


@contextlib.contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve the WSGI ``app`` on 127.0.0.1 at a free port in a thread; yields the base URL; stops it."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers with :meth:`reply`."""

    def reply(self, status: int, body: bytes = b"", content_type: str | None = None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class LoopbackServer:
    """``handler`` served by a threading HTTP server on 127.0.0.1 (``port``, else a free one) in a
    daemon thread; over TLS when given a ``tls`` context. ``port`` is where it listens."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Receiver(LoopbackServer):
    """A callback receiver recording every POST (and GET) by path, and when each path was first
    reached (``arrived``, :func:`time.monotonic`); ``fail[path]`` statuses are answered first, one
    per POST, then 204. On ``port`` when given (a receiver that comes back where one was down)."""

    def __init__(self, port: int = 0) -> None:
        self.posts: dict[str, list[tuple[dict[str, str], bytes]]] = {}
        self.arrived: dict[str, float] = {}
        self.fail: dict[str, list[int]] = {}
        self.changed = threading.Condition()
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.changed:
                    receiver.arrived.setdefault(self.path, time.monotonic())
                    receiver.posts.setdefault(self.path, []).append((dict(self.headers), body))
                    statuses = receiver.fail.get(self.path) or []
                    status = statuses.pop(0) if statuses else 204
                    receiver.changed.notify_all()
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.base + self.path + "/moved")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # a followed redirect would arrive as a GET: recorded too

        super().__init__(Handler, port)
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, *fail: int) -> str:
        """A fresh callback URL whose first POSTs are answered with ``fail``."""
        path = f"/callbacks/{uuid.uuid4().hex}"
        self.fail[path] = list(fail)
        return self.base + path

    def wait(self, url: str, count: int = 1) -> list[tuple[dict[str, str], bytes]]:
        path = url[len(self.base):]
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.posts.get(path, [])) >= count, WAIT), self.posts
            return list(self.posts[path])

    def received(self, url: str) -> list[tuple[dict[str, str], bytes]]:
        with self.changed:
            return list(self.posts.get(url[len(self.base):], []))


def stop(proc: subprocess.Popen[Any], grace: float = 10) -> None:
    """Stop a server process: SIGTERM, ``grace`` seconds to end, then SIGKILL."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


#: The redis-server :class:`RedisServer` starts (``TOOLDISCOVERY_REDIS_SERVER``, else Debian's, else the PATH's).
REDIS_SERVER = os.environ.get("TOOLDISCOVERY_REDIS_SERVER", "/usr/bin/redis-server")


def redis_binary() -> str | None:
    return REDIS_SERVER if Path(REDIS_SERVER).exists() else shutil.which("redis-server")


class RedisServer:
    """A redis-server of our own on 127.0.0.1 at a free port, without persistence, its files in
    ``folder`` (else a temporary folder, removed by :meth:`close`); ``url`` names it (no database)."""

    def __init__(self, folder: Path | None = None) -> None:
        import redis

        binary = redis_binary()
        if binary is None:
            raise RuntimeError(f"no redis-server at {REDIS_SERVER} nor on the PATH")
        self.folder, self.owned = (folder, False) if folder else (Path(tempfile.mkdtemp()), True)
        port = free_port()
        self.proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.folder)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.url = f"redis://127.0.0.1:{port}"
        try:
            client = redis.Redis.from_url(self.url)
            deadline = time.monotonic() + 15
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited:\n{self.proc.stdout.read() if self.proc.stdout else ''}")
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            client.close()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        stop(self.proc)
        if self.proc.stdout:
            self.proc.stdout.close()
        if self.owned:
            shutil.rmtree(self.folder, ignore_errors=True)


class Tarpit:
    """A loopback server that accepts every connection and never answers; ``url`` is a callback
    URL on it."""

    def __init__(self, backlog: int = 1024) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/cb"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # wakes the accepting thread: the port is free once it returns
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for conn in self.held:
            conn.close()
