"""The app the official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) runs
against: the suite's fixture tools, resources and prompts (the names and behaviours its server scenarios
describe), registered as an app of this package registers its own, through the public API only,
and a folder of Agent Skills (``skills/``) for the Skills extension's scenarios.
(The tasks scenarios, an extension's, run against :mod:`tests.apps.mcp_everything_app`.)

Serve it with ``gunicorn tests.conformance.mcp_everything:app``; ``TOOLDISCOVERY_STATE_STORAGE_URI``
in the environment (a Redis URL) lets several workers share answers, tasks and subscriptions.
``tests/test_mcp_conformance_servers.py`` runs every scored scenario of the suite against it;
``tests/conformance/mcp_expected_failures.txt`` lists what does not pass yet."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

from flask import Flask

from flask_tooldiscovery import (
    Audio,
    EmbeddedResource,
    File,
    Image,
    Question,
    RootsRequest,
    SamplingRequest,
    ToolContext,
    ToolDiscovery,
    ToolError,
)

#: A 1x1 red PNG and a minimal WAV, as the suite's reference server sends them.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
                       "rkJggg==")
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

#: Agent Skills for the suite's Skills extension scenarios.
SKILLS = Path(__file__).parent / "skills"

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
COLOR_FORM = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
CONTEXT_FORM = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
RESPONSE_FORM = {"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}},
                 "required": ["response"]}
DEFAULTS_FORM = {"type": "object", "required": [], "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
               "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": True}}}
ENUMS_FORM = {"type": "object", "required": [], "properties": {
    "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
        {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1,
                    "maxItems": 3, "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}}}


def register_fixtures(discovery: ToolDiscovery) -> None:
    """The suite's fixture tools, resources and prompts, on ``discovery``."""

    @discovery.tool
    def test_simple_text() -> str:
        """Tests simple text content response."""
        return "This is a simple text response for testing."

    @discovery.tool
    def test_image_content() -> Image:
        """Tests image content response."""
        return Image(PNG, "image/png")

    @discovery.tool
    def test_audio_content() -> Audio:
        """Tests audio content response."""
        return Audio(WAV, "audio/wav")

    @discovery.tool
    def test_embedded_resource() -> File:
        """Tests embedded resource content response."""
        return File(b"This is an embedded resource content.", "text/plain", name="embedded-resource.txt")

    @discovery.tool
    def test_multiple_content_types() -> list[object]:
        """Tests response with multiple content types (text, image, resource)."""
        return ["Multiple content types test:", Image(PNG, "image/png"),
                File(json.dumps({"test": "data", "value": 123}).encode(), "application/json",
                     name="mixed-content-resource.json")]

    @discovery.tool
    def test_tool_with_logging(ctx: ToolContext) -> str:
        """Tests tool that emits log messages during execution."""
        ctx.log("info", "Tool execution started")
        time.sleep(0.05)
        ctx.log("info", "Tool processing data")
        time.sleep(0.05)
        ctx.log("info", "Tool execution completed")
        return "Tool with logging executed successfully"

    @discovery.tool
    def test_tool_with_progress(ctx: ToolContext) -> str:
        """Tests tool that reports progress notifications."""
        for step in (0, 50, 100):
            ctx.report_progress(step, 100, f"Completed step {step} of 100")
            if step < 100:
                time.sleep(0.05)
        return "Progress reported."

    @discovery.tool
    def test_error_handling() -> str:
        """Tests error response handling."""
        raise ToolError("This tool intentionally returns an error for testing")

    @discovery.tool
    def test_elicitation(ctx: ToolContext, message: str) -> str:
        """Tests server-initiated elicitation (user input request).

        Args:
            message: The message to show the user.
        """
        answer = ctx.elicit(message, RESPONSE_FORM)
        return f"User response: action={answer.action}, content={json.dumps(dict(answer.content))}"

    @discovery.tool
    def test_elicitation_sep1034_defaults(ctx: ToolContext) -> str:
        """Tests elicitation with default values per SEP-1034."""
        answer = ctx.elicit("Please review and update the form fields with defaults", DEFAULTS_FORM)
        return f"Elicitation completed: action={answer.action}, content={json.dumps(dict(answer.content))}"

    @discovery.tool
    def test_elicitation_sep1330_enums(ctx: ToolContext) -> str:
        """Tests elicitation with enum schema improvements per SEP-1330."""
        answer = ctx.elicit("Please select options from the enum fields", ENUMS_FORM)
        return f"Elicitation completed: action={answer.action}, content={json.dumps(dict(answer.content))}"

    @discovery.tool
    def test_sampling(ctx: ToolContext, prompt: str) -> str:
        """Tests server-initiated sampling (LLM completion request).

        Args:
            prompt: The prompt to send to the LLM.
        """
        return f"LLM response: {ctx.sample(prompt, max_tokens=100).text}"

    @discovery.tool
    def test_missing_capability(ctx: ToolContext) -> str:
        """Asks the caller's model (a client that did not declare sampling is refused with -32021)."""
        return ctx.sample("Say hello.", max_tokens=10).text

    @discovery.tool(input_schema={"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"}}})
    def test_custom_header(region: str) -> str:
        """Runs in a region that also travels in the Mcp-Param-Region header (SEP-2243)."""
        return f"Ran in {region}."

    @discovery.tool
    def test_streaming_elicitation(ctx: ToolContext) -> str:
        """Asks the caller a question while streaming progress (2026-07-28: an input request in the
        result, never a request on the response stream)."""
        ctx.report_progress(1, 2, "asking")
        return f"Hello, {ctx.elicit('What is your name?', NAME_FORM, key='user_name').content.get('name')}!"

    @discovery.tool
    def test_logging_tool(ctx: ToolContext) -> str:
        """Logs three lines (sent only to a caller that named a log level)."""
        for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            ctx.log("info", line)
        return "Tool with logging executed successfully"

    @discovery.tool
    def test_input_required_result_elicitation(ctx: ToolContext) -> str:
        """Asks the caller's name (one input request)."""
        return f"Hello, {ctx.elicit('What is your name?', NAME_FORM, key='user_name').content.get('name')}!"

    @discovery.tool
    def test_input_required_result_sampling(ctx: ToolContext) -> str:
        """Asks the caller's model a question."""
        return ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question").text

    @discovery.tool
    def test_input_required_result_list_roots(ctx: ToolContext) -> str:
        """Lists the caller's roots."""
        roots = ctx.list_roots(key="client_roots")
        return "Roots: " + ", ".join(f"{r.name or r.uri} ({r.uri})" for r in roots)

    @discovery.tool
    def test_input_required_result_multiple_inputs(ctx: ToolContext) -> str:
        """Asks a name, the caller's model and its roots, in one round."""
        name, greeting, roots = ctx.ask_all(Question("What is your name?", NAME_FORM, key="user_name"),
                                            SamplingRequest(({"role": "user", "content": {
                                                "type": "text", "text": "Generate a greeting"}},), 50,
                                                key="greeting"),
                                            RootsRequest(key="client_roots"))
        return f"{greeting.text} {name.content.get('name')} ({len(roots)} roots)"

    @discovery.tool
    def test_input_required_result_capabilities(ctx: ToolContext) -> str:
        """Asks only what the caller declared it can answer."""
        asked: list[Question | SamplingRequest] = []
        if ctx.can_ask("elicitation"):
            asked.append(Question("What is your name?", NAME_FORM, key="user_name"))
        if ctx.can_ask("sampling"):
            asked.append(SamplingRequest(({"role": "user", "content": {"type": "text", "text": "Say hi"}},), 20,
                                         key="greeting"))
        return f"{len(ctx.ask_all(*asked))} answers"

    @discovery.tool
    def test_input_required_result_request_state(ctx: ToolContext) -> str:
        """Asks for a confirmation; the answer comes back with the sealed request state."""
        answer = ctx.elicit("Please confirm", OK_FORM, key="confirm")
        return f"state-ok: confirmed={answer.content.get('ok')}"

    @discovery.tool
    def test_input_required_result_tampered_state(ctx: ToolContext) -> str:
        """Asks for a confirmation; a changed request state is refused."""
        answer = ctx.elicit("Please confirm", OK_FORM, key="confirm")
        return f"state-ok: confirmed={answer.content.get('ok')}"

    @discovery.tool
    def test_input_required_result_multi_round(ctx: ToolContext) -> str:
        """Asks a name, then a colour (two rounds)."""
        name = ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1").content.get("name")
        color = ctx.elicit("Step 2: What is your favorite color?", COLOR_FORM, key="step2").content.get("color")
        return f"{name} likes {color}."

    @discovery.tool
    def test_trigger_tool_change() -> str:
        """Tells subscribed clients that the tool list changed."""
        discovery.list_changed("tools")
        return "Tool list change announced."

    @discovery.tool
    def test_trigger_prompt_change() -> str:
        """Tells subscribed clients that the prompt list changed."""
        discovery.list_changed("prompts")
        return "Prompt list change announced."

    @discovery.resource("test://static-text", name="static-text", title="Static Text Resource",
                        description="A static text resource for testing", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @discovery.resource("test://static-binary", name="static-binary", title="Static Binary Resource",
                        description="A static binary resource (image) for testing", mime_type="image/png")
    def static_binary() -> bytes:
        return PNG

    @discovery.resource("test://template/{id}/data", name="template", title="Resource Template",
                        description="A resource template with parameter substitution", mime_type="application/json")
    def template(id: str) -> dict[str, object]:
        return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}

    @discovery.resource("test://watched-resource", name="watched-resource", title="Watched Resource",
                        description="A resource clients may subscribe to", mime_type="text/plain")
    def watched_resource() -> str:
        return "Watched resource content"

    register_prompts(discovery)


