"""Existing Flask views as tools: flask-smorest, webargs, apispec docstrings and plain views, called
through the app itself so that the view's own auth, validation and error handlers apply."""

from __future__ import annotations

import logging
from typing import Any

import marshmallow as ma
import pytest
from flask import Blueprint as FlaskBlueprint
from flask import Flask, abort, g, jsonify, request
from flask.views import MethodView
from flask_smorest import Api
from flask_smorest import Blueprint as SmorestBlueprint
from flask_smorest import abort as smorest_abort
from webargs import fields as wf
from webargs.flaskparser import use_args

from flask_tooldiscovery import ToolDiscovery
from flask_tooldiscovery.tools.function_tools import RegistrationError
from flask_tooldiscovery.views.calls import ENVIRON_KEY

from .conformance.drivers import DRIVERS


class BookSchema(ma.Schema):
    id = ma.fields.Integer(dump_only=True, metadata={"description": "Id."})
    title = ma.fields.String(required=True, validate=ma.validate.Length(min=1), metadata={"description": "Title."})
    year = ma.fields.Integer(validate=ma.validate.Range(min=1450), metadata={"description": "Year published."})

    @ma.validates("title")
    def not_shouting(self, value: str, **kwargs: Any) -> None:
        if value.isupper():
            raise ma.ValidationError("Titles are not written in capitals.")


class BookQuery(ma.Schema):
    after = ma.fields.Integer(metadata={"description": "Published after this year."})


