"""The words people use for what a tool does, beside the words its author used: phrases that name
the same thing (a PR is a pull request, a build is a workflow run), and the verbs of an action
(open, file, propose: create). Both sides of a search are read through it: a tool's name, title
and hints when the index is built, a query when it is searched."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import filterfalse

#: Phrases a query may say, and what tools call the same thing, by concept. Keys are one or two
#: lower-case words (the longest phrase wins); a query's phrase adds its expansion's words to what it
#: looks for (never removes any), and a verb in an expansion says the action asked.
SAME_THING: dict[tuple[str, ...], str] = {
    # Code review: GitLab's merge requests, approving ("LGTM", "sign off"), asking for reviews.
    ("pr",): "pull request",
    ("prs",): "pull request",
    ("merge", "request"): "pull request",
    ("merge", "requests"): "pull request",
    ("mr",): "pull request",
    ("mrs",): "pull request",
    ("merging",): "pull request merge",
    ("squash",): "merge",
    ("rebase",): "update branch",
    ("lgtm",): "approve review",
    ("sign", "off"): "approve review",
    ("signoff",): "approve review",
    ("approve",): "approve review",
    ("request", "changes"): "review",
    ("reviewer",): "reviewers requested",
    ("asked",): "requested",
    ("ask",): "request",
    ("draft", "review"): "pending review",
    ("target", "branch"): "base branch",
    # CI: Jenkins', GitLab's and everyone's words for GitHub Actions.
    ("ci",): "workflow run check",
    ("build",): "workflow run",
    ("builds",): "workflow run",
    ("pipeline",): "workflow run",
    ("pipelines",): "workflow run",
    ("job",): "workflow job",
    ("jobs",): "workflow job",
    ("actions",): "workflow",
    ("nightly",): "scheduled workflow",
    ("cron",): "scheduled workflow",
    ("build", "machine"): "self hosted runner",
    ("build", "agent"): "self hosted runner",
    ("build", "agents"): "self hosted runner",
    ("build", "server"): "self hosted runner",
    ("build", "outputs"): "artifacts",
    ("build", "output"): "artifacts",
    ("console", "output"): "logs",
    ("output",): "log",
    ("minutes",): "usage billable",
    ("by", "hand"): "manually dispatch",
    ("manually",): "dispatch",
    ("trigger",): "dispatch",
    ("kick", "off"): "trigger dispatch",
    ("config", "value"): "variable",
    ("config", "values"): "variable",
    ("env", "var"): "variable",
    ("environment", "variable"): "variable",
    # Issue trackers: Jira's tickets, bugs and defects, epics and sub-tasks, sprints.
    ("open", "issues"): "list issue",
    ("open", "tickets"): "list issue",
    ("open", "bugs"): "list issue",
    ("open", "prs"): "list pull request",
    ("open", "mrs"): "list pull request",
    ("bug",): "issue",
    ("bugs",): "issue",
    ("ticket",): "issue",
    ("tickets",): "issue",
    ("defect",): "issue",
    ("problem",): "issue",
    ("report",): "issue",
    ("epic",): "parent issue",
    ("child",): "sub",
    ("children",): "sub",
    ("subtask",): "sub issue",
    ("sprint",): "milestone",
    ("unassign",): "remove assignees",
    ("assign",): "assignees",
    ("activity",): "events",
    ("happened",): "events",
    ("freeze",): "lock",
    ("unfreeze",): "unlock",
    # Repositories and what is in them.
    ("repo",): "repository",
    ("repos",): "repository",
    ("project",): "repository",
    ("codebase",): "repository",
    ("branch",): "branch ref",
    ("tag",): "tag ref",
    ("git", "log"): "list commits",
    ("source",): "content",
    ("cut",): "create",
    ("version",): "release",
    ("versions",): "release",
    ("shipped",): "release",
    ("newest",): "latest",
    ("invite",): "invitation collaborator",
    ("teammate",): "collaborator member",
    ("access",): "permission",
    ("signed",): "signature",
    ("private",): "visibility",
    ("require",): "protection",
    ("required",): "protection",
    ("enforce",): "protection",
    ("traffic",): "views clones referrers",
    ("come", "from"): "referrers sources",
    ("staging",): "environment",
    ("production",): "environment deployment",
    ("prod",): "environment deployment",
    ("successful",): "status",
    ("rebuild",): "request build",
    ("tagged",): "topic",
    ("board",): "project",
    ("card",): "project item",
    ("kanban",): "project",
    ("quota",): "rate limit",
    # Stars, watching and notifications (a bookmark or a favourite is a star).
    ("starred",): "stargazers starred",
    ("bookmark",): "star",
    ("bookmarks",): "star",
    ("bookmarked",): "starred",
    ("favorite",): "star",
    ("favourite",): "star",
    ("notified",): "subscription notifications",
    ("notify",): "subscription notifications",
    ("notifications", "from"): "subscription",
    ("mute",): "subscription ignored",
    ("unsubscribe",): "delete subscription",
    ("inbox",): "notifications read",
    # Security: leaks, static analysis, vulnerable dependencies.
    ("leaked",): "secret scanning alerts",
    ("leak",): "secret scanning alerts",
    ("static", "analysis"): "code scanning",
    ("sast",): "code scanning",
    ("findings",): "alerts",
    ("vulnerabilities",): "alerts advisories",
    ("vulnerable",): "dependabot alerts",
    ("cve",): "advisory",
    # Secrets and keys.
    ("credential",): "secret",
    ("credentials",): "secret",
    ("password",): "secret",
    ("token",): "token secret",
    # People, organisations, teams.
    ("org",): "organization",
    ("orgs",): "organization",
    ("company",): "organization",
    ("ban",): "block",
    ("kick",): "remove member",
    ("people",): "user",
    ("developer",): "user",
    ("someone",): "user",
    ("profile",): "user",
    ("account",): "user",
    ("folks",): "members",
    ("logged", "in"): "authenticated user",
    ("signed", "in"): "authenticated user",
    ("me",): "authenticated",
    ("my",): "authenticated",
    ("i",): "authenticated",
    # Other products' words for GitHub's own.
    ("snippet",): "gist",
    ("paste",): "gist",
    ("dev", "environment"): "codespace",
    ("devcontainer",): "codespace",
    ("shut", "down"): "stop",
    ("docker",): "package container",
    ("container", "image"): "package container",
    ("bot",): "app installation",
    ("logs",): "log",
    ("emoji",): "reaction emojis",
    ("like",): "reaction star",
    ("deploy",): "deployment",
    # Verbs said in several words, or in slang.
    ("get", "rid"): "delete",
    ("throw", "away"): "delete",
    ("kick", "out"): "remove",
    ("spin", "up"): "create",
    ("set", "up"): "create",
    ("turn", "off"): "disable",
    ("switch", "off"): "disable",
    ("turn", "on"): "enable",
    ("switch", "on"): "enable",
    ("back", "on"): "enable",
}

#: Kinds of action, each with the verbs that say it: a tool's kind is the first verb of its title
#: or name; a query's, the first of its words that names one.
ACTIONS: dict[str, frozenset[str]] = {
    "create": frozenset({"create", "open", "new", "make", "add", "file", "propose", "start", "write", "submit",
                         "post", "raise", "generate", "upload", "register", "draft", "fork", "commit", "share",
                         "log", "push", "launch", "give", "grant", "invite", "store", "save", "report"}),
    "delete": frozenset({"delete", "remove", "drop", "erase", "destroy", "purge", "discard", "revoke", "nuke",
                         "wipe", "trash", "scrap", "decommission", "retire", "clear", "strip", "uninstall", "kick",
                         "unstar", "unfollow", "unwatch", "unsubscribe", "unblock", "unpin", "unassign"}),
    "disable": frozenset({"disable", "pause", "deactivate", "suspend"}),
    "enable": frozenset({"enable", "activate", "resume", "unpause", "reactivate"}),
    "update": frozenset({"update", "edit", "change", "modify", "rename", "set", "replace", "close", "reopen",
                         "configure", "move", "transfer", "resolve", "tweak"}),
    "list": frozenset({"list", "all", "recent", "browse", "enumerate", "who", "which", "recently", "lately"}),
    "get": frozenset({"get", "read", "fetch", "show", "see", "view", "look", "details", "what", "download", "check",
                      "how", "is", "has"}),
    "cancel": frozenset({"cancel", "stop", "abort", "halt", "kill", "terminate"}),
    "rerun": frozenset({"rerun", "retry", "restart", "again", "rerequest", "re", "rebuild", "redo"}),
    "search": frozenset({"search", "find", "lookup", "query", "mentioning"}),
    "merge": frozenset({"merge", "merging", "combine", "land"}),
}

#: Verbs that undo another (``unstar`` a repository): a tool named by one is also about the other.
UNDOING: dict[str, str] = {word: word[2:] for word in (
    "unstar", "unfollow", "unwatch", "unsubscribe", "unblock", "unpin", "unassign", "unlock", "unarchive",
    "unsuspend", "unlink", "unmute", "unset")}

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


#: Values a query may quote, each a whole word between spaces, and what each is.
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_HASH = re.compile(r"(?=.*[0-9])(?=.*[a-f])[0-9a-f]{7,40}")
_FILE_NAME = re.compile(r"[\w.-]*\w\.(?:md|txt|py|js|ts|json|ya?ml|toml|cfg|ini|sh|go|rs|rb|java|c|h|cpp|html|css|lock|"
                        r"xml|csv)", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _value(word: str) -> str:
    """What a word of a query quotes: ``url``, ``email``, ``commit`` (a hash), ``file`` (a path:
    ``src/app.py``, ``.github/workflows``, ``README.md``), else the word itself."""
    bare = word.rstrip(",;:!?)'\"").rstrip(".")
    if bare.startswith(("http://", "https://")):
        return "url"
    if _EMAIL.fullmatch(bare):
        return "email"
    if _HASH.fullmatch(bare):
        return "commit"
    last = bare.rsplit("/", 1)[-1]
    if (_FILE_NAME.fullmatch(last) or (bare[:1] in "./" and any(c.isalnum() for c in bare))
            or (bare.count("/") >= 2 and not bare.endswith("/"))):
        return "file"
    return word


#: What a word must have to quote a value (:func:`_value`): a URL, an e-mail and a file name or path
#: have a "." or a "/" or an "@", a hash a digit.
_QUOTING = re.compile(r"[./@0-9]")
#: A query of plain words, split by spaces.
_PLAIN = re.compile(r"[A-Za-z ]*")


def query_words(query: str) -> list[str]:
    """A query's words (:func:`words`), each value it quotes said as what it is: ``src/app.py``
    is a file (not an app), ``9fceb02`` a commit."""
    if _PLAIN.fullmatch(query):  # most queries are plain words
        return query.lower().split()
    if _QUOTING.search(query) is None:  # and most others quote nothing: their words as they are
        return words(query)
    return words(" ".join(map(_value, query.split())))


def identifier_words(name: str) -> list[str]:
    """An identifier's words, lower-case (``listPullRequests``, ``pulls__list``, ``get-repo``)."""
    return [w.lower() for w in _PART.findall(name)]