def register_prompts(discovery: ToolDiscovery) -> None:
    """The suite's fixture prompts (its completion scenario completes ``arg1`` of the second)."""

    @discovery.prompt
    def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    @discovery.prompt(complete={"arg1": lambda value, _: [v for v in ("paris", "park", "party", "test", "testing")
                                                          if v.startswith(value)]})
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with required arguments.

        Args:
            arg1: First test argument
            arg2: Second test argument
        """
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @discovery.prompt
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[object]:
        """A prompt that includes an embedded resource.

        Args:
            resourceUri: URI of the resource to embed
        """
        return [EmbeddedResource(resourceUri, "Embedded resource content for testing.", "text/plain"),
                "Please process the embedded resource above."]

    @discovery.prompt
    def test_prompt_with_image() -> list[object]:
        """A prompt that includes image content."""
        return [Image(PNG, "image/png"), "Please analyze the image above."]

    @discovery.prompt
    def test_input_required_result_prompt(ctx: ToolContext) -> str:
        """A prompt that asks its caller for the context it uses."""
        answer = ctx.elicit("What context should the prompt use?", CONTEXT_FORM, key="user_context")
        return f"Use this context: {answer.content.get('context')}" if answer.accepted else "Use no context."


def create_app(storage: str | None = None) -> Flask:
    """The conformance app; ``storage``: a Redis URL (default: TOOLDISCOVERY_STATE_STORAGE_URI)."""
    discovery = ToolDiscovery()
    register_fixtures(discovery)
    app = Flask("mcp_everything")
    app.config.update(TOOLDISCOVERY_DIALECTS=["mcp"], TOOLDISCOVERY_WARN_UNAUTHENTICATED=False,
                      SECRET_KEY=os.environ.get("SECRET_KEY", "conformance-only-secret"),  # seals request state
                      TOOLDISCOVERY_ALLOW_EXECUTE=True, TOOLDISCOVERY_MCP_RESOURCES=True,
                      TOOLDISCOVERY_MCP_SUBSCRIPTIONS=True, TOOLDISCOVERY_SKILLS_DIR=str(SKILLS),
                      TOOLDISCOVERY_STREAM_KEEPALIVE=1,  # a stream whose client left frees its thread soon
                      TOOLDISCOVERY_STATE_STORAGE_URI=storage or os.environ.get("TOOLDISCOVERY_STATE_STORAGE_URI"))
    discovery.init_app(app)
    return app


app = create_app()
