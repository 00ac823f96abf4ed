"""The LLM client against the simulator over real HTTP: structured answers, usage, 429s."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from conveyor import Task, Throttled
from conveyor.llm.client import (
    LLMAnswerInvalid,
    LLMClient,
    LLMRequestRefused,
    LLMUnavailable,
    retry_after,
)
from conveyor.testing.protocol import ChatCompletionRequest
from conveyor.testing.simulator import Simulator


class Point(BaseModel):
    x: int
    label: str | None = None


def point_responder(request: ChatCompletionRequest) -> str:
    # Says which response_format it was asked for, so the tests can see the mode used.
    fmt = request.response_format.type if request.response_format else "none"
    return json.dumps({"x": 7, "label": fmt})


def a_task() -> Task:
    return Task(
        id=1,
        agent="a",
        payload={},
        attempt=1,
        max_attempts=3,
        priority=0,
        created_at=datetime.now(UTC),
    )


@pytest.fixture
async def served() -> AsyncIterator[tuple[Simulator, str]]:
    simulator = Simulator(responder=point_responder, base_latency=0, per_token_latency=0)
    async with simulator.serving() as url:
        yield simulator, url


async def test_structured_output_is_parsed_and_every_call_reports_usage(
    served: tuple[Simulator, str],
) -> None:
    simulator, url = served
    client = LLMClient(model="sim-1", base_url=f"{url}/v1")
    task = a_task()
    try:
        first = await client.extract(task, [{"role": "user", "content": "hi"}], Point, name="p")
        await client.extract(task, [{"role": "user", "content": "again"}], Point, name="p")
    finally:
        await client.aclose()
    assert first == Point(x=7, label="json_schema")
    assert client.structured is True
    log = simulator.log()
    assert len(log) == 2
    # The task's usage is exactly what the endpoint charged, summed over both calls.
    assert task.usage.input_tokens == sum(e.prompt_tokens for e in log)
    assert task.usage.output_tokens == sum(e.completion_tokens for e in log)
    assert task.usage.calls == 2
    assert task.usage.by_model == {"sim-1": [task.usage.input_tokens, task.usage.output_tokens]}


async def test_a_429_becomes_throttled_with_the_servers_retry_after() -> None:
    simulator = Simulator(rpm=1, window_seconds=30, responder=point_responder, base_latency=0)
    async with simulator.serving() as url:
        client = LLMClient(model="sim-1", base_url=f"{url}/v1")
        task = a_task()
        try:
            await client.extract(task, [{"role": "user", "content": "one"}], Point, name="p")
            with pytest.raises(Throttled) as caught:
                await client.extract(task, [{"role": "user", "content": "two"}], Point, name="p")
        finally:
            await client.aclose()
    # The window is 30 s and the first request just went in: the wait is most of it.
    assert caught.value.retry_after is not None
    assert 20 < caught.value.retry_after <= 30
    assert "throttled" in str(caught.value)
    assert task.usage.calls == 1  # a refused request spent nothing


async def test_an_answer_outside_the_schema_is_a_clear_error_and_still_counted() -> None:
    simulator = Simulator(responder=lambda r: '{"x": "not a number"}', base_latency=0)
    async with simulator.serving() as url:
        client = LLMClient(model="sim-1", base_url=f"{url}/v1")
        task = a_task()
        try:
            with pytest.raises(LLMAnswerInvalid, match=r"does not fit the schema.*x"):
                await client.extract(task, [{"role": "user", "content": "x"}], Point, name="p")
        finally:
            await client.aclose()
    assert task.usage.calls == 1 and task.usage.output_tokens > 0


def _server(handler: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


async def test_a_server_without_json_schema_gets_json_mode_with_the_schema() -> None:
    """A server that refuses response_format json_schema (a 400 naming it) is asked again
    in JSON mode, with the schema in a system message, and remembered as such."""
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if body["response_format"]["type"] == "json_schema":
            error = {"message": "response_format json_schema is not supported", "type": "x"}
            return httpx.Response(400, json={"error": error})
        return httpx.Response(200, json=_completion('```json\n{"x": 3}\n```'))

    http = _server(handler)
    client = LLMClient(model="m", base_url="http://llm.invalid/v1", http_client=http)
    task = a_task()
    assert await client.extract(task, [{"role": "user", "content": "q"}], Point, name="p") == (
        Point(x=3)
    )
    assert await client.extract(task, [{"role": "user", "content": "q"}], Point, name="p") == (
        Point(x=3)
    )
    await client.aclose()
    assert [b["response_format"]["type"] for b in seen] == [
        "json_schema",
        "json_object",
        "json_object",
    ]
    assert '"x"' in seen[1]["messages"][0]["content"]  # the schema, as instructions
    assert client.structured is False
    assert task.usage.input_tokens == 20  # the two answered calls


@pytest.mark.parametrize(
    ("status", "error"), [(401, LLMRequestRefused), (404, LLMRequestRefused), (503, LLMUnavailable)]
)
async def test_other_errors_are_clear_and_permanent_only_when_a_retry_cannot_help(
    status: int, error: type[Exception]
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"message": "nope", "type": "x"}})

    client = LLMClient(model="m", base_url="http://llm.invalid/v1", http_client=_server(handler))
    with pytest.raises(error, match=f"answered {status}: nope"):
        await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
    await client.aclose()


async def test_an_unreachable_endpoint_is_unavailable_not_a_crash() -> None:
    client = LLMClient(model="m", base_url="http://127.0.0.1:9/v1", timeout=5)
    with pytest.raises(LLMUnavailable, match="cannot be reached"):
        await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
    await client.aclose()


def test_retry_after_prefers_milliseconds_and_ignores_dates() -> None:
    assert retry_after({"retry-after-ms": "1500", "retry-after": "2"}) == 1.5
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after({}) is None


def test_openais_api_without_a_key_is_a_clear_permanent_error(monkeypatch: Any) -> None:
    from conveyor.errors import PermanentFailure

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMRequestRefused, match="needs an API key") as caught:
        LLMClient(model="gpt-4o-mini")
    assert isinstance(caught.value, PermanentFailure)
    # A local server needs none: no error.
    LLMClient(model="local", base_url="http://127.0.0.1:9/v1")
