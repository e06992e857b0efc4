"""The tool-search index: it finds a tool by what it is for in the words people use, prefers the
tool that does the action asked, sees only the tools it was built from, and refuses what it cannot
search with a clear error; on GitHub's REST API as 1,223 tools it finds the right one in its top 5
for most plain-language tasks it was not tuned on (bench/search_tasks.txt, bench/bench_search.py)."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

from flask_tooldiscovery.search.index import MAX_QUERY_CHARS, SearchIndex, searchable
from flask_tooldiscovery.search.query import planned
from flask_tooldiscovery.tools.model import Tool
from flask_tooldiscovery.tools.providers import tool_from_object

ROOT = Path(__file__).resolve().parent.parent
#: GitHub's REST API as tools: ``shared/data`` beside the checkout, or where the variable says.
CATALOGUE = Path(os.environ.get("TOOLDISCOVERY_GITHUB_TOOLS")
                 or ROOT.parent / "shared" / "data" / "github-rest-tools.json")


def tool(name: str, title: str, description: str = "", **options: object) -> Tool:
    options.setdefault("input_schema", {"type": "object"})
    return Tool(name=name, title=title, description=description or title, **options)  # type: ignore[arg-type]


WIDGETS = [
    tool("widgets_get", "Get a widget", annotations={"readOnlyHint": True}),
    tool("widgets_delete", "Delete a widget", annotations={"destructiveHint": True}),
    tool("widgets_create", "Create a widget"),
    tool("pulls_create", "Create a pull request", "Open a pull request from a branch."),
    tool("pulls_list", "List pull requests", annotations={"readOnlyHint": True}),
    tool("runs_cancel", "Cancel a workflow run"),
    tool("runs_list", "List workflow runs", annotations={"readOnlyHint": True}),
]


def names(index: SearchIndex, query: str, limit: int = 5) -> list[str]:
    return [hit.name for hit in index.search(query, limit)]


def test_the_words_people_use_find_what_the_tool_calls_it() -> None:
    index = SearchIndex.build(WIDGETS)
    assert names(index, "open a PR", 1) == ["pulls_create"]
    assert names(index, "show me the merge requests", 1) == ["pulls_list"]
    assert names(index, "stop the CI build", 1) == ["runs_cancel"]


GITHUB_LIKE = [
    tool("issues_create", "Create an issue", "Open an issue in a repository."),
    tool("issues_get", "Get an issue", annotations={"readOnlyHint": True}),
    tool("issues_list", "List issues", annotations={"readOnlyHint": True}),
    tool("pulls_create", "Create a pull request", "Open a pull request from a branch."),
    tool("pulls_merge", "Merge a pull request"),
    tool("reviews_create", "Create a review for a pull request", "Approve, comment or request changes."),
    tool("runners_list", "List self-hosted runners for a repository", annotations={"readOnlyHint": True}),
    tool("runs_list", "List workflow runs for a repository", annotations={"readOnlyHint": True}),
    tool("workflows_enable", "Enable a workflow"),
    tool("workflows_disable", "Disable a workflow"),
    tool("repos_star", "Star a repository for the authenticated user"),
    tool("repos_unstar", "Unstar a repository for the authenticated user", annotations={"destructiveHint": True}),
    tool("repos_get", "Get a repository", annotations={"readOnlyHint": True}),
]


@pytest.mark.parametrize(("query", "expected"), [
    ("log a defect", "issues_create"),  # Jira
    ("LGTM this MR", "reviews_create"),  # GitLab, code review slang
    ("sign off on the PR", "reviews_create"),
    ("list our build agents", "runners_list"),  # Jenkins
    ("bookmark a repo", "repos_star"),
])
def test_other_products_and_slang_find_what_github_calls_it(query: str, expected: str) -> None:
    assert names(SearchIndex.build(GITHUB_LIKE), query, 1) == [expected]


def test_a_phrase_or_a_synonym_says_the_action_asked() -> None:
    index = SearchIndex.build(GITHUB_LIKE)
    assert names(index, "turn off the workflow", 1) == ["workflows_disable"]
    assert names(index, "pause the workflow", 1) == ["workflows_disable"]
    assert names(index, "resume the workflow", 1) == ["workflows_enable"]


def test_a_tool_that_undoes_is_found_by_what_it_undoes() -> None:
    """"Unstar" removes a star: removing a bookmark (a star) finds it before starring."""
    assert names(SearchIndex.build(GITHUB_LIKE), "remove my bookmark on this repository", 1) == ["repos_unstar"]


def test_a_question_about_a_plural_asks_for_a_list() -> None:
    index = SearchIndex.build([t for t in GITHUB_LIKE if t.name in ("issues_get", "issues_list")])
    assert names(index, "what bugs are open", 1) == ["issues_list"]
    assert names(index, "what is issue 42 about", 1) == ["issues_get"]


@pytest.mark.parametrize("query", ["read the contents of src/app.py", "read .github/workflows/ci.yml",
                                   "get README.md"])
def test_a_path_in_a_query_is_a_file_not_its_words(query: str) -> None:
    """"src/app.py" asks for a file: its words (an app, "py") are not what the query is about."""
    index = SearchIndex.build([
        tool("apps_list", "List installations for the authenticated app", "Lists the app's installations.",
             annotations={"readOnlyHint": True}),
        tool("workflows_list", "List repository workflows", "Lists the workflows in a repository.",
             annotations={"readOnlyHint": True}),
        tool("contents_get", "Get repository content", "Gets the contents of a file or directory in a repository.",
             annotations={"readOnlyHint": True}),
    ])
    assert names(index, query, 1) == ["contents_get"]


def test_a_commit_hash_in_a_query_is_a_commit() -> None:
    index = SearchIndex.build([
        tool("commits_get", "Get a commit", "Returns the contents of a single commit reference.",
             annotations={"readOnlyHint": True}),
        tool("files_list", "List pull request files", "Lists the files changed in a pull request.",
             annotations={"readOnlyHint": True}),
    ])
    assert names(index, "what changed in 9fceb02", 1) == ["commits_get"]


def test_the_tool_doing_the_action_asked_comes_first() -> None:
    index = SearchIndex.build(WIDGETS)
    assert names(index, "remove the widget", 1) == ["widgets_delete"]
    assert names(index, "fetch a widget", 1) == ["widgets_get"]
    assert names(index, "make a widget", 1) == ["widgets_create"]


@pytest.mark.parametrize("first", [0, 1])  # whichever was registered first
def test_the_hints_say_which_of_two_tools_alike_does_what_the_query_asks(first: int) -> None:
    # Two tools the words cannot tell apart (same name parts, title and description, no action in
    # the title): only their hints can.
    def pair(one: dict[str, bool], other: dict[str, bool]) -> list[Tool]:
        tools = [tool("settings_a", "Widget settings", annotations=one),
                 tool("settings_b", "Widget settings", annotations=other)]
        return tools if first == 0 else tools[::-1]

    index = SearchIndex.build(pair({"readOnlyHint": True}, {}))
    assert names(index, "change the widget settings", 1) == ["settings_b"]  # a read-only tool changes nothing
    index = SearchIndex.build(pair({"destructiveHint": True}, {}))
    assert names(index, "look at the widget settings", 1) == ["settings_b"]  # reading asks no destruction
    assert names(index, "delete the widget settings", 1) == ["settings_a"]

def test_an_index_knows_only_the_tools_it_was_built_from() -> None:
    """An index is built per visible set: a tool left out is never found."""
    index = SearchIndex.build([t for t in WIDGETS if t.name != "widgets_delete"])
    assert "widgets_delete" not in names(index, "delete widget", 10)
    assert len(index) == len(WIDGETS) - 1


def test_parameters_tags_and_category_are_searched() -> None:
    index = SearchIndex.build([
        tool("a", "Send", input_schema={"type": "object", "properties": {"invoice_id": {"type": "string"}}}),
        tool("b", "Send", tags=["billing"]),
        tool("c", "Send", category="weather"),
    ])
    assert names(index, "invoice", 1) == ["a"]
    assert names(index, "billing", 1) == ["b"]
    assert names(index, "weather", 1) == ["c"]


@pytest.mark.parametrize("query", ["", "   ", "!!! ???", "the of a"])
def test_a_query_with_nothing_to_search_for_finds_nothing_and_says_so(query: str) -> None:
    assert not searchable(query)
    assert SearchIndex.build(WIDGETS).search(query) == []


@pytest.mark.parametrize("query", ["Cancel the CI build", "cancel the ci build?", "cancel\tthe CI  build",
                                   "CANCEL, the ci build now!", "cancel the ci build"])
def test_a_query_is_read_alike_whatever_its_case_spacing_or_punctuation(query: str) -> None:
    """Plain words are read by the quick way (split at spaces), the rest by the word pattern: the
    same plan either way, and again when its words were met before (the second reading)."""
    expected = ("cancel", "ci", "workflow", "run", "check", "build"), "cancel"
    plan = planned(query)
    planned.cache_clear()
    assert planned(query) == plan
    assert (plan.terms, plan.wanted) == expected
    assert names(SearchIndex.build(WIDGETS), query, 1) == ["runs_cancel"]


def test_huge_and_binary_queries_are_read_up_to_a_limit() -> None:
    index = SearchIndex.build(WIDGETS)
    assert names(index, "delete widget " + "x" * 1_000_000, 1) == ["widgets_delete"]
    assert names(index, "\x00\xff\ufffd delete widget \x01", 1) == ["widgets_delete"]
    assert names(index, "zzz " * (MAX_QUERY_CHARS // 4) + "widget") == []  # past the limit: not read


def test_a_limit_of_zero_or_less_finds_nothing_and_a_large_one_all_that_match() -> None:
    index = SearchIndex.build(WIDGETS)
    assert index.search("widget", 0) == [] and index.search("widget", -1) == []
    assert {h.name for h in index.search("widget", 10_000)} == {"widgets_get", "widgets_delete", "widgets_create"}


def test_the_plain_tool_comes_before_one_about_more_than_was_asked() -> None:
    """"Create an issue" covers all the query asks; "Create issue type for an organization" adds
    what nobody asked for (GitHub's own titles and descriptions)."""
    index = SearchIndex.build([
        tool("orgs_create_issue_type", "Create issue type for an organization",
             "Create issue type for an organization. Create a new issue type for an organization."),
        tool("orgs_create_issue_field", "Create issue field for an organization",
             "Create issue field for an organization. Creates a new issue field for an organization."),
        tool("issues_create", "Create an issue", "Create an issue. Any user with pull access to a repository "
             "can create an issue. If issues are disabled in the repository, the API returns a 410 Gone status."),
    ])
    assert names(index, "open an issue", 1) == ["issues_create"]


def test_a_word_finds_its_relatives() -> None:
    """The light stemmer leaves "contributed" (contribut) and "contributors" (contributor) apart;
    one begins with the other, so the query finds it."""
    index = SearchIndex.build([
        tool("repos_list_activities", "List repository activities", "Who did what in a repository."),
        tool("repos_list_contributors", "List repository contributors", "Lists contributors to a repository."),
        tool("repos_list_watchers", "List watchers", "Who watches a repository."),
    ])
    assert names(index, "who contributed to the repository", 1) == ["repos_list_contributors"]


def test_show_asks_for_a_list_as_much_as_for_one_thing() -> None:
    index = SearchIndex.build([
        tool("rulesets_history", "Get ruleset history", "Get the history of a ruleset's commits and changes.",
             annotations={"readOnlyHint": True}),
        tool("commits_list", "List commits", "List the commits of a branch, newest first.",
             annotations={"readOnlyHint": True}),
    ])
    assert names(index, "show the commits", 1) == ["commits_list"]


def test_an_empty_tool_set_finds_nothing() -> None:
    assert SearchIndex.build([]).search("widget") == []


def test_what_searched_terms_find_is_kept_within_its_bound() -> None:
    """Each term searched keeps what it finds (its postings and its relatives', packed: copies) for
    the next search of it; the copies are bounded at a quarter of the index's postings, and the
    count that bounds them stays true when two threads work out the same term at once (both miss,
    both call ``found_by``): the first kept stays, counted once."""
    index = github_index()
    ranking = index._ranking
    ranking._found.clear()
    ranking._packed = 0

    def packed() -> int:  # the postings the terms kept hold as copies (a view's values are the index's)
        return sum(len(found.values) for found in ranking._found.values() if found.values.base is None)

    first = ranking.found_by("contribut")  # "contributor", "contributors"... its relatives: packed
    assert first.values.base is None and first.relatives
    assert ranking.found_by("contribut") is first  # the second thread's, worked out again
    assert ranking._packed == packed() == len(first.values)
    words = sorted({w for t in catalogue() for w in (t.title or "").lower().split() if len(w) >= 5})
    for word in words:
        index.search(word, 5)
        assert ranking._packed == packed() <= ranking._most_packed
    assert 0 < ranking._most_packed < len(ranking._postings.docs)


def catalogue() -> list[Tool]:
    if not CATALOGUE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{CATALOGUE} is missing (shared/data beside the checkout)")
        pytest.skip(f"{CATALOGUE} is not here (set TOOLDISCOVERY_GITHUB_TOOLS)")
    return [tool_from_object(t) for t in json.loads(CATALOGUE.read_text())["tools"]]


def recall_at_5(index: SearchIndex, file: str, which: str) -> tuple[float, int]:
    tasks = [line.split("|") for line in (ROOT / "bench" / file).read_text().splitlines() if line.startswith(which)]
    found = sum(bool({h.name for h in index.search(task, 5)} & set(expected.split())) for _, task, expected in tasks)
    return found / len(tasks), len(tasks)


@pytest.mark.parametrize(("query", "expected"), [
    # a plural said without a verb asks for a list (it found "Delete a codespace..." first)
    ("the codespaces of the authenticated user", "codespaces__list_for_authenticated_user"),
    # a verb undoing one that creates asks to delete (they found a list first)
    ("unregister a self-hosted runner from the repository", "actions__delete_self_hosted_runner_from_repo"),
    ("uninvite a collaborator", "repos__remove_collaborator"),
])
def test_githubs_rest_api_what_a_query_asks_without_saying_it(query: str, expected: str) -> None:
    assert names(github_index(), query, 1) == [expected]


@lru_cache(maxsize=1)
def github_index() -> SearchIndex:
    return SearchIndex.build(catalogue())


def test_githubs_rest_api_the_right_tool_is_in_the_top_5_for_most_tasks() -> None:
    """Floors under bench/bench_search.py's recall@5, each the figure last measured less a margin.
    Tuned on: the held tasks (0.97; flat BM25 0.78), the tune tasks (0.97; 0.57), the dev set
    written for part 3 in the words people use (0.91; 0.42), the "dev2" half of the set written for
    part 4 from the catalogue alone (0.68 before part 4, 0.73 after; 0.53). Never tuned on: its
    "dev2held" half (0.82; 0.45), the "dev3held" set in other styles (0.82; 0.67), and the blind
    sets, written by people who had not read the code (blind: 0.65 before part 4, 0.66 after, flat
    BM25 0.34; blind2: 0.79 before, 0.80 after, 0.54): a change that makes search worse fails here."""
    index = SearchIndex.build(catalogue())
    for file, which, count, floor in (
            ("search_tasks.txt", "held", 90, 0.96),
            ("search_tasks.txt", "tune", 30, 0.96),
            ("search_tasks_dev.txt", "dev", 140, 0.90),
            ("search_tasks_dev2.txt", "dev2 ", 90, 0.70),
            ("search_tasks_dev2.txt", "dev2held", 90, 0.79),
            ("search_tasks_dev3.txt", "dev3held", 60, 0.79),
            ("search_tasks_blind.txt", "blind", 100, BLIND_FLOOR),
            ("search_tasks_blind2.txt", "blind2", 250, BLIND2_FLOOR)):
        found, tasks = recall_at_5(index, file, which)
        assert tasks >= count and found >= floor, (which, found)


#: The blind set's floor: 0.66 at the end of part 4, less a margin.
BLIND_FLOOR = 0.62
#: The second blind set's floor (270 tasks written from the catalogue alone): 0.80 at the end of
#: part 4, less a margin.
BLIND2_FLOOR = 0.77


def test_an_app_that_never_searches_never_imports_numpy() -> None:
    """numpy is the index's scoring core, imported when an index is first built: an app serving
    every dialect, listed and called, never pays its import time and memory (each gunicorn
    worker and each ``flask`` command would)."""
    import subprocess
    import sys

    script = """
import sys
from flask import Flask
from flask_tooldiscovery import ToolDiscovery
app = Flask("plain")
app.config.update(TOOLDISCOVERY_DIALECTS=["mcp", "opal", "oxp", "tdp", "explorer", "utcp", "openapi"],
                  TOOLDISCOVERY_ALLOW_EXECUTE=True)
discovery = ToolDiscovery(app)

@discovery.tool
def ping() -> str:
    "Answer pong."
    return "pong"

client = app.test_client()
assert client.get("/explorer/tools").status_code == 200
assert client.post("/explorer/tools/ping/call", json={}).status_code == 200
before = "numpy" in sys.modules
assert client.get("/explorer/tools?q=ping").get_json()[0]["name"] == "ping"
print(before, "numpy" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["False", "True"]  # imported by the first search, not before
