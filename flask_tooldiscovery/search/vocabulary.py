"""The words people use for what a tool does, beside the words its author used: phrases that name
the same thing (a PR is a pull request, a build is a workflow run), and the verbs of an action
(open, file, propose: create). Both sides of a search are read through it: a tool's name, title
and hints when the index is built, a query when it is searched."""

from __future__ import annotations

import re

#: Phrases a query may say, and what tools call the same thing. Keys are lower-case word
#: sequences; a query's phrase adds its expansion's words to what it looks for (never removes any).
SAME_THING: dict[tuple[str, ...], str] = {
    ("pr",): "pull request",
    ("prs",): "pull request",
    ("merge", "request"): "pull request",
    ("merging",): "pull request merge",
    ("logged", "in"): "authenticated user",
    ("signed", "in"): "authenticated user",
    ("ask",): "request",
    ("starred",): "stargazers starred",
    ("mr",): "pull request",
    ("ci",): "workflow run check",
    ("build",): "workflow run",
    ("builds",): "workflow run",
    ("pipeline",): "workflow run",
    ("job",): "workflow job",
    ("actions",): "workflow",
    ("bug",): "issue",
    ("ticket",): "issue",
    ("report",): "issue",
    ("repo",): "repository",
    ("repos",): "repository",
    ("project",): "repository",
    ("branch",): "branch ref",
    ("tag",): "tag ref",
    ("snippet",): "gist",
    ("paste",): "gist",
    ("env", "var"): "variable",
    ("environment", "variable"): "variable",
    ("credential",): "secret",
    ("password",): "secret",
    ("token",): "token secret",
    ("people",): "user",
    ("developer",): "user",
    ("someone",): "user",
    ("profile",): "user",
    ("account",): "user",
    ("me",): "authenticated",
    ("my",): "authenticated",
    ("i",): "authenticated",
    ("logs",): "log",
    ("emoji",): "reaction emojis",
    ("like",): "reaction star",
    ("deploy",): "deployment",
}

#: Kinds of action, each with the verbs that say it: a tool's kind is the first verb of its title
#: or name; a query's, the first of its words that names one.
ACTIONS: dict[str, frozenset[str]] = {
    "create": frozenset({"create", "open", "new", "make", "add", "file", "propose", "start", "write", "submit",
                         "post", "raise", "generate", "upload", "register", "draft", "fork", "commit", "share"}),
    "delete": frozenset({"delete", "remove", "drop", "erase", "destroy", "purge", "discard", "revoke"}),
    "update": frozenset({"update", "edit", "change", "modify", "rename", "set", "replace", "close", "reopen",
                         "configure", "move", "transfer"}),
    "list": frozenset({"list", "all", "recent", "browse", "enumerate", "who", "which"}),
    "get": frozenset({"get", "read", "fetch", "show", "see", "view", "look", "what", "download", "check",
                      "how", "is", "has"}),
    "cancel": frozenset({"cancel", "stop", "abort", "halt", "kill", "terminate"}),
    "rerun": frozenset({"rerun", "retry", "restart", "again", "rerequest", "re"}),
    "search": frozenset({"search", "find", "lookup", "query", "mentioning"}),
    "merge": frozenset({"merge", "merging", "combine", "land"}),
}

#: The actions a tool that only reads (``readOnlyHint``) or that destroys (``destructiveHint``) does.
READING = frozenset({"list", "get", "search"})
DESTROYING = frozenset({"delete"})

#: Words that say nothing of what is wanted.
STOPWORDS = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "of", "for", "to", "in", "on", "at", "by", "with", "from",
    "into", "onto", "as", "and", "or", "please", "can", "could", "would", "should", "will", "shall", "do", "does",
    "did", "be", "been", "being", "are", "was", "were", "it", "its", "some", "any", "every", "each", "one", "via",
    "about", "up", "out", "so", "just", "now", "already",
})

_WORD = re.compile(r"[a-z0-9]+")
#: A word of an identifier: lower-case letters or digits led by at most one capital (``listPull``:
#: ``list``, ``Pull``), or capitals not followed by a lower-case letter (``HTTPServer``: ``HTTP``).
_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def words(text: str) -> list[str]:
    """``text`` as lower-case words (``re-run``: ``re``, ``run``)."""
    return _WORD.findall(text.lower())


def identifier_words(name: str) -> list[str]:
    """An identifier's words, lower-case (``listPullRequests``, ``pulls__list``, ``get-repo``)."""
    return [w.lower() for w in _PART.findall(name)]


def action_of(verbs: list[str]) -> str | None:
    """The kind of action the first verb of ``verbs`` that names one says, or ``None``."""
    for word in verbs:
        for action, said in ACTIONS.items():
            if word in said:
                return action
    return None


def expand(query_words: list[str]) -> list[str]:
    """``query_words`` with what each phrase of it also names, without stopwords, in order."""
    found: list[str] = []
    i = 0
    while i < len(query_words):
        for size in (2, 1):
            phrase = tuple(query_words[i:i + size])
            if len(phrase) == size and phrase in SAME_THING:
                found.extend(query_words[i:i + size])
                found.extend(SAME_THING[phrase].split())
                i += size
                break
        else:
            found.append(query_words[i])
            i += 1
    return [w for w in found if w not in STOPWORDS]
