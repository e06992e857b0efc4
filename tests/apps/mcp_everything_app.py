"""The fixture tools the official MCP conformance suite calls for its tasks scenarios (the
``io.modelcontextprotocol/tasks`` extension), written as an app of this package would write them.
Start it as ``tests.apps.mcp_everything_app:create_app(storage=..., callers=...)``; servers started
with the same ``storage`` (a Redis URL) share their tasks."""

from __future__ import annotations

import time

from flask import Flask

from flask_tooldiscovery import Question, ToolContext, ToolDiscovery, ToolError

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]}
CONFIRM_FORM = {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Confirm"}},
                "required": ["confirm"]}


def create_app(storage: str = "", workers: int = 16, poll: int = 200, result_wait: float = 25,
               callers: bool = False, **config: object) -> Flask:
    """With ``callers``, each request names its caller: ``Authorization: Bearer <name>``."""
    discovery = ToolDiscovery()
    if callers:
        discovery.identity(lambda req: req.headers.get("Authorization", "").removeprefix("Bearer ") or None)

    @discovery.tool
    def greet(name: str) -> str:
        """Greet someone (answered at once, never a task)."""
        return f"Hello, {name}!"

    @discovery.tool(task_support="optional")
    def slow_compute(ctx: ToolContext, seconds: float = 1.0, label: str = "") -> str:
        """Compute for ``seconds`` (stops early when cancelled)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not ctx.cancelled:
            time.sleep(0.05)
        return f"Computed {label or 'it'} in {seconds:g} s."

    @discovery.tool(task_support="required")
    def failing_job() -> str:
        """Fail after about a second, as a tool does (a tool error the caller can read)."""
        time.sleep(1)
        raise ToolError("The job failed: the quota for this month is used up.")

    @discovery.tool(task_support="optional")
    def protocol_error_job() -> str:
        """Crash (a bug: no tool result)."""
        raise RuntimeError("a bug in the job")

    @discovery.tool(task_support="optional")
    def confirm_delete(ctx: ToolContext, filename: str) -> str:
        """Delete a file once the person confirms."""
        answer = ctx.ask(f"Delete {filename}?", CONFIRM_FORM)
        return f"Deleted {filename}." if answer.accepted and answer.content.get("confirm") else f"Kept {filename}."

    @discovery.tool(task_support="optional")
    def multi_input(ctx: ToolContext) -> str:
        """Ask two questions at once."""
        name, confirm = ctx.ask_all(Question("Your name?", NAME_FORM), Question("Go ahead?", CONFIRM_FORM))
        return f"{name.content.get('name')} said {'yes' if confirm.content.get('confirm') else 'no'}."

    @discovery.tool(task_support="required", questions={"user_name": {"message": "What is your name?",
                                                                        "schema": NAME_FORM}})
    def test_tool_with_task(ctx: ToolContext) -> str:
        """Ask a name first, then run as a task."""
        return f"Hello, {ctx.ask('What is your name?', NAME_FORM, key='user_name').content['name']}!"

    app = Flask("mcp_everything")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage or None, TOOLDISCOVERY_TASK_WORKERS=workers,
                      TOOLDISCOVERY_MCP_TASK_POLL_INTERVAL=poll, TOOLDISCOVERY_MCP_TASK_RESULT_WAIT=result_wait,
                      **config)
    discovery.init_app(app)
    return app