def library() -> SmorestBlueprint:
    blp = SmorestBlueprint("books", __name__, url_prefix="/books")

    @blp.route("/")
    class Books(MethodView):
        @blp.arguments(BookQuery, location="query")
        @blp.response(200, BookSchema(many=True))
        def get(self, args: dict[str, Any]) -> list[dict[str, Any]]:
            """List books."""
            return [b for b in g_books() if b.get("year", 0) > args.get("after", 0)]

        @blp.arguments(BookSchema)
        @blp.response(201, BookSchema)
        def post(self, book: dict[str, Any]) -> dict[str, Any]:
            """Add a book."""
            if request.headers.get("X-Librarian") != "yes":
                smorest_abort(403, message="Only librarians add books.")
            book = {"id": len(g_books()) + 1, **book}
            g_books().append(book)
            return book

    @blp.route("/bulk")
    class Bulk(MethodView):
        @blp.arguments(BookSchema(many=True))
        @blp.response(201, BookSchema(many=True))
        def post(self, books: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """Add several books."""
            added = [{"id": len(g_books()) + i + 1, **b} for i, b in enumerate(books)]
            g_books().extend(added)
            return added

    @blp.route("/<int:book_id>")
    class Book(MethodView):
        @blp.response(200, BookSchema)
        def get(self, book_id: int) -> dict[str, Any]:
            """One book.

            Args:
                book_id: The book's id.
            """
            if book_id == 13:
                raise RuntimeError("db password hunter2")
            for b in g_books():
                if b["id"] == book_id:
                    return b
            smorest_abort(404, message=f"No book {book_id}.")
            raise AssertionError  # unreachable

    return blp


BOOKS: list[dict[str, Any]] = []


def g_books() -> list[dict[str, Any]]:
    return BOOKS


@pytest.fixture(autouse=True)
def fresh_books() -> None:
    BOOKS[:] = [{"id": 1, "title": "Dune", "year": 1965}, {"id": 2, "title": "Emma", "year": 1815}]


def smorest_app(discovery: ToolDiscovery, **config: Any) -> Flask:
    app = Flask("conformance")  # the conformance drivers name OXP tools with this toolkit
    app.config.update({"TESTING": True, "API_TITLE": "Library", "API_VERSION": "1", "OPENAPI_VERSION": "3.0.3",
                       "TOOLDISCOVERY_ALLOW_EXECUTE": True, **config})
    Api(app).register_blueprint(library())
    discovery.init_app(app)
    return app


def named_books() -> ToolDiscovery:
    discovery = ToolDiscovery()
    discovery.add_view("books.Books", method="GET", name="list_books")
    discovery.add_view("books.Books", method="POST", name="add_book")
    discovery.add_view("books.Book", name="get_book")
    return discovery


def mcp_call(client: Any, name: str, arguments: Any, **kw: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    result: dict[str, Any] = client.post("/mcp", json=body, **kw).get_json()["result"]
    return result


def oxp_call(client: Any, name: str, arguments: Any, **kw: Any) -> dict[str, Any]:
    body = {"request": {"tool_id": f"Conformance.{name}", "input": arguments}}
    result: dict[str, Any] = client.post("/oxp/tools/call", json=body, **kw).get_json()["result"]
    return result


def test_smorest_views_get_their_declared_schemas() -> None:
    app = smorest_app(named_books())
    tools = {t.name: t for t in app.extensions["tooldiscovery"].registry.resolve()}
    assert set(tools) == {"list_books", "add_book", "get_book"}
    assert tools["add_book"].input_schema == {
        "type": "object", "properties": {
            "title": {"type": "string", "minLength": 1, "description": "Title."},
            "year": {"type": "integer", "minimum": 1450, "description": "Year published."}},
        "required": ["title"], "additionalProperties": False}
    assert tools["list_books"].input_schema["properties"] == {
        "after": {"type": "integer", "description": "Published after this year."}}
    assert tools["get_book"].input_schema["properties"]["book_id"] == {
        "type": "integer", "minimum": 0, "description": "The book's id."}
    assert tools["get_book"].input_schema["required"] == ["book_id"]
    assert tools["list_books"].description == "List books."
    assert tools["list_books"].annotations == {"readOnlyHint": True, "idempotentHint": True}
    assert tools["add_book"].annotations["readOnlyHint"] is False
    assert tools["get_book"].output_schema["properties"]["id"] == {"type": "integer", "description": "Id."}


def test_smorest_views_are_called_through_mcp_and_oxp() -> None:
    client = smorest_app(named_books()).test_client()
    listed = mcp_call(client, "list_books", {"after": 1900})
    assert listed["isError"] is False and listed["structuredContent"] == {
        "result": [{"id": 1, "title": "Dune", "year": 1965}]}
    one = oxp_call(client, "get_book", {"book_id": 2})
    assert one == {**one, "success": True, "value": {"id": 2, "title": "Emma", "year": 1815}}
    added = mcp_call(client, "add_book", {"title": "Ulysses", "year": 1922}, headers={"X-Librarian": "yes"})
    assert added["structuredContent"] == {"id": 3, "title": "Ulysses", "year": 1922}


def test_the_views_own_validation_errors_surface_in_mcp_and_oxp() -> None:
    client = smorest_app(named_books()).test_client()
    headers = {"X-Librarian": "yes"}
    message = "422 Unprocessable Entity: title: Titles are not written in capitals."
    via_mcp = mcp_call(client, "add_book", {"title": "DUNE"}, headers=headers)
    assert via_mcp["isError"] is True and via_mcp["content"][0]["text"] == message
    via_oxp = oxp_call(client, "add_book", {"title": "DUNE"}, headers=headers)
    assert via_oxp["success"] is False and via_oxp["error"]["message"] == message
    # what the schema says is checked before the view runs, in every dialect's own words
    invalid = mcp_call(client, "add_book", {"year": 1200}, headers=headers)
    assert invalid["isError"] and "title: Missing required parameter" in invalid["content"][0]["text"]


def test_the_views_own_auth_sees_the_callers_headers() -> None:
    client = smorest_app(named_books()).test_client()
    refused = oxp_call(client, "add_book", {"title": "Emma"})
    assert refused["error"]["message"] == "403 Forbidden: Only librarians add books."
    assert oxp_call(client, "add_book", {"title": "Emma"}, headers={"X-Librarian": "yes"})["success"] is True


def test_a_views_404_is_the_tools_error() -> None:
    client = smorest_app(named_books()).test_client()
    result = mcp_call(client, "get_book", {"book_id": 99})
    assert result["isError"] and result["content"][0]["text"] == "Not found: No book 99."


#: Each dialect's not-found answer to a call whose tool ran and found nothing under what it was
#: given: (path, body of get_book(book_id=99)) -> (HTTP status, what the body says).
NOT_FOUND: dict[str, tuple[str, dict[str, Any], int, Any]] = {
    # Opal: 404 as for anything not there (its SDK answers only 400/401/500; opal-notes: 404 for the missing)
    "opal": ("/opal/tools/get_book", {"parameters": {"book_id": 99}}, 404,
             {"error": "Not found: No book 99.", "detail": "Not found: No book 99."}),
    # TDP's own code for it: not_found, 404
    "tdp": ("/api/v1/tools/execute", {"tool_name": "get_book", "arguments": {"book_id": 99}}, 404,
            {"success": False, "error": "Not found: No book 99.", "code": "not_found", "is_async": False}),
    "utcp": ("/utcp/tools/get_book", {"book_id": 99}, 404, {"error": "Not found: No book 99."}),
    # the explorer (F3): a tool's failure, 500 with isError (its 404 is an unknown tool)
    "explorer": ("/explorer/tools/get_book/call", {"book_id": 99}, 500,
                 {"content": [{"type": "text", "text": "Not found: No book 99."}], "isError": True}),
    # OXP: the tool ran and failed, which its taxonomy answers 200 success: false (400 is an unknown tool)
    "oxp": ("/oxp/tools/call", {"request": {"tool_id": "Conformance.get_book", "input": {"book_id": 99}}}, 200,
            {"success": False, "error": {"message": "Not found: No book 99."}}),
    # MCP: a tool execution error (a JSON-RPC error is for an unknown tool or a malformed request)
    "mcp": ("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "get_book", "arguments": {"book_id": 99}}}, 200,
            {"content": [{"type": "text", "text": "Not found: No book 99."}], "isError": True}),
}


def reading(dialect: str, body: Any) -> Any:
    """The part of a dialect's answer :data:`NOT_FOUND` says."""
    if dialect == "oxp":
        return {"success": body["result"]["success"], "error": {"message": body["result"]["error"]["message"]}}
    if dialect == "mcp":
        return {k: body["result"][k] for k in ("content", "isError")}
    if dialect == "explorer":
        return {k: body[k] for k in ("content", "isError")}
    return body


@pytest.mark.parametrize("dialect", sorted(NOT_FOUND))
def test_a_views_404_is_each_dialects_not_found(dialect: str) -> None:
    """A view offered as a tool that answers 404 (the book is not there) is the protocol's own
    not-found, not a 500 (Opal, TDP), a 422 reading "404 Not Found:" (UTCP) or a bare tool error."""
    client = smorest_app(named_books(), TOOLDISCOVERY_DIALECTS=[dialect]).test_client()
    path, body, status, says = NOT_FOUND[dialect]
    answer = client.post(path, json=body)
    assert (answer.status_code, reading(dialect, answer.get_json())) == (status, says)


@pytest.mark.parametrize("dialect", sorted(NOT_FOUND))
def test_a_tool_says_not_found_with_tool_error(dialect: str) -> None:
    """The same category for a tool of its own: ``ToolError(..., not_found=True)``."""
    from flask_tooldiscovery import ToolError

    discovery = ToolDiscovery()

    @discovery.tool
    def get_book(book_id: int) -> dict[str, Any]:
        """One book.

        Args:
            book_id: The book's id.
        """
        raise ToolError(f"Not found: No book {book_id}.", not_found=True)

    client = smorest_app(discovery, TOOLDISCOVERY_DIALECTS=[dialect]).test_client()
    path, body, status, says = NOT_FOUND[dialect]
    answer = client.post(path, json=body)
    assert (answer.status_code, reading(dialect, answer.get_json())) == (status, says)


@pytest.mark.parametrize("testing", [True, False])
def test_a_views_crash_is_a_failure_that_leaks_nothing(testing: bool, caplog: pytest.LogCaptureFixture) -> None:
    client = smorest_app(named_books(), TESTING=testing).test_client()
    with caplog.at_level(logging.ERROR):
        result = oxp_call(client, "get_book", {"book_id": 13})
    assert result["success"] is False
    assert result["error"]["message"] == "The tool failed with an unexpected error."
    assert "hunter2" not in str(result)
    assert any(r.name == "flask_tooldiscovery" for r in caplog.records)


def test_every_dialect_calls_a_view(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, driver in sorted(DRIVERS.items()):
        client = smorest_app(named_books(), TOOLDISCOVERY_DIALECTS=[name]).test_client()
        result = driver.result(driver.call(client, "get_book", {"book_id": 1}))
        assert result.kind == "ok" and result.value == {"id": 1, "title": "Dune", "year": 1965}, (name, result)
        bad = driver.result(driver.call(client, "get_book", {"book_id": 404}))
        assert bad.kind == "tool_error" and "No book 404." in bad.message, (name, bad)


def test_a_json_array_body_is_one_argument() -> None:
    discovery = ToolDiscovery()
    discovery.add_view("books.Bulk", name="add_books")
    app = smorest_app(discovery)
    tool = app.extensions["tooldiscovery"].registry.resolve().get("add_books")
    assert tool.input_schema["properties"]["body"]["type"] == "array" and tool.input_schema["required"] == ["body"]
    added = mcp_call(app.test_client(), "add_books", {"body": [{"title": "Kim"}, {"title": "Nana", "year": 1880}]})
    assert [b["title"] for b in added["structuredContent"]["result"]] == ["Kim", "Nana"]


def test_a_blueprint_in_bulk() -> None:
    discovery = ToolDiscovery()
    discovery.add_views(blueprint="books", exclude=["books.Book", "books.Bulk"], tags=["library"])
    tools = {t.name: t for t in smorest_app(discovery).extensions["tooldiscovery"].registry.resolve()}
    assert set(tools) == {"books_Books_get", "books_Books_post"}
    assert tools["books_Books_get"].tags == ["library"]


def test_views_by_url_rule_and_include_list() -> None:
    by_rule = ToolDiscovery()
    by_rule.add_views(rule="/books/<*", methods=["GET"])
    assert [t.name for t in smorest_app(by_rule).extensions["tooldiscovery"].registry.resolve()] == ["books_Book"]
    included = ToolDiscovery()
    included.add_views(include=["books.Books"], methods=["post"])
    assert [t.name for t in smorest_app(included).extensions["tooldiscovery"].registry.resolve()] == ["books_Books"]


def plain_app(discovery: ToolDiscovery) -> Flask:
    app = Flask("plain")
    app.config["TESTING"] = True
    bp = FlaskBlueprint("shop", __name__)

    @bp.get("/items/<uuid:item_id>/<any(small, large):size>")
    def item(item_id: Any, size: str) -> Any:
        """Show one item in one size.

        Args:
            item_id: The item.
            size: Which size.
        """
        return {"item": str(item_id), "size": size, "q": request.args.get("q"),
                "as_tool": request.environ.get(ENVIRON_KEY, {}).get("tool"), "g_clean": "seen" not in g}

    @bp.post("/echo")
    def echo() -> Any:
        """Echo the body back."""
        g.seen = True
        return jsonify(request.get_json())

    @bp.get("/search")
    @use_args({"term": wf.Str(required=True, metadata={"description": "What to find."}),
               "limit": wf.Int(load_default=10)}, location="query")
    def search(args: dict[str, Any]) -> Any:
        """Search the shop."""
        return {"term": args["term"], "limit": args["limit"]}

    @bp.get("/text")
    def text() -> Any:
        """Some text.
        ---
        get:
          parameters:
            - in: query
              name: words
              required: true
              schema: {type: integer, minimum: 1}
              description: How many words.
        """
        if int(request.args["words"]) > 100:
            abort(400, "At most 100 words.")
        return "lorem " * int(request.args["words"]), 200, {"Content-Type": "text/plain"}

    app.register_blueprint(bp)
    discovery.init_app(app)
    return app


def test_a_plain_view_gets_its_schema_from_the_url_rule_and_docstring() -> None:
    discovery = ToolDiscovery()
    discovery.add_views(blueprint="shop")
    app = plain_app(discovery)
    tools = {t.name: t for t in app.extensions["tooldiscovery"].registry.resolve()}
    schema = tools["shop_item"].input_schema
    assert schema["properties"]["item_id"] == {"type": "string", "format": "uuid", "description": "The item."}
    assert schema["properties"]["size"] == {"type": "string", "enum": ["large", "small"], "description": "Which size."}
    assert schema["required"] == ["item_id", "size"] and "query" in schema["properties"]
    assert tools["shop_item"].description == "Show one item in one size."
    assert set(tools["shop_echo"].input_schema["properties"]) == {"query", "body"}
    assert tools["shop_search"].input_schema["properties"]["term"] == {"type": "string", "description": "What to find."}
    assert tools["shop_search"].input_schema["required"] == ["term"]
    assert tools["shop_text"].input_schema["properties"]["words"] == {
        "type": "integer", "minimum": 1, "description": "How many words."}


def test_plain_views_are_called_with_path_query_and_body() -> None:
    discovery = ToolDiscovery()
    discovery.add_views(blueprint="shop")
    client = plain_app(discovery).test_client()
    item = mcp_call(client, "shop_item", {"item_id": "6f1c7c1e-0000-4000-8000-000000000000", "size": "large",
                                          "query": {"q": "red"}})
    assert item["structuredContent"] == {"item": "6f1c7c1e-0000-4000-8000-000000000000", "size": "large",
                                         "q": "red", "as_tool": "shop_item", "g_clean": True}
    assert mcp_call(client, "shop_echo", {"body": {"a": [1, 2]}})["structuredContent"] == {"a": [1, 2]}
    assert mcp_call(client, "shop_search", {"term": "socks"})["structuredContent"] == {"term": "socks", "limit": 10}
    assert mcp_call(client, "shop_text", {"words": 2})["content"][0]["text"] == "lorem lorem "


def test_a_plain_views_error_page_becomes_the_message() -> None:
    discovery = ToolDiscovery()
    discovery.add_view("shop.text", name="text")
    client = plain_app(discovery).test_client()
    result = mcp_call(client, "text", {"words": 101})
    assert result["isError"] and result["content"][0]["text"] == "400 Bad Request: At most 100 words."


def test_registration_mistakes_are_named() -> None:
    missing = ToolDiscovery()
    missing.add_view("shop.nothing")
    with pytest.raises(RegistrationError, match=r"'shop\.nothing' is not a view of app 'plain'"):
        plain_app(missing)
    ambiguous = ToolDiscovery()
    ambiguous.add_view("books.Books")
    with pytest.raises(RegistrationError, match="serves GET, POST; say which with method="):
        smorest_app(ambiguous)
    with pytest.raises(RegistrationError, match="never offers every view"):
        ToolDiscovery().add_views()
    with pytest.raises(RegistrationError, match="comes from the view"):
        ToolDiscovery().add_view("x", input_schema={})


def test_one_extension_on_two_apps_offers_each_view_once() -> None:
    discovery = named_books()
    first, second = smorest_app(discovery), smorest_app(discovery)
    assert len(discovery.registry.resolve()) == 3
    assert mcp_call(second.test_client(), "get_book", {"book_id": 1})["isError"] is False
    assert mcp_call(first.test_client(), "get_book", {"book_id": 1})["isError"] is False


def test_the_example_apps_pets_api_as_tools(example_app: Flask) -> None:
    client = example_app.test_client()
    names = [t["name"] for t in client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
             .get_json()["result"]["tools"]]
    assert {"list_pets", "add_pet", "get_pet", "remove_pet"} <= set(names)
    body = {"request": {"tool_id": "ExampleTools.add_pet", "input": {"name": "Rex2", "species": "dog"}}}
    bad = client.post("/oxp/tools/call", json=body).get_json()["result"]
    assert bad["error"]["message"] == "422 Unprocessable Entity: name: A pet's name holds letters and spaces only."
    body = {"request": {"tool_id": "ExampleTools.add_pet", "input": {"name": "Nemo", "species": "cat"}}}
    added = client.post("/oxp/tools/call", json=body).get_json()["result"]
    assert added["value"]["name"] == "Nemo"
    assert mcp_call(client, "list_pets", {"species": "cat"})["structuredContent"]["result"][-1]["name"] == "Nemo"
