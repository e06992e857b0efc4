"""Tools that ask their caller while they run (elicitation twice, sampling, roots), for the tests of
:mod:`flask_tooldiscovery.tools.questions` over MCP. ``create_app(storage=..., callers=...)``:
servers started with the same ``storage`` (a Redis URL) hand answers to each other; with
``callers``, ``Authorization: Bearer <name>`` names the caller."""

from __future__ import annotations

from flask import Flask

from flask_tooldiscovery import CannotAsk, Question, RootsRequest, SamplingRequest, ToolContext, ToolDiscovery

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR_FORM = {"type": "object", "required": ["color"], "properties": {
    "color": {"type": "string", "oneOf": [{"const": "red", "title": "Red"}, {"const": "blue", "title": "Blue"}],
              "default": "blue"}}}


def create_app(storage: str = "", callers: bool = False, secret: str = "asking-test-secret", **config: object) -> Flask:
    discovery = ToolDiscovery()
    if callers:
        discovery.identity(lambda req: req.headers.get("Authorization", "").removeprefix("Bearer ") or None)

    @discovery.tool
    def plan_trip(ctx: ToolContext, days: int = 3) -> str:
        """Ask a name, then a colour, then the caller's model for a motto: three questions, one after another.

        Args:
            days: How long the trip is.
        """
        ctx.log("info", "asking the name")
        name = ctx.elicit("Who travels?", NAME_FORM, key="name")
        color = ctx.elicit("Which colour of suitcase?", COLOR_FORM, key="color")
        motto = ctx.sample(f"A motto for a {days}-day trip", max_tokens=20, key="motto")
        if not (name.accepted and color.accepted):
            return "No trip."
        return f"{name.content['name']}: {days} days, a {color.content['color']} suitcase, '{motto.text}'"

    @discovery.tool
    def survey(ctx: ToolContext) -> str:
        """Ask a name, the caller's model and its roots at once (one round)."""
        name, motto, roots = ctx.ask_all(
            Question("Your name?", NAME_FORM, key="name"),
            SamplingRequest(({"role": "user", "content": {"type": "text", "text": "A motto"}},), 30, key="motto"),
            RootsRequest(key="roots"))
        return f"{name.content.get('name')}|{motto.text}|{','.join(r.uri for r in roots)}"

    @discovery.tool
    def motto_or_default(ctx: ToolContext) -> str:
        """The caller's model's motto, or a default where it cannot be asked."""
        try:
            return ctx.sample("A motto", max_tokens=10).text
        except CannotAsk:
            return "Carpe diem (the caller's model could not be asked)."

    runs: list[str] = []

    @discovery.tool(requires_approval=True)
    def transfer(ctx: ToolContext, amount: int) -> str:
        """Move money once the person approved the call and named the account.

        Args:
            amount: How much.
        """
        account = ctx.elicit("Which account?", {"type": "object", "properties": {"iban": {"type": "string"}},
                                                "required": ["iban"]}, key="account").content["iban"]
        runs.append(account)
        return f"Moved {amount} to {account} (run {len(runs)})."

    @discovery.tool(task_support="optional")
    def pack(ctx: ToolContext, items: int = 2) -> str:
        """Pack once the person says which bag (run as a task, the question waits in its record).

        Args:
            items: How many things to pack.
        """
        bag = ctx.elicit("Which bag?", {"type": "object", "properties": {"bag": {"type": "string"}},
                                        "required": ["bag"]}, key="bag")
        return f"Packed {items} things in the {bag.content.get('bag')}." if bag.accepted else "Not packed."

    @discovery.tool
    def abilities(ctx: ToolContext) -> list[str]:
        """What this call's caller can be asked."""
        return [k for k in ("elicitation", "sampling", "roots") if ctx.can_ask(k)]

    app = Flask("asking")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage or None, SECRET_KEY=secret or None, **config)
    discovery.init_app(app)
    return app