def action_of(verbs: list[str]) -> str | None:
    """The kind of action the first verb of ``verbs`` that names one says, or ``None``."""
    verb = next(filter(_ACTION_OF.__contains__, verbs), None)
    return None if verb is None else _ACTION_OF[verb]


def asked_for(action: str | None, query_words: list[str]) -> str | None:
    """The kind of action a query asks for, ``action`` being the first its words say
    (:func:`meaning`): a question or a "show" about a plural (``what bugs are open``, ``show the
    files``), or a plural said without a verb (``webhooks of the organization``), asks for a list."""
    said = [w for w in query_words if w not in _NOT_OBJECTS]
    if action == "get":
        at = next((i for i, w in enumerate(said) if w in _GETTING), len(said))
        if _plural(said[at + 1:at + 2]):
            return "list"
    elif action is None and _plural(said[:1]):  # a plural said without a verb: "my codespaces"
        return "list"
    return action


def _plural(found: list[str]) -> bool:
    """Whether ``found`` is one word that looks like a plural (``webhooks``, not ``access``)."""
    return bool(found) and found[0].endswith("s") and not found[0].endswith("ss") and len(found[0]) > 3


#: The kind of action each verb says (the first of :data:`ACTIONS` that has it); a verb that undoes
#: one that creates (unregister, deregister, uninvite) says delete.
_ACTION_OF = {**{prefix + verb: "delete" for prefix in ("un", "de") for verb in ACTIONS["create"]},
              **{verb: action for action, verbs in reversed(ACTIONS.items()) for verb in verbs}}
