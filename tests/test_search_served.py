"""Tool search as the explorer serves it: ``GET /explorer/tools?q=...`` answers the tools the
caller may see that best match, best first (the summaries the list shows), through the core's one
search; a search never stands in for the list, and what cannot be searched is a 400 saying why."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.tools.model import Identity


def build(**config: Any) -> Flask:
    d = ToolDiscovery()
    d.add_tool(lambda: 1, name="pulls_create", title="Create a pull request", description="Open a pull request.")
    d.add_tool(lambda: 1, name="pulls_list", title="List pull requests", description="List pull requests.",
               annotations={"readOnlyHint": True})
    d.add_tool(lambda: 1, name="runs_cancel", title="Cancel a workflow run", description="Cancel a workflow run.")
    d.add_tool(lambda: 1, name="secrets_delete", title="Delete a secret", description="Delete a repository secret.",
               scopes=["admin"])

    @d.identity
    def from_headers(request) -> Identity | None:
        if "X-User" not in request.headers:
            return None
        return Identity(subject=request.headers["X-User"], scopes=tuple(request.headers.get("X-Scopes", "").split()))

    app = Flask("search")
    app.config.update(TESTING=True, TOOLDISCOVERY_DIALECTS=["explorer"], **config)
    d.init_app(app)
    return app


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.get_data(as_text=True)
    return [tool["name"] for tool in response.get_json()]


def test_a_search_answers_the_best_tools_first_as_the_list_shows_them() -> None:
    client = build().test_client()
    found = client.get("/explorer/tools", query_string={"q": "open a PR"})
    assert names(found)[0] == "pulls_create"
    listed = {t["name"]: t for t in client.get("/explorer/tools").get_json()}
    assert found.get_json()[0] == listed["pulls_create"]
    assert names(client.get("/explorer/tools", query_string={"q": "stop the CI build", "limit": "1"})) == \
        ["runs_cancel"]


def test_nobody_finds_a_tool_they_cannot_see() -> None:
    client = build().test_client()
    query = {"q": "delete the secret", "limit": "5"}
    assert "secrets_delete" not in names(client.get("/explorer/tools", query_string=query))
    assert "secrets_delete" not in names(client.get("/explorer/tools", query_string=query,
                                                    headers={"X-User": "alice"}))
    admin = names(client.get("/explorer/tools", query_string=query, headers={"X-User": "root", "X-Scopes": "admin"}))
    assert admin[0] == "secrets_delete"


def test_a_search_never_stands_in_for_the_list() -> None:
    """The list is cached and its bytes replayed by the discovery fast path: a search between two
    lists changes neither."""
    client = build().test_client()
    first = client.get("/explorer/tools")
    assert len(first.get_json()) == 3
    assert len(names(client.get("/explorer/tools", query_string={"q": "pull request", "limit": "1"}))) == 1
    again = client.get("/explorer/tools")
    assert again.get_data() == first.get_data() and again.headers["ETag"] == first.headers["ETag"]


@pytest.mark.parametrize(("query", "words"), [
    ({"q": ""}, "non-empty"),
    ({"q": "   "}, "non-empty"),
    ({"q": "pull " * 200}, "longer than 500"),
    ({"q": "pull\x00request"}, "control characters"),
    ({"q": "pull", "limit": "0"}, "from 1 to 50"),
    ({"q": "pull", "limit": "-1"}, "from 1 to 50"),
    ({"q": "pull", "limit": "10000"}, "from 1 to 50"),
    ({"q": "pull", "limit": "ten"}, "from 1 to 50"),
    ({"q": "pull", "limit": "99999999999999999999"}, "from 1 to 50"),
    ({"q": "?!"}, "no word"),
])
def test_what_cannot_be_searched_is_a_400_saying_why(query: dict[str, str], words: str) -> None:
    response = build().test_client().get("/explorer/tools", query_string=query)
    assert response.status_code == 400
    assert words in response.get_json()["error"]


def test_a_binary_query_string_is_a_400_not_a_500() -> None:
    response = build().test_client().get("/explorer/tools?q=%ff%fe%00")
    assert response.status_code == 400 and "error" in response.get_json()
