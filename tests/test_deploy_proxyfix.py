"""Behind the recipe's nginx, the app sees each client's own address, not nginx's: the recipe's
gunicorn configuration (deploy/gunicorn.conf.py) wraps the app in werkzeug's ``ProxyFix``, believing
the one ``X-Forwarded-For`` hop that nginx (deploy/nginx-site.conf) adds. Clients here connect from
two loopback addresses (127.0.0.2 and 127.0.0.3: Linux routes all of 127/8 to the loopback
device), so a per-client rate limit and gunicorn's access log tell them apart, and a client that
writes an ``X-Forwarded-For`` of its own is still counted as itself."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_deploy_nginx import recipe_stack

#: The example app's ``add``, limited per caller for this test.
LIMIT = {"TOOLDISCOVERY_RATELIMIT_TOOLS": json.dumps({"add": "2/minute"})}


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """nginx's base URL in front of the recipe's gunicorn, and gunicorn's access log."""
    folder = tmp_path_factory.mktemp("proxyfix")
    access_log = folder / "gunicorn-access.log"
    with recipe_stack(folder, LIMIT, ("--access-logfile", str(access_log))) as (_, url):
        yield url, access_log


def post_from(source: str, base: str, path: str, body: object, headers: dict[str, str] | None = None) -> int:
    """The status of a POST sent from the loopback address ``source``."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10, source_address=(source, 0))
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def add_from(source: str, base: str, headers: dict[str, str] | None = None) -> int:
    return post_from(source, base, "/opal/tools/add", {"parameters": {"a": 1, "b": 2}}, headers)


@pytest.mark.slow
def test_rate_limits_count_each_client_behind_nginx(proxied: tuple[str, Path]) -> None:
    base, _ = proxied
    assert [add_from("127.0.0.2", base) for _ in range(3)] == [200, 200, 429]
    # Another client has its own count: nginx's address is not everyone's.
    assert add_from("127.0.0.3", base) == 200
    # A client cannot pass for another: nginx appends the address it saw, and that one is believed.
    assert add_from("127.0.0.3", base, {"X-Forwarded-For": "127.0.0.9"}) == 200
    assert add_from("127.0.0.3", base, {"X-Forwarded-For": "127.0.0.9"}) == 429


@pytest.mark.slow
def test_gunicorns_access_log_names_the_client_behind_nginx(proxied: tuple[str, Path]) -> None:
    base, access_log = proxied
    assert add_from("127.0.0.2", base) in (200, 429)
    deadline = time.monotonic() + 10
    while "127.0.0.2 " not in (text := access_log.read_text() if access_log.exists() else "") \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    addresses = {line.split(" ", 1)[0] for line in text.splitlines() if '"POST /opal/tools/add' in line}
    assert "127.0.0.2" in addresses and "127.0.0.1" not in addresses, text