#: What a phrase of :data:`SAME_THING` says: what it also names, and the kind of action that and the
#: phrase say (:func:`action_of`, its expansion before the phrase: ``turn off``, disable).
Said = tuple[tuple[str, ...], str | None]
#: By each word that begins a phrase: what that word alone says (if it is a phrase), and what the
#: pairs it begins say, by their second word (if any).
_PHRASES: dict[str, tuple[Said | None, dict[str, Said] | None]] = {}
for _phrase, _meant in SAME_THING.items():
    _alone, _pairs = _PHRASES.get(_phrase[0], (None, None))
    _said = (tuple(_meant.split()), action_of([*_meant.split(), *_phrase]))
    if len(_phrase) == 1:
        _alone = _said
    else:
        _pairs = {**(_pairs or {}), _phrase[1]: _said}
    _PHRASES[_phrase[0]] = (_alone, _pairs)
del _phrase, _meant, _alone, _pairs, _said


#: Words that say whose, between a verb and its object (``show me my issues``).
_OWNERS = frozenset({"me", "my", "our", "your", "their", "his", "her", "all", "authenticated"})
#: Words that are not what a query is about (:func:`asked_for`).
_NOT_OBJECTS = STOPWORDS | _OWNERS
_GETTING = ACTIONS["get"]


def meaning(word: str) -> tuple[Said, dict[str, Said] | None]:
    """What ``word`` of a query says alone, and what each pair of words it begins says, by the
    pair's second word (``None``: it begins none; the longest phrase wins): each the words it
    means, without stopwords (the phrase's, then what it also names: :data:`SAME_THING`), and the
    kind of action they say (:func:`action_of`; a phrase's expansion says it before the phrase)."""
    alone, pairs = _PHRASES.get(word, (None, None))
    said = ((word,), _ACTION_OF.get(word)) if alone is None else ((word, *alone[0]), alone[1])
    return (_kept(said[0]), said[1]), None if pairs is None else {
        second: (_kept((word, second, *meant)), action) for second, (meant, action) in pairs.items()}


def _kept(found: tuple[str, ...]) -> tuple[str, ...]:
    """``found`` without stopwords."""
    return tuple(filterfalse(STOPWORDS.__contains__, found))
