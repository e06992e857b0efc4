"""A prompt that asks its caller (two elicitations, one after another) run by the official ``mcp``
client (PyPI 2.3, both eras) against two gunicorn workers sharing a real Redis: 2026-07-28 through
``InputRequiredResult`` rounds on ``prompts/get`` (each retry may reach either worker: the sealed
state carries the answers), 2025-11-25 on the request's SSE stream (each answer is a request of its
own, handed by the rendezvous to the worker holding the stream). Bad, tampered and reused
``requestState`` is refused; a client that cannot elicit is never sent a request; a resource
reader asks the same way; the prompt list's changes reach a client listening on another server, as
``prompts.listChanged`` promises."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from .test_deploy import stop
from .test_operating_server import redis_url, start, two_servers_of  # noqa: F401  (redis_url: a redis-server of ours)

pytestmark = pytest.mark.slow

APP = "tests.apps.prompt_asking_app:create_app"
MODES = ["2026-07-28", "legacy"]


@pytest.fixture(scope="module")
def server(redis_url) -> Iterator[str]:  # noqa: F811
    base, proc = start(f"{APP}(storage={redis_url + '/7'!r})", workers=2, threads=8, ready="/mcp")
    try:
        yield base
    finally:
        stop(proc)


def innermost(exc: BaseException) -> BaseException:
    """The error under the client's task groups."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


async def elicit(context: Any, params: Any) -> Any:
    from mcp_types import ElicitResult

    answer = {"name": "Ada"} if "name" in params.requested_schema["properties"] else {"pace": "brisk"}
    return ElicitResult(action="accept", content=answer)


def brief(base: str, mode: str, *, eliciting: bool = True) -> tuple[Any, list[str], list[str]]:
    from mcp import Client

    asked: list[str] = []
    logs: list[str] = []

    async def answer(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return await elicit(context, params)

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def go() -> Any:
        async with Client(f"{base}/mcp", mode=mode, logging_callback=on_log,
                          elicitation_callback=answer if eliciting else None) as client:
            return await client.get_prompt("trip_brief", {"days": "5"})

    return asyncio.run(go()), asked, logs


@pytest.mark.parametrize("mode", MODES)
def test_the_official_client_answers_a_prompt_that_asks_twice(server: str, mode: str) -> None:
    for _ in range(3):  # rounds and answers land on either worker
        result, asked, logs = brief(server, mode)
        assert [m.content.text for m in result.messages] == ["Plan a brisk 5-day trip for Ada."]
        assert asked == ["Who travels?", "At what pace?"]
        if mode == "legacy":  # the request's stream carried the prompt's log line too
            assert logs == ["asking who travels"]


@pytest.mark.parametrize("mode", MODES)
def test_a_client_that_cannot_elicit_is_never_sent_the_request(server: str, mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    with pytest.raises(BaseException) as raised:
        brief(server, mode, eliciting=False)
    found = innermost(raised.value)
    assert isinstance(found, MCPError)
    if mode == "2026-07-28":  # it declared no elicitation: -32021 names the capability
        assert found.error.code == -32021
        assert found.error.data == {"requiredCapabilities": {"elicitation": {}}}
    else:  # the handshake era cannot know: the client refuses the request and the prompt says so
        assert found.error.code == -32603
        assert "could not ask its caller" in found.error.message


def test_bad_tampered_and_reused_request_state_is_refused(server: str) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import InputRequiredResult

    name = {"name": {"action": "accept", "content": {"name": "Ada"}}}

    async def go() -> dict[str, Any]:
        async with Client(f"{server}/mcp", elicitation_callback=elicit) as client:
            session = client.session
            first = await session.get_prompt("trip_brief", allow_input_required=True)
            assert isinstance(first, InputRequiredResult) and list(first.input_requests or {}) == ["name"]
            state = first.request_state
            assert state
            refused: dict[str, Any] = {}
            for label, sent, args in (("tampered", state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB"),
                                       None),
                                      ("bad", "not-a-state", None), ("other arguments", state, {"days": "9"})):
                try:
                    await session.get_prompt("trip_brief", args, input_responses=name, request_state=sent,
                                             allow_input_required=True)
                except MCPError as exc:
                    refused[label] = (exc.error.code, exc.error.message)
            second = await session.get_prompt("trip_brief", input_responses=name, request_state=state,
                                              allow_input_required=True)
            try:
                await session.get_prompt("trip_brief", input_responses=name, request_state=state,
                                         allow_input_required=True)
            except MCPError as exc:
                refused["reused"] = (exc.error.code, exc.error.message)
            return {"refused": refused, "second": second}

    out = asyncio.run(go())
    invalid = (-32602, "Invalid or expired requestState")
    assert out["refused"] == {"tampered": invalid, "bad": invalid, "other arguments": invalid, "reused": invalid}
    # the state was good: the next round asks the second question
    assert list(out["second"].input_requests) == ["pace"]


@pytest.fixture(scope="module")
def two_servers(redis_url) -> Iterator[tuple[str, str]]:  # noqa: F811
    with two_servers_of(f"{APP}(storage={redis_url + '/8'!r})", threads=8, ready="/mcp") as servers:
        yield servers


def test_prompts_list_changed_is_promised_and_kept_in_both_eras(two_servers) -> None:
    from mcp import Client
    from mcp.client.subscriptions import PromptsListChanged
    from mcp_types import PromptListChangedNotification

    first, second = two_servers
    heard: asyncio.Queue[object] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, PromptListChangedNotification):
            heard.put_nowait(message)

    async def modern() -> dict[str, Any]:
        async with Client(f"{first}/mcp") as listener, Client(f"{second}/mcp") as editor:
            promised = listener.server_capabilities.prompts
            async with listener.listen(prompts_list_changed=True) as sub:
                await editor.call_tool("add_briefing", {})
                changed = await asyncio.wait_for(sub.__anext__(), 20)
            return {"promised": promised.list_changed if promised else None, "changed": changed}

    async def legacy() -> dict[str, Any]:
        async with Client(f"{first}/mcp", mode="legacy", message_handler=on_message) as listener, \
                Client(f"{second}/mcp", mode="legacy") as editor:
            promised = listener.server_capabilities.prompts
            for _ in range(20):  # its GET stream opens on its own after the handshake
                await editor.call_tool("add_briefing", {})
                try:
                    return {"promised": promised.list_changed if promised else None,
                            "changed": await asyncio.wait_for(heard.get(), 1)}
                except TimeoutError:
                    continue
            return {"promised": promised.list_changed if promised else None, "changed": None}

    now = asyncio.run(modern())
    assert now == {"promised": True, "changed": PromptsListChanged()}
    before = asyncio.run(legacy())
    assert before["promised"] is True and isinstance(before["changed"], PromptListChangedNotification)


@pytest.mark.parametrize("mode", MODES)
def test_a_resource_reader_asks_by_the_same_mechanism(server: str, mode: str) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    asked: list[str] = []

    async def answer(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return await elicit(context, params)

    async def go(eliciting: bool) -> Any:
        async with Client(f"{server}/mcp", mode=mode, elicitation_callback=answer if eliciting else None) as client:
            return await client.read_resource("trips://Lyon")

    for _ in range(2):
        read = asyncio.run(go(True))
        assert read.contents[0].text == "Lyon: notes for Ada."
    assert asked == ["Who travels to Lyon?"] * 2
    with pytest.raises(BaseException) as raised:
        asyncio.run(go(False))
    found = innermost(raised.value)
    assert isinstance(found, MCPError)
    assert found.error.code == (-32021 if mode == "2026-07-28" else -32603)
