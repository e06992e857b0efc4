"""``flask tools ...``: list, show and call the app's tools from the command line."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from flask import current_app
from flask.cli import AppGroup

tools_cli = AppGroup("tools", help="List, inspect and call the tools of flask-tooldiscovery.")


def _ext() -> Any:
    return current_app.extensions["tooldiscovery"]


@tools_cli.command("list")
def list_tools() -> None:
    """List every tool with its version and first line of description."""
    for tool in _ext().tools():
        first = (tool.description or "").strip().splitlines()[0:1]
        click.echo(f"{tool.name}@{tool.version}\t{first[0] if first else ''}")


@tools_cli.command("show")
@click.argument("name")
def show_tool(name: str) -> None:
    """Print one tool's definition and schemas as JSON."""
    tool = _ext().tools().get(name)
    if tool is None:
        raise click.ClickException(f"Tool not found: {name}")
    click.echo(json.dumps({
        "name": tool.name, "version": tool.version, "description": tool.description,
        "annotations": tool.annotations, "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
    }, indent=2))


@tools_cli.command("call")
@click.argument("name")
@click.option("--input", "input_", default="{}", help="The arguments, as a JSON object.")
def call_tool(name: str, input_: str) -> None:
    """Call a tool through the same path as every dialect; exit 1 when it fails."""
    ext = _ext()
    tool = ext.tools().get(name)
    if tool is None:
        raise click.ClickException(f"Tool not found: {name}")
    try:
        arguments = json.loads(input_)
    except ValueError as exc:
        raise click.ClickException(f"--input is not valid JSON: {exc}") from None
    outcome = ext.call(tool, arguments, ext.make_context("cli"))
    if outcome.ok:
        click.echo(json.dumps(outcome.value, indent=2))
        return
    click.echo(json.dumps({"status": outcome.status, "error": outcome.error_message,
                           "parameter_errors": outcome.parameter_errors or None}, indent=2), err=True)
    sys.exit(1)
