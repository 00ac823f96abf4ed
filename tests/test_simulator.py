"""The LLM endpoint simulator: its window rule exactly (explicit times), then over real HTTP.

The HTTP tests use windows of a second or less and real time; they wait on conditions or on
the Retry-After the simulator itself promised, never on a guess of how long things take.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from pydantic import ValidationError

from conveyor.testing.protocol import (
    ChatCompletion,
    ChatCompletionRequest,
    cut_to_cap,
    prompt_tokens,
)
from conveyor.testing.recorder import LogEntry
from conveyor.testing.routes import duration
from conveyor.testing.simulator import Simulator, is_loopback, json_responder, main
from conveyor.testing.window import Limits, RollingWindow
from tests.conftest import wait_for
from tests.processes import ROOT

COMPLETIONS = "/v1/chat/completions"

# ---------------------------------------------------------------------------------------
# Helpers


def sized_responder(request: ChatCompletionRequest) -> str:
    """Answers as many tokens as the first four characters of the last message say."""
    text = request.messages[-1].content
    assert isinstance(text, str)
    return "r" * (4 * int(text[:4]))


def costing(total: int, reply: int = 0, tag: str = "") -> dict[str, Any]:
    """A request that costs exactly `total` tokens with sized_responder, `reply` of them
    completion. By the documented rule one message's prompt is 3 + 4 + ceil(chars / 4)."""
    chars = (total - reply - 7) * 4
    text = f"{reply:04d}{tag}"
    assert len(text) <= chars, "too small a request for its tag"
    return {"model": "sim-1", "messages": [{"role": "user", "content": text.ljust(chars, "p")}]}


