"""``flask tools ...``: list, show, call, export and check the app's tools."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from flask import current_app
from flask.cli import AppGroup, FlaskGroup, run_command

from ..calls.approvals import Approval
from ..dialects import Dialect
from ..errors import ApprovalRequired, CoreError, RetryLater
from ..lint.check import lint, lint_targets
from ..lint.check import targets as known_targets
from ..lint.targets import Target
from ..serving import request_state
from ..serving.guard import new_call_id
from ..serving.outside import call_as
from ..serving.pipeline import Pipeline
from ..serving.root import Root
from ..serving.wire import parse_json
from ..tools.model import Identity
from .connect import connect
from .export import for_target, openai_tools, target_notes

tools_cli = AppGroup("tools", help="List, search, inspect, call, export and lint the app's tools; connect a client.")
tools_cli.add_command(connect)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[f"tooldiscovery.{param.name}"] = value
    return value


tools_cli.params += [
    click.Option(["--as", "subject"], metavar="SUBJECT", expose_value=False, callback=_remember,
                 help="Show and call the tools as this caller sees them (with --scope)."),
    click.Option(["--scope", "scopes"], metavar="SCOPE", multiple=True, expose_value=False, callback=_remember,
                 help="A scope the caller holds (repeat it); tools needing others are hidden."),
]


def _ext() -> Any:
    """The extension, with the caller given by ``--as``/``--scope`` (if any) in force for this command."""
    meta = click.get_current_context().meta
    subject, scopes = meta.get("tooldiscovery.subject"), meta.get("tooldiscovery.scopes") or ()
    if subject or scopes:
        request_state.current().identity = Identity(subject=subject, scopes=tuple(scopes), method="cli")
    return current_app.extensions["tooldiscovery"]


def _tools() -> Any:
    """The tools in force, as the ``--as``/``--scope`` caller sees them (everything without them)."""
    ext = _ext()
    identity = request_state.current().identity
    return ext.tools().visible_to(identity) if identity is not None else ext.tools()


def _find(name: str) -> Any:
    """The tool ``name`` (latest) or ``name@x.y.z`` (that version), or a click error."""
    base, _, version = name.partition("@")
    tool = _tools().get(base, version or None)
    if tool is None:
        raise click.ClickException(f"Tool not found: {name}")
    return tool


def _dump(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _first_line(text: str | None) -> str:
    first = (text or "").strip().splitlines()[:1]
    return first[0] if first else ""


@tools_cli.command("list")
def list_tools() -> None:
    """List every tool with its version and the first line of its description, then the prompts
    with their arguments ("?": optional)."""
    for tool in _tools():
        click.echo(f"{tool.name}@{tool.version}\t{_first_line(tool.description)}")
    identity = request_state.current().identity
    prompts = list(_ext().prompts) if identity is None else _ext().prompts.visible_to(identity)
    if prompts:
        click.echo("\nprompts:")
    for prompt in prompts:
        arguments = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments)
        click.echo(f"{prompt.name}({arguments})\t{_first_line(prompt.description)}")


@tools_cli.command("search")
@click.argument("query")
@click.option("--limit", type=int, default=None, metavar="N",
              help="The most tools to print (1 to 50; default 5).")
def search_tools(query: str, limit: int | None) -> None:
    """Print the tools that best match QUERY, best first, as the caller given by --as/--scope may see
    them: the same search as MCP's search_tools and the explorer's ?q=. Exit 1 when the query or
    limit cannot be searched."""
    pipe = Pipeline(_ext().state(), CLI_DIALECT)
    try:
        found = pipe.search(query, limit)
    except CoreError as exc:
        raise click.ClickException(exc.message) from None
    for tool in found:
        click.echo(f"{tool.name}@{tool.version}\t{tool.title or _first_line(tool.description)}")


@tools_cli.command("show")
@click.argument("name")
def show_tool(name: str) -> None:
    """Print one tool's definition and schemas as JSON (NAME or NAME@VERSION)."""
    tool = _find(name)
    _dump({"name": tool.name, "version": tool.version, "description": tool.description,
           "annotations": tool.annotations, "input_schema": tool.input_schema,
           "output_schema": tool.output_schema})


