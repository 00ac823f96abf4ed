"""The LLM client against the simulator over real HTTP: structured answers, usage, 429s."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

from conveyor import Task, Throttled
from conveyor.errors import PermanentFailure
from conveyor.llm import formats
from conveyor.llm.client import (
    LLMAnswerCut,
    LLMAnswerInvalid,
    LLMClient,
    LLMRequestRefused,
    LLMUnavailable,
    retry_after,
)
from conveyor.testing.protocol import ChatCompletionRequest, Fault
from conveyor.testing.simulator import Simulator
from tests.conftest import wait_for
from tests.streaming_model import StreamingModel


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
    client = LLMClient(stream=False, model="sim-1", base_url=f"{url}/v1")
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
        client = LLMClient(stream=False, model="sim-1", base_url=f"{url}/v1")
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
        client = LLMClient(stream=False, model="sim-1", base_url=f"{url}/v1")
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
    client = LLMClient(stream=False, model="m", base_url="http://llm.invalid/v1", http_client=http)
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

    client = LLMClient(
        stream=False, model="m", base_url="http://llm.invalid/v1", http_client=_server(handler)
    )
    with pytest.raises(error, match=f"answered {status}: nope"):
        await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
    await client.aclose()


async def test_an_unreachable_endpoint_is_unavailable_not_a_crash() -> None:
    client = LLMClient(stream=False, model="m", base_url="http://127.0.0.1:9/v1", timeout=5)
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
        LLMClient(stream=False, model="gpt-4o-mini")
    assert isinstance(caught.value, PermanentFailure)
    # A local server needs none: no error.
    LLMClient(stream=False, model="local", base_url="http://127.0.0.1:9/v1")


# ---------------------------------------------------------------- negotiation and faults


@pytest.fixture(autouse=True)
def _fresh_formats() -> None:
    formats.forget_all()  # what servers refused is remembered per process


def asked_formats(simulator: Simulator) -> list[str]:
    return [e.error or "ok" for e in simulator.log()]


class Amount(BaseModel):
    amount: str = Field(json_schema_extra={"pattern": r"^-?[0-9]+(\.[0-9]+)?$"})


async def test_a_server_like_llama_cpp_python_gets_json_object_with_the_schema_once() -> None:
    """llama-cpp-python's server answers json_schema with a 500 naming the format: that is
    a refusal, not an outage. The client steps down to json_object with the schema, and
    the next client for the same server and model starts there."""
    seen: list[ChatCompletionRequest] = []

    def responder(request: ChatCompletionRequest) -> str:
        seen.append(request)
        return json.dumps({"amount": "12.50"})

    simulator = Simulator(responder=responder, base_latency=0, formats={"text", "json_object"})
    async with simulator.serving() as url:
        first = LLMClient(stream=False, model="local", base_url=f"{url}/v1")
        second = LLMClient(stream=False, model="local", base_url=f"{url}/v1")
        try:
            got = await first.extract(None, [{"role": "user", "content": "q"}], Amount, name="a")
            again = await second.extract(None, [{"role": "user", "content": "q"}], Amount, name="a")
        finally:
            await first.aclose()
            await second.aclose()
    assert got == again == Amount(amount="12.50")
    assert first.refusals == 1 and first.requests == 2 and first.format == "json_object+schema"
    assert second.refusals == 0 and second.requests == 1  # remembered: only the first pays
    assert len(simulator.log()) == 3 and "response_format" in (simulator.log()[0].error or "")
    # The schema went with the request, in the form grammar converters handle.
    answered = seen[0].response_format
    assert answered is not None and answered.type == "json_object"
    assert answered.schema_ is not None
    pattern = answered.schema_["properties"]["amount"]["pattern"]
    assert pattern == "^-?[0-9]+([.][0-9]+)?$"
    assert "\\." not in json.dumps(answered.schema_)


async def test_a_500_that_names_no_format_is_an_outage_not_a_refusal() -> None:
    def responder(request: ChatCompletionRequest) -> str:
        raise Fault(500, "CUDA out of memory")

    simulator = Simulator(responder=responder, base_latency=0)
    async with simulator.serving() as url:
        client = LLMClient(stream=False, model="local", base_url=f"{url}/v1")
        try:
            with pytest.raises(LLMUnavailable, match="answered 500: CUDA out of memory"):
                await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
        finally:
            await client.aclose()
    assert client.requests == 1 and client.refusals == 0
    assert formats.first_rung(f"{url}/v1", "local") == 0  # nothing learnt from an outage


async def test_a_server_that_refuses_every_format_fails_once_and_for_good() -> None:
    def responder(request: ChatCompletionRequest) -> str:
        raise Fault(422, "unsupported schema")  # even without a response_format

    simulator = Simulator(responder=responder, base_latency=0, formats={"text"})
    async with simulator.serving() as url:
        client = LLMClient(stream=False, model="local", base_url=f"{url}/v1")
        try:
            with pytest.raises(LLMRequestRefused, match="answered 422: unsupported schema"):
                await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
        finally:
            await client.aclose()
    # json_schema, json_object+schema, json_object refused by format; then plain
    # instructions, whose 422 is the request's own: four requests, then a permanent error.
    assert client.requests == 4 and client.refusals == 3
    assert isinstance(LLMRequestRefused("x"), PermanentFailure)


async def test_a_request_past_the_timeout_ends_within_a_second_of_it() -> None:
    simulator = Simulator(base_latency=30, per_token_latency=0)
    async with simulator.serving() as url:
        client = LLMClient(stream=False, model="slow", base_url=f"{url}/v1", timeout=0.5)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            with pytest.raises(LLMUnavailable, match=r"within 0\.5 s \(CONVEYOR_LLM_TIMEOUT\)"):
                await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
            timed_out = loop.time() - started
            # The task's deadline, when nearer, wins.
            started = loop.time()
            with pytest.raises(LLMUnavailable, match="the task's deadline"):
                await client.extract(
                    None,
                    [{"role": "user", "content": "q"}],
                    Point,
                    name="p",
                    deadline=started + 0.2,
                )
            deadlined = loop.time() - started
        finally:
            await client.aclose()
        await wait_for(lambda: simulator.abandoned == 2, timeout=5)
    assert 0.5 <= timed_out < 1.5
    assert 0.2 <= deadlined < 1.2
    # Both connections were closed: the server saw each client go and stopped.
    assert simulator.abandoned == 2


def test_the_timeout_is_a_setting(monkeypatch: Any) -> None:
    from conveyor.settings import Settings, SettingsError

    monkeypatch.setenv("CONVEYOR_LLM_TIMEOUT", "10m")
    monkeypatch.setenv("CONVEYOR_LLM_MODEL", "m")
    monkeypatch.setenv("CONVEYOR_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    settings = Settings.from_env()
    client = LLMClient.from_settings(settings)
    assert client is not None and client.timeout == 600.0
    monkeypatch.setenv("CONVEYOR_LLM_TIMEOUT", "soon")
    with pytest.raises(SettingsError, match="CONVEYOR_LLM_TIMEOUT"):
        Settings.from_env()
    monkeypatch.setenv("CONVEYOR_LLM_TIMEOUT", "0")
    with pytest.raises(SettingsError, match="CONVEYOR_LLM_TIMEOUT"):
        Settings.from_env()


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        ("Sure! Here is the invoice.", LLMAnswerInvalid, "not JSON: 'Sure! Here is"),
        ("", LLMAnswerInvalid, "answered nothing"),
        ("   ", LLMAnswerInvalid, "answered nothing"),
        ("[1, 2]", LLMAnswerInvalid, "does not fit the schema"),
        ('{"label": "' + "long " * 200 + '", "x": 1}', LLMAnswerCut, "cut at the token limit"),
    ],
    ids=["prose", "empty", "blank", "wrong-shape", "truncated"],
)
async def test_bad_answers_are_clear_errors(
    answer: str, error: type[Exception], message: str
) -> None:
    simulator = Simulator(responder=lambda r: answer, base_latency=0)
    async with simulator.serving() as url:
        client = LLMClient(stream=False, model="m", base_url=f"{url}/v1")
        try:
            with pytest.raises(error, match=message):
                await client.extract_partial(
                    None, [{"role": "user", "content": "q"}], Point, name="p", max_tokens=50
                )
        finally:
            await client.aclose()
    assert client.requests == 1  # one request: nothing retried inside the client


async def test_an_answer_cut_at_its_bound_keeps_the_members_it_completed() -> None:
    answer = '{"x": 4, "label": "' + "long " * 200 + '"}'
    simulator = Simulator(responder=lambda r: answer, base_latency=0)
    async with simulator.serving() as url:
        client = LLMClient(stream=False, model="m", base_url=f"{url}/v1")
        try:
            partial = await client.extract_partial(
                None, [{"role": "user", "content": "q"}], Point, name="p", max_tokens=50
            )
            with pytest.raises(LLMAnswerCut, match="cut at the token limit in 'label'"):
                await client.extract(
                    None, [{"role": "user", "content": "q"}], Point, name="p", max_tokens=50
                )
        finally:
            await client.aclose()
    assert partial.value == Point(x=4, label=None)
    assert partial.cut == "label" and not partial.whole


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"a": 1, "b": [1, 2', ({"a": 1}, "b")),
        ('```json\n{"a": "x, y", "b": {"c": 1}, "d": "}{', ({"a": "x, y", "b": {"c": 1}}, "d")),
        ('{"a": "say \\"hi\\", ok", "b', ({"a": 'say "hi", ok'}, "b")),
        ('{"a": 1, ', ({"a": 1}, "")),
        ('{"a": [1, 2', ({}, "a")),
        ('{"a": 1}', None),  # complete: nothing was cut
        ("Sure, here", None),
    ],
)
def test_the_members_a_cut_answer_completed(text: str, kept: Any) -> None:
    from conveyor.llm.salvage import cut_members

    assert cut_members(text) == kept


def test_a_cut_answer_and_a_models_refusal_are_permanent() -> None:
    from conveyor.llm.client import LLMAnswerRefused

    assert isinstance(LLMAnswerCut("x"), PermanentFailure)
    assert isinstance(LLMAnswerRefused("x"), PermanentFailure)
    assert not isinstance(LLMAnswerInvalid("x"), PermanentFailure)  # may do better


async def test_a_field_that_does_not_validate_is_salvaged_not_the_whole_answer() -> None:
    simulator = Simulator(
        responder=lambda r: '{"x": "3 Piece", "label": {"nested": true}}', base_latency=0
    )
    async with simulator.serving() as url:
        client = LLMClient(stream=False, model="m", base_url=f"{url}/v1")
        try:
            partial = await client.extract_partial(
                None, [{"role": "user", "content": "q"}], Point, name="p"
            )
        finally:
            await client.aclose()
    assert partial.value == Point(x=3, label=None)
    assert partial.dropped == ["label"]
    assert partial.repaired == ["x: '3 Piece' -> 3"]


@pytest.mark.parametrize("doc_type", ["invoice", "contract", "generic"])
def test_the_document_schemas_go_out_without_escapes_converters_break_on(doc_type: str) -> None:
    from conveyor.documents.types import json_schema

    sent = json.dumps(formats.portable(json_schema(doc_type)))
    assert "\\\\." not in sent and "\\\\d" not in sent
    if doc_type == "invoice":
        assert "([.][0-9]{1,6})?" in sent  # the amounts' pattern, the same regex
    # Every pattern bounded: a grammar-held model cannot write an amount without end.
    for pattern in re.findall(r'"pattern": "([^"]*)"', sent):
        assert "+" not in pattern and "*" not in pattern, pattern


def test_portable_patterns_mean_the_same() -> None:
    import re

    for pattern in (r"^-?[0-9]+(\.[0-9]+)?$", r"^\d{4}-\d{2}$", r"^[\.x]\+$"):
        rewritten = formats.portable_pattern(pattern)
        for text in ("12.50", "12x50", "2026-11", ".+", "x+", "-3", "1.2.3"):
            assert bool(re.match(pattern, text)) == bool(re.match(rewritten, text)), pattern
    assert formats.portable_pattern(r"[\.x]") == r"[\.x]"  # inside a class: left alone


# ----------------------------------------------------------------------------- streaming


async def test_a_streamed_answer_is_read_whole_with_the_servers_usage() -> None:
    model = StreamingModel()
    async with model.serving() as url:
        client = LLMClient(model="m", base_url=url)
        task = a_task()
        try:
            got = await client.extract(task, [{"role": "user", "content": "q"}], Point, name="p")
        finally:
            await client.aclose()
    assert got == Point(x=7, label="streamed")
    assert client.streamed is True and client.requests == 1 and client.refusals == 0
    assert model.bodies[0]["stream"] is True
    assert model.bodies[0]["stream_options"] == {"include_usage": True}
    # The server's own count, from its last event.
    assert (task.usage.input_tokens, task.usage.output_tokens) == (11, len(model.tokens()))
    assert client.estimated_usage == 0


async def test_a_stream_without_usage_counts_its_events_and_estimates_the_prompt() -> None:
    model = StreamingModel(usage=False)  # as llama-cpp-python's server streams
    question = [{"role": "user", "content": "x" * 400}]
    async with model.serving() as url:
        client = LLMClient(model="m", base_url=url)
        task = a_task()
        try:
            await client.extract(task, question, Point, name="p")
        finally:
            await client.aclose()
    assert task.usage.output_tokens == len(model.tokens())  # an event a token
    assert task.usage.input_tokens == 100 + 4  # 400 characters, one message
    assert client.estimated_usage == 1


async def test_a_server_that_refuses_streaming_is_asked_unstreamed_once() -> None:
    """The simulator refuses stream=true with a 400 naming `stream`, as servers that do
    not stream do: the same request goes again unstreamed, and so does every later one
    to that server and model."""
    simulator = Simulator(responder=point_responder, base_latency=0, per_token_latency=0)
    async with simulator.serving() as url:
        first = LLMClient(model="sim-1", base_url=f"{url}/v1")
        second = LLMClient(model="sim-1", base_url=f"{url}/v1")
        try:
            got = await first.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
            await second.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
        finally:
            await first.aclose()
            await second.aclose()
    assert got == Point(x=7, label="json_schema")  # the format stays what it was
    assert (first.requests, first.refusals, first.streamed) == (2, 1, False)
    assert (second.requests, second.refusals, second.streamed) == (1, 0, False)
    assert [e.outcome for e in simulator.log()] == ["invalid", "admitted", "admitted"]


async def test_an_abandoned_stream_closes_while_the_server_writes_and_it_stops() -> None:
    """Past CONVEYOR_LLM_TIMEOUT the client drops the connection mid-answer: the server
    sees the client gone at its next token and writes no more."""
    model = StreamingModel(answer=" ".join(["w"] * 400), interval=0.05)  # 20 s of tokens
    async with model.serving() as url:
        client = LLMClient(model="m", base_url=url, timeout=1.0)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            with pytest.raises(LLMUnavailable, match="abandoned and its connection closed"):
                await client.extract(None, [{"role": "user", "content": "q"}], Point, name="p")
            ended = loop.time() - started
        finally:
            await client.aclose()
        await wait_for(lambda: model.gone == 1, timeout=5)
        sent = model.sent
    assert 1.0 <= ended < 2.0
    assert sent < 100  # it stopped about when the client left, far from the 400 tokens


async def test_a_bound_above_what_the_model_can_write_is_dropped_once() -> None:
    """A server that refuses max_tokens as too large (OpenAI's 400 for a model with a
    smaller output limit) is asked again without it, and so is every later request to
    that server and model: the bound is a guard, not a reason to fail."""
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if body.get("max_tokens", 0) > 4096:
            message = (
                "max_tokens is too large: 20000. This model supports at most 4096 "
                "completion tokens, whereas you provided 20000."
            )
            return httpx.Response(400, json={"error": {"message": message, "type": "x"}})
        return httpx.Response(200, json=_completion('{"x": 3}'))

    http = _server(handler)
    client = LLMClient(
        stream=False, model="m-4k", base_url="http://llm.invalid/v1", http_client=http
    )
    question = [{"role": "user", "content": "q"}]
    try:
        for _ in range(2):
            got = await client.extract(None, question, Point, name="p", max_tokens=20000)
            assert got == Point(x=3)
    finally:
        await client.aclose()
    assert ["max_tokens" in b for b in seen] == [True, False, False]
    assert (client.requests, client.refusals) == (3, 1)