Serve = Callable[[Simulator], Awaitable[httpx.AsyncClient]]


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Serve]:
    """serve(simulator) -> an httpx client on it; servers and clients close after the test."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(simulator: Simulator) -> httpx.AsyncClient:
            url = await stack.enter_async_context(simulator.serving())
            client = httpx.AsyncClient(base_url=url, timeout=20)
            return await stack.enter_async_context(client)

        yield start


async def until_admitted(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    """A well-behaved client: on 429, wait as long as Retry-After(-ms) says, then retry."""
    while True:
        response = await client.post(COMPLETIONS, json=body)
        if response.status_code != 429:
            return response
        await asyncio.sleep(int(response.headers["retry-after-ms"]) / 1000)


def admitted(log: list[LogEntry]) -> list[LogEntry]:
    return [entry for entry in log if entry.outcome == "admitted"]


def fullest_windows(log: list[LogEntry], window: float) -> tuple[int, int]:
    """The most requests and tokens admitted within any `window` seconds, from the log alone.

    A window is fullest just after an admission, so look back from each one."""
    times = [(entry.at, entry.total_tokens) for entry in admitted(log)]
    most_requests = most_tokens = 0
    for end, _ in times:
        inside = [tokens for at, tokens in times if end - window < at <= end]
        most_requests = max(most_requests, len(inside))
        most_tokens = max(most_tokens, sum(inside))
    return most_requests, most_tokens


def assert_openai_error(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == kind and error["message"]
    assert response.headers["x-request-id"].startswith("req_")
    return error


# ---------------------------------------------------------------------------------------
# The window rule, with explicit times


def test_window_refuses_past_rpm_until_the_oldest_ages_out() -> None:
    window = RollingWindow(Limits(rpm=3, window_seconds=10))
    for at in (0.0, 1.0, 2.0):
        assert window.try_admit(5, at).admitted
    refused = window.try_admit(5, 4.0)
    assert not refused.admitted and refused.limit == "requests"
    assert refused.retry_after == pytest.approx(6.0)  # the entry of t=0 leaves at t=10
    assert refused.usage.requests == 3 and refused.remaining_requests == 0
    assert not window.try_admit(5, 9.999).admitted
    assert window.try_admit(5, 10.0).admitted  # counted while now < at + window_seconds
    assert window.usage(10.0).requests == 3


def test_window_frees_just_enough_tokens_for_each_size() -> None:
    window = RollingWindow(Limits(tpm=100, window_seconds=10))
    assert window.try_admit(60, 0.0).admitted
    assert window.try_admit(30, 2.0).admitted
    too_big = window.try_admit(50, 3.0)  # needs 40 freed: the 60 of t=0 must go
    assert not too_big.admitted and too_big.limit == "tokens"
    assert too_big.retry_after == pytest.approx(7.0)
    assert too_big.remaining_tokens == 10
    assert window.try_admit(10, 3.0).admitted  # exactly the limit fits
    refused = window.try_admit(1, 3.0)
    assert refused.retry_after == pytest.approx(7.0)
    assert refused.reset_after == pytest.approx(10.0)  # the entries of t=3 leave at t=13
    assert window.try_admit(50, 10.0).admitted
    assert window.usage(10.0).tokens == 90


def test_window_takes_an_oversized_request_alone() -> None:
    window = RollingWindow(Limits(tpm=100, window_seconds=10))
    assert window.try_admit(10, 0.0).admitted
    waiting = window.try_admit(150, 1.0)
    assert not waiting.admitted and waiting.oversized
    assert waiting.retry_after == pytest.approx(9.0)  # until the window is empty
    alone = window.try_admit(150, 10.0)
    assert alone.admitted and alone.oversized and alone.remaining_tokens == 0
    blocked = window.try_admit(1, 11.0)
    assert not blocked.admitted and blocked.retry_after == pytest.approx(9.0)
    assert window.try_admit(100, 20.0).admitted


def test_window_reports_the_longer_wait_when_both_limits_refuse() -> None:
    window = RollingWindow(Limits(rpm=2, tpm=100, window_seconds=10))
    assert window.try_admit(5, 0.0).admitted
    assert window.try_admit(90, 5.0).admitted
    refused = window.try_admit(20, 6.0)  # a request is free at t=10, 15 tokens at t=15
    assert refused.limit == "tokens" and refused.retry_after == pytest.approx(9.0)
    unlimited = RollingWindow(Limits())
    assert all(unlimited.try_admit(10**6, 0.0).admitted for _ in range(1000))


def test_new_limits_count_what_the_window_already_holds() -> None:
    window = RollingWindow(Limits(rpm=4, window_seconds=10))
    for at in (0.0, 1.0, 2.0):
        assert window.try_admit(1, at).admitted
    window.limits = Limits(rpm=2, window_seconds=10)
    refused = window.try_admit(1, 3.0)
    assert refused.retry_after == pytest.approx(8.0)  # two must leave: t=0 and t=1
    window.limits = Limits(rpm=2, window_seconds=2)
    assert window.try_admit(1, 3.0).admitted  # a shorter window: t=0 and t=1 are gone


def test_limits_are_validated() -> None:
    for bad in ({"rpm": 0}, {"tpm": -1}, {"window_seconds": 0}, {"window": 60}):
        with pytest.raises(ValidationError):
            Limits.model_validate(bad)


def test_token_rule() -> None:
    request = ChatCompletionRequest.model_validate(
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": "x" * 8},  # 4 + 2
                {"role": "user", "content": "y" * 9},  # 4 + 3
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "z" * 4},  # 4 + 1
                        {"type": "image_url", "image_url": {"url": "data:,"}},  # + 85
                    ],
                },
                {"role": "assistant", "content": None, "tool_calls": []},  # 4
            ],
        }
    )
    assert prompt_tokens(request) == 3 + 6 + 7 + 90 + 4
    assert cut_to_cap("a" * 10, None) == ("a" * 10, 3, "stop")
    assert cut_to_cap("a" * 10, 3) == ("a" * 10, 3, "stop")
    assert cut_to_cap("a" * 10, 2) == ("a" * 8, 2, "length")
    assert duration(0.0004) == "1ms" and duration(1.5) == "1.5s" and duration(360) == "6m0s"


# ---------------------------------------------------------------------------------------
# Over HTTP


async def test_every_answer_carries_consistent_usage(serve: Serve) -> None:
    simulator = Simulator(base_latency=0, per_token_latency=0)
    client = await serve(simulator)
    body = {
        "model": "sim-1",
        "messages": [
            {"role": "system", "content": "x" * 8},
            {"role": "user", "content": [{"type": "text", "text": "y" * 9}]},
        ],
        "temperature": 0.2,
        "response_format": {"type": "json_object"},
        "seed": 7,  # not the simulator's business: ignored
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    response = await client.post(COMPLETIONS, json=body)
    assert response.status_code == 200, response.text
    answer = ChatCompletion.model_validate(response.json())
    content = answer.choices[0].message.content
    expected = json_responder(ChatCompletionRequest.model_validate(body))
    assert content == expected and json.loads(content)["messages"] == 2
    assert answer.choices[0].finish_reason == "stop"
    assert answer.object == "chat.completion" and answer.id.startswith("chatcmpl-")
    assert abs(answer.created - time.time()) < 60
    usage = answer.usage
    assert usage.prompt_tokens == 3 + (4 + 2) + (4 + 3)
    assert usage.completion_tokens == math.ceil(len(content) / 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert "x-ratelimit-limit-tokens" not in response.headers  # unlimited

    capped = await client.post(
        COMPLETIONS, json={**body, "max_tokens": 9, "max_completion_tokens": 3}
    )
    assert capped.json()["usage"]["completion_tokens"] == 3
    assert capped.json()["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": expected[:12], "refusal": None},
        "finish_reason": "length",
        "logprobs": None,
    }

    (first, second) = (await client.get("/sim/log")).json()
    assert first["request_id"] == response.headers["x-request-id"]
    assert first["status"] == 200 and first["model"] == "sim-1"
    assert first["total_tokens"] == usage.total_tokens
    assert first["at"] <= first["finished_at"] and abs(first["wall_time"] - time.time()) < 60
    assert second["completion_tokens"] == 3
    stats = (await client.get("/sim/stats")).json()
    assert stats["admitted"] == 2 and stats["refused"] == 0 and stats["in_flight"] == 0
    assert stats["total_tokens"] == usage.total_tokens + second["total_tokens"]
    assert sum(window["tokens"] for window in stats["windows"]) == stats["total_tokens"]


async def test_rpm_refuses_with_retry_after_then_admits_again(serve: Serve) -> None:
    simulator = Simulator(rpm=3, window_seconds=1, base_latency=0, per_token_latency=0)
    client = await serve(simulator)
    body = costing(20)
    for remaining in (2, 1, 0):
        response = await client.post(COMPLETIONS, json=body)
        assert response.status_code == 200
        assert response.headers["x-ratelimit-limit-requests"] == "3"
        assert response.headers["x-ratelimit-remaining-requests"] == str(remaining)
    refused = await client.post(COMPLETIONS, json=body)
    error = assert_openai_error(refused, 429, "requests")
    assert error["code"] == "rate_limit_exceeded" and "Limit 3" in error["message"]
    assert refused.headers["retry-after"] == "1"
    wait_ms = int(refused.headers["retry-after-ms"])
    assert 0 < wait_ms <= 1000
    assert "x-ratelimit-limit-tokens" not in refused.headers

    # The simulator promised room after wait_ms: waiting that long is enough.
    await asyncio.sleep(wait_ms / 1000)
    again = await client.post(COMPLETIONS, json=body)
    assert again.status_code == 200, again.text
    outcomes = [(entry.outcome, entry.limit) for entry in simulator.log()]
    assert outcomes == [("admitted", None)] * 3 + [("refused", "requests"), ("admitted", None)]


async def test_tpm_refuses_by_size_then_admits_again(serve: Serve) -> None:
    simulator = Simulator(
        tpm=100, window_seconds=1, responder=sized_responder, base_latency=0, per_token_latency=0
    )
    client = await serve(simulator)
    first = await client.post(COMPLETIONS, json=costing(60, reply=20))
    assert first.json()["usage"] == {
        "prompt_tokens": 40,
        "completion_tokens": 20,
        "total_tokens": 60,
    }
    assert first.headers["x-ratelimit-remaining-tokens"] == "40"
    assert (await client.post(COMPLETIONS, json=costing(30, reply=5))).status_code == 200
    too_big = await client.post(COMPLETIONS, json=costing(50, reply=10))
    error = assert_openai_error(too_big, 429, "tokens")
    assert "Limit 100, Used 90, Requested 50" in error["message"]
    fits = await client.post(COMPLETIONS, json=costing(10))  # the last 10 tokens
    assert fits.status_code == 200 and fits.headers["x-ratelimit-remaining-tokens"] == "0"
    assert (await client.post(COMPLETIONS, json=costing(8))).status_code == 429

    # Only when the 60 of the first request leave does the 50 fit: poll until it does.
    async def fits_now() -> bool:
        response = await client.post(COMPLETIONS, json=costing(50, reply=10))
        return response.status_code == 200

    await wait_for(fits_now, timeout=5, interval=0.05, what="the window to free 50 tokens")
    assert simulator.stats().periods[0].peak_tokens == 100


async def test_an_oversized_request_is_admitted_into_an_empty_window_only(serve: Serve) -> None:
    simulator = Simulator(
        tpm=100, window_seconds=0.5, responder=sized_responder, base_latency=0, per_token_latency=0
    )
    client = await serve(simulator)
    assert (await client.post(COMPLETIONS, json=costing(20))).status_code == 200
    refused = await client.post(COMPLETIONS, json=costing(150))
    assert "Request too large" in assert_openai_error(refused, 429, "tokens")["message"]
    alone = await until_admitted(client, costing(150))
    assert alone.json()["usage"]["total_tokens"] == 150
    stats = simulator.stats()
    assert stats.oversized_admitted == 1 and not stats.within_limits


async def test_concurrent_clients_never_exceed_the_limits_in_any_window() -> None:
    rpm, tpm, window = 50, 2000, 0.5
    simulator = Simulator(
        rpm=rpm,
        tpm=tpm,
        window_seconds=window,
        responder=sized_responder,
        base_latency=0.01,
        per_token_latency=0.0005,
    )
    # Two waves, so that each limit is the one that binds in one of them, however slowly a
    # busy machine lets the clients arrive: 100 large requests (at most 2000 / 50 = 40 fit a
    # window's tokens, fewer than its 50 requests), then 100 small ones (50 fit its requests,
    # 1250 tokens at most). One mixed wave left which limit binds to the arrival rate.
    rng = random.Random(7)
    sizes = rng.choices(range(50, 61), k=100) + rng.choices(range(20, 26), k=100)
    bodies = [costing(size, reply=size // 4, tag=f"#{i}") for i, size in enumerate(sizes)]

    # 200 independent clients, as 200 workers would be (one client with a 200-connection
    # pool spends its time in the pool's bookkeeping instead). They share one TLS context,
    # unused over http but 50 ms each to make.
    tls = ssl.create_default_context()

    async def client_alone(url: str, body: dict[str, Any]) -> httpx.Response:
        async with httpx.AsyncClient(base_url=url, timeout=20, verify=tls) as client:
            return await until_admitted(client, body)

    async with simulator.serving() as url:
        responses = []
        for wave in (bodies[:100], bodies[100:]):
            responses += await asyncio.gather(*(client_alone(url, body) for body in wave))

    assert [r.status_code for r in responses] == [200] * 200
    assert [r.json()["usage"]["total_tokens"] for r in responses] == sizes
    log = simulator.log()
    assert len(admitted(log)) == 200
    assert any(entry.limit == "requests" for entry in log)  # both limits were reached...
    assert any(entry.limit == "tokens" for entry in log)
    most_requests, most_tokens = fullest_windows(log, window)  # ...and never exceeded
    assert most_requests <= rpm and most_tokens <= tpm
    stats = simulator.stats()
    assert stats.within_limits and stats.oversized_admitted == 0
    peaks = (stats.periods[0].peak_requests, stats.periods[0].peak_tokens)
    assert peaks == (most_requests, most_tokens)
    assert stats.peak_in_flight > 1 and stats.in_flight == 0
    assert stats.total_tokens == sum(sizes)
    assert sum(w.requests for w in stats.windows) == 200


async def test_latency_grows_with_completion_tokens(serve: Serve) -> None:
    simulator = Simulator(responder=sized_responder, base_latency=0.05, per_token_latency=0.002)
    client = await serve(simulator)
    started = time.monotonic()
    await asyncio.gather(
        *(client.post(COMPLETIONS, json=costing(120, reply=100)) for _ in range(5))
    )
    elapsed = time.monotonic() - started
    for entry in simulator.log():
        assert entry.finished_at is not None
        assert entry.finished_at - entry.at >= 0.25  # 0.05 + 100 * 0.002
    assert elapsed < 5 * 0.25  # they ran side by side
    assert simulator.stats().peak_in_flight > 1


async def test_limits_change_at_runtime(serve: Serve) -> None:
    simulator = Simulator(rpm=10, window_seconds=1, base_latency=0, per_token_latency=0)
    client = await serve(simulator)
    for _ in range(3):
        assert (await client.post(COMPLETIONS, json=costing(20))).status_code == 200

    changed = await client.post("/sim/limits", json={"rpm": 2, "tpm": 1000})
    assert changed.json() == {"rpm": 2, "tpm": 1000, "window_seconds": 1.0}
    assert (await client.get("/sim/limits")).json() == changed.json()
    refused = await client.post(COMPLETIONS, json=costing(20))  # 3 already in the window
    assert_openai_error(refused, 429, "requests")
    assert refused.headers["x-ratelimit-limit-requests"] == "2"
    assert refused.headers["x-ratelimit-limit-tokens"] == "1000"
    assert (await client.post("/sim/limits", json={"rpm": 0})).status_code == 400
    assert (await client.post("/sim/limits", json={"window_seconds": None})).status_code == 400
    assert simulator.limits.rpm == 2

    simulator.set_limits(rpm=None)  # programmatic, and None means unlimited
    assert (await client.post(COMPLETIONS, json=costing(20))).status_code == 200
    simulator.set_limits(tpm=30)
    assert (await client.post(COMPLETIONS, json=costing(20))).status_code == 429
    periods = simulator.stats().periods
    assert [(p.limits.rpm, p.limits.tpm) for p in periods] == [
        (10, None),
        (2, 1000),
        (None, 1000),
        (None, 30),
    ]
    assert [p.admitted for p in periods] == [3, 0, 1, 0]

    assert (await client.post("/sim/reset")).status_code == 204
    assert simulator.log() == [] and simulator.limits.tpm == 30
    assert (await client.post(COMPLETIONS, json=costing(20))).status_code == 200


MALFORMED: list[tuple[str, bytes | dict[str, Any], str | None]] = [
    ("not json", b'{"model": ', None),
    ("not an object", b"[]", None),
    ("no body", b"", None),
    ("not utf-8", b'{"model": "\xff"}', None),
    ("no model", {"messages": [{"role": "user", "content": "hi"}]}, "model"),
    ("empty model", {"model": "", "messages": [{"role": "user", "content": "hi"}]}, "model"),
    ("no messages", {"model": "m"}, "messages"),
    ("empty messages", {"model": "m", "messages": []}, "messages"),
    ("unknown role", {"model": "m", "messages": [{"role": "x", "content": "hi"}]}, "messages"),
    ("content a number", {"model": "m", "messages": [{"role": "user", "content": 5}]}, "messages"),
    (
        "unknown part",
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "audio"}]}]},
        "messages",
    ),
    (
        "max_tokens 0",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0},
        "max_tokens",
    ),
    (
        "temperature 9",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 9},
        "temperature",
    ),
    (
        "streaming",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        "stream",
    ),
]


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Simulator, str]]:
    """One server in a thread for the many small cases (and a test of start_in_thread)."""
    simulator = Simulator(base_latency=0, per_token_latency=0)
    with simulator.start_in_thread() as server:
        yield simulator, server.url


@pytest.mark.parametrize(("case", "body", "param"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_requests_get_an_openai_400(
    shared: tuple[Simulator, str], case: str, body: bytes | dict[str, Any], param: str | None
) -> None:
    simulator, url = shared
    simulator.reset()
    with httpx.Client(base_url=url) as client:
        if isinstance(body, bytes):
            headers = {"content-type": "application/json"}
            response = client.post(COMPLETIONS, content=body, headers=headers)
        else:
            response = client.post(COMPLETIONS, json=body)
    error = assert_openai_error(response, 400, "invalid_request_error")
    assert (error["param"] or "").split(".")[0] == (param or "")
    (entry,) = simulator.log()
    assert entry.outcome == "invalid" and entry.status == 400 and entry.error
    assert entry.request_id == response.headers["x-request-id"]


def test_other_http_errors_keep_the_openai_shape(shared: tuple[Simulator, str]) -> None:
    simulator, url = shared
    simulator.reset()
    with httpx.Client(base_url=url) as client:
        assert_openai_error(client.get("/v1/nothing"), 404, "invalid_request_error")
        not_allowed = client.get(COMPLETIONS)
        assert_openai_error(not_allowed, 405, "invalid_request_error")
        assert not_allowed.headers["allow"] == "POST"
        plain = client.post(COMPLETIONS, content=b"hi", headers={"content-type": "text/plain"})
        assert_openai_error(plain, 400, "invalid_request_error")
    assert [entry.status for entry in simulator.log()] == [400]  # only the bad completion


def test_a_taken_port_raises_in_the_caller(shared: tuple[Simulator, str]) -> None:
    port = int(shared[1].rsplit(":", 1)[1])
    with pytest.raises(OSError):
        Simulator().start_in_thread(port=port)


async def test_the_openai_sdk_reads_answers_and_rate_limits(serve: Serve) -> None:
    openai = pytest.importorskip("openai")
    simulator = Simulator(rpm=1, window_seconds=0.5, base_latency=0, per_token_latency=0)
    url = str((await serve(simulator)).base_url).rstrip("/")
    sdk = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-simulated", max_retries=0)
    async with sdk:
        messages = [{"role": "user", "content": "Say something in JSON."}]
        completion = await sdk.chat.completions.create(model="gpt-sim", messages=messages)
        assert completion.usage.prompt_tokens == 3 + 4 + 6
        assert completion.usage.total_tokens == (
            completion.usage.prompt_tokens + completion.usage.completion_tokens
        )
        assert json.loads(completion.choices[0].message.content)["answer"] == "simulated"
        with pytest.raises(openai.RateLimitError) as refused:
            await sdk.chat.completions.create(model="gpt-sim", messages=messages)
        assert refused.value.status_code == 429 and refused.value.code == "rate_limit_exceeded"
        # With retries, the SDK waits out retry-after-ms and gets through.
        retrying = sdk.with_options(max_retries=2)
        again = await retrying.chat.completions.create(model="gpt-sim", messages=messages)
        assert again.usage.total_tokens == completion.usage.total_tokens
    assert [entry.status for entry in simulator.log()][:2] == [200, 429]


# ---------------------------------------------------------------------------------------
# Command line


def test_the_cli_refuses_a_remote_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com")
    with pytest.raises(SystemExit) as exited:
        main(["--host", "0.0.0.0"])
    assert exited.value.code == 2 and "--allow-remote" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--window", "0"])


def test_the_cli_serves_until_ctrl_c() -> None:
    command = [sys.executable, "-m", "conveyor.testing.simulator", "--rpm", "5", "--port", "0"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            url = line.split()[3]  # "LLM simulator on http://127.0.0.1:PORT ..."
            assert url.startswith("http://127.0.0.1:"), line
            response = httpx.post(f"{url}{COMPLETIONS}", json=costing(20), timeout=10)
            assert response.status_code == 200
            assert response.headers["x-ratelimit-remaining-requests"] == "4"
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=10) == 0
        finally:
            if child.poll() is None:
                child.kill()
