"""A tool that asks its caller twice by elicitation and once by sampling, run by the official ``mcp``
client (PyPI, both eras) against gunicorn with two workers sharing a real Redis: 2026-07-28 through
``InputRequiredResult`` rounds (each retry may reach either worker: the sealed state carries the
answers), 2025-11-25 through the call's SSE stream (the client POSTs each answer as a request of its
own, which the rendezvous hands to the worker holding the stream)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from .test_deploy import stop
from .test_operating_server import redis_url, start  # noqa: F401  (redis_url: a redis-server of our own)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(redis_url) -> Iterator[str]:  # noqa: F811
    base, proc = start(f"tests.apps.asking_app:create_app(storage={redis_url + '/5'!r})", workers=2, threads=8,
                       ready="/mcp")
    try:
        yield base
    finally:
        stop(proc)


def run_trip(base: str, mode: str, *, sampling: bool = True) -> tuple[Any, list[str], list[str]]:
    from mcp import Client
    from mcp_types import CreateMessageResult, ElicitResult, TextContent

    asked: list[str] = []
    logs: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        schema = params.requested_schema
        answer = {"name": "Ada"} if "name" in schema["properties"] else {"color": "red"}
        return ElicitResult(action="accept", content=answer)

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Pack light"),
                                   model="test-model", stop_reason="endTurn")

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def go() -> Any:
        async with Client(f"{base}/mcp", mode=mode, elicitation_callback=elicit, logging_callback=on_log,
                          sampling_callback=sample if sampling else None) as client:
            return await client.call_tool("plan_trip", {"days": 4})

    return asyncio.run(go()), asked, logs


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_official_client_answers_two_elicitations_and_a_sampling(server: str, mode: str) -> None:
    for _ in range(3):  # answers land on either worker
        result, asked, logs = run_trip(server, mode)
        assert result.is_error is False, result
        assert result.content[0].text == "Ada: 4 days, a red suitcase, 'Pack light'"
        assert asked == ["Who travels?", "Which colour of suitcase?", "A motto for a 4-day trip"]
        if mode == "legacy":  # the call's stream carried its log line too
            assert logs == ["asking the name"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_a_client_without_sampling_is_not_sent_a_request_it_cannot_answer(server: str, mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    if mode == "2026-07-28":  # it declares no sampling: -32021 names it, after the two questions
        with pytest.raises(BaseException) as raised:  # the client's task group wraps it
            run_trip(server, mode, sampling=False)
        found = raised.value
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        assert isinstance(found, MCPError) and found.error.code == -32021
        assert found.error.data == {"requiredCapabilities": {"sampling": {}}}
    else:  # the handshake era cannot know: the client refuses the request and the tool says so
        result, asked, _ = run_trip(server, mode, sampling=False)
        assert result.is_error is True and "could not answer" in result.content[0].text
        assert asked == ["Who travels?", "Which colour of suitcase?"]