def _unmounted(pipe: Pipeline) -> Any:
    raise RuntimeError("the cli dialect runs flask tools call; it is never mounted")


#: What names the calls of ``flask tools call`` in signals, logs, spans, metrics and rate limits
#: (``TOOLDISCOVERY_RATELIMIT_DIALECTS["cli"]``): a dialect of their own, never mounted.
CLI_DIALECT = Dialect(name="cli", make_blueprint=_unmounted)


@tools_cli.command("call")
@click.argument("name")
@click.option("--input", "input_", default="{}", show_default=True,
              help="The arguments, as a JSON object.")
@click.option("--approve", is_flag=True,
              help="Approve this call of a tool that needs a person's approval (you are that person).")
def call_tool(name: str, input_: str, approve: bool) -> None:
    """Call a tool (NAME or NAME@VERSION) through the same pipeline as every dialect: rate limits,
    call slots, approvals, signals, tracing and metrics apply. Exit 1 when it fails or is refused."""
    ext = _ext()
    tool = _find(name)
    try:
        arguments = parse_json(input_)
    except ValueError as exc:
        raise click.ClickException(f"--input is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise click.ClickException(f"--input must be a JSON object of arguments, not {json.dumps(arguments)[:40]}")
    pipe = Pipeline(ext.state(), CLI_DIALECT)
    identity, call_id = request_state.current().identity, new_call_id()
    try:
        try:
            outcome = call_as(pipe, identity, tool, arguments, call_id=call_id)
        except ApprovalRequired as exc:
            if not approve:
                raise click.ClickException(f"{exc.message} {exc.prompt} Run the command again with --approve "
                                           "to approve this call.") from None
            # The sealed request the pipeline made for this very call, opened and checked again.
            outcome = call_as(pipe, identity, tool, arguments, approval=Approval(exc.state, True), call_id=call_id)
    except RetryLater as exc:
        raise click.ClickException(f"{exc.message} (retry after {exc.retry_after} s)") from None
    except CoreError as exc:
        raise click.ClickException(exc.message) from None
    if outcome.ok:
        _dump(outcome.value)
        return
    click.echo(json.dumps({"status": outcome.status, "error": outcome.error_message,
                           "parameter_errors": outcome.parameter_errors or None}, indent=2), err=True)
    sys.exit(1)


@tools_cli.command("export")
@click.argument("what", required=False)
@click.option("--target", default=None, metavar="NAME",
              help="Write the tools as this target model or platform accepts them, each schema simplified "
                   "to its rules (see check --target).")
@click.option("--base-url", default=None, metavar="URL",
              help="Root URL for the absolute URLs some documents hold (utcp, openapi, server_card); "
                   "default: from SERVER_NAME, else http://localhost/.")
def export(what: str | None, target: str | None, base_url: str | None) -> None:
    """Print a discovery document: a dialect's (opal, oxp, tdp, explorer, mcp, utcp, openapi,
    server_card), or openai (function-calling tools); or, with --target, the tools as
    that target accepts them."""
    ext = _ext()
    exportable = [n for n in ext.dialect_names if ext.dialect(n).export_document is not None]
    if target is not None and what is not None:
        raise click.ClickException("give a document to export or --target, not both")
    if target is None and what is None:
        raise click.UsageError(f"Name what to export: one of {', '.join(sorted([*exportable, 'openai']))} "
                               f"(or --target {'|'.join(known_targets(ext))}).")
    try:
        root = Root.at(base_url)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--base-url'") from None
    # The documents show the tools as they are served to a reader: --as's caller, else one without
    # credentials (a request state without an identity); the operator's every tool is list's.
    request_state.current()
    if target is not None:
        [chosen] = _targets(ext, (target,))
        _dump(for_target(ext, chosen, root))
        for note in target_notes(ext, chosen):
            click.echo(f"[{chosen.name}] not derived: {note}", err=True)
    elif what == "openai":
        _dump(openai_tools(ext))
    elif what in exportable:
        try:
            _dump(ext.dialect(what).export_document(ext.pipeline(what), root))
        except ValueError as exc:  # a document that needs another dialect mounted
            raise click.ClickException(str(exc)) from None
    else:
        choices = sorted([*exportable, "openai"])
        raise click.ClickException(f"Cannot export {what!r}; choose one of: {', '.join(choices)} "
                                   f"(or --target {'|'.join(known_targets(ext))})")


def _targets(ext: Any, names: tuple[str, ...]) -> list[Target]:
    """The targets ``names`` name, or a usage error naming the ones there are."""
    known = known_targets(ext)
    for name in names:
        if name not in known:
            raise click.BadParameter(f"{name!r} is not a target; choose one of: {', '.join(known)}",
                                     param_hint="'--target'")
    return [known[name] for name in names]


@tools_cli.command("check")
@click.option("--target", "targets", metavar="NAME", multiple=True,
              help="Lint against what this target model or platform refuses (repeat it) instead of the "
                   "mounted dialects' rules: openai-strict, anthropic, gemini, or a dialect's clients (mcp, "
                   "opal, oxp, tdp...), or a directory's review (claude-directory, chatgpt); export --target writes "
                   "what it accepts.")
@click.option("--replay", is_flag=True,
              help="Run each tool's declared examples through every mounted dialect in process and report "
                   "where the outcomes differ.")
@click.option("--header", "headers", metavar="'NAME: VALUE'", multiple=True,
              help="A header sent with every replayed call (credentials: 'Authorization: Bearer ...').")
@click.option("--include-destructive", is_flag=True,
              help="Replay tools marked destructive or needing approval too (they run once per dialect).")
def check(targets: tuple[str, ...], replay: bool, headers: tuple[str, ...], include_destructive: bool) -> None:
    """Lint every tool against every mounted dialect's rules (or --target's); exit 1 when anything
    is found. With --replay, also run the examples through every dialect."""
    ext = _ext()
    chosen = _targets(ext, targets)
    if targets:
        found = lint_targets(ext, list(_tools()), chosen)
        where = ", ".join(targets)
    else:
        found, where = lint(ext, list(_tools())), "every mounted dialect"
    for tool, dialect, problem in found:
        click.echo(f"{tool}: [{dialect}] {problem}")
    for target in chosen:
        for item in target.not_checked:
            click.echo(f"[{target.name}] not checked here, the review asks it too: {item}")
    differences = _replay(headers, include_destructive) if replay else 0
    if found or differences:
        click.echo(f"{len(found)} problem(s) found" + (f", {differences} replay difference(s)." if replay else "."),
                   err=True)
        sys.exit(1)
    count = len(list(_tools()))
    click.echo((f"All {count} tools pass" if count != 1 else "The one tool passes") + f" the checks of {where}."
               + (" Every replayed example agrees across the dialects." if replay else ""))


def _replay(header_lines: tuple[str, ...], include_destructive: bool) -> int:
    """Replay the examples, print the differences and notes; the number of differences."""
    from .replay import replay

    headers = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise click.ClickException(f"--header must be 'Name: value', not {line!r}")
        headers[name.strip()] = value.strip()
    results, notes = replay(current_app._get_current_object(), _ext(), list(_tools()),  # type: ignore[attr-defined]
                            headers=headers, include_destructive=include_destructive)
    for note in notes:
        click.echo(f"replay: {note}")
    count = 0
    for result in results:
        for difference in result.differences():
            count += 1
            click.echo(f"{result.tool}: [replay] {result.example}: {difference}")
    click.echo(f"replay: {len(results)} example(s) run through {len(results[0].answers) if results else 0} "
               f"dialect(s).")
    return count


def read_only_cli() -> bool:
    """True while a ``flask`` command other than ``run`` loads the app (``flask tools list``...):
    nothing is served, so there is nothing to warn about.

    Flask's CLI loads the app inside click's current context: ``flask run`` in its own callback
    (the context's command is Flask's ``run_command``); Flask's other commands in theirs; a
    command the app adds (``flask tools ...``) while the root ``FlaskGroup`` looks it up. Only the
    first serves requests."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or not isinstance(ctx.find_root().command, FlaskGroup):
        return False
    return ctx.command is not run_command

