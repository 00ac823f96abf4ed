"""The App that the worker processes of bench_limits.py run: one agent, "llm", that calls
the LLM endpoint simulator once per task.

    CONVEYOR_DATABASE_URL=... BENCH_LIMITS_SIMULATOR=http://127.0.0.1:PORT \\
    BENCH_LIMITS_AGENT='{"max_tpm": 200000, "window_seconds": 10}' \\
    python -m conveyor.cli worker --app limits_app:app --concurrency 16

(with this folder on PYTHONPATH). Each scenario declares the agent differently, so the
limits come from BENCH_LIMITS_AGENT; the harness declares the same ones in its own App.

A task's payload is {"n": index, "tokens": cost}. The request is built so that it costs
exactly `tokens` by the simulator's rule (conveyor.testing.protocol): 3 for the reply's priming,
4 + ceil(characters / 4) for the one user message, plus the completion, which is the default
responder's short JSON answer (COMPLETION_TOKENS) under a `max_tokens` cap that never cuts
it. So a task's `estimated_tokens` is what its request really costs, to the token.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

from conveyor import App, Task, Throttled
from conveyor.testing.protocol import CHARS_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS

AGENT = "llm"
MODEL = "sim-model"
ENV_SIMULATOR = "BENCH_LIMITS_SIMULATOR"
ENV_AGENT = "BENCH_LIMITS_AGENT"
# The default responder answers {"answer": "simulated", "messages": 1, "digest": "<16 hex>"}:
# 68 characters, 17 tokens, whatever the prompt.
COMPLETION_TOKENS = 17
MAX_TOKENS = 64  # bounds the completion; never reached by the default answer
FIXED_TOKENS = REPLY_PRIMING_TOKENS + MESSAGE_OVERHEAD_TOKENS + COMPLETION_TOKENS
MIN_TOKENS = FIXED_TOKENS + 1
MAX_ATTEMPTS = 10  # 429s are free ('throttled' does not spend a retry); this bounds errors
FILLER = "The quick brown fox jumps over the lazy dog; pack my box with five dozen jugs. "


def prompt(n: int, tokens: int) -> str:
    """A user message that makes a request cost exactly `tokens` in all."""
    if tokens < MIN_TOKENS:
        raise ValueError(f"a request costs at least {MIN_TOKENS} tokens")
    chars = (tokens - FIXED_TOKENS) * CHARS_PER_TOKEN
    head = f"Task {n}. "
    body = FILLER * (chars // len(FILLER) + 1)
    return (head + body)[:chars]


def request_body(n: int, tokens: int) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": prompt(n, tokens)}],
        "max_tokens": MAX_TOKENS,
    }


def declare(app: App, limits: dict[str, Any]) -> None:
    """Declare the agent with a scenario's limits (max_concurrent, max_tpm, max_rpm,
    window_seconds; missing ones are None, or 60 s for the window)."""
    app.agent(AGENT, max_attempts=MAX_ATTEMPTS, **limits)(call_llm)


_client: httpx.AsyncClient | None = None


def _http() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(
            timeout=60.0, limits=httpx.Limits(max_connections=64, max_keepalive_connections=64)
        )
    return _client


async def call_llm(task: Task) -> dict[str, int]:
    """One chat completion. A 429 becomes Throttled with the endpoint's Retry-After (in
    milliseconds, from retry-after-ms); a 200 reports the usage the endpoint counted."""
    url = os.environ[ENV_SIMULATOR].rstrip("/")
    payload = task.payload
    response = await _http().post(
        f"{url}/v1/chat/completions", json=request_body(payload["n"], payload["tokens"])
    )
    if response.status_code == 429:
        raise Throttled(retry_after=float(response.headers["retry-after-ms"]) / 1000)
    response.raise_for_status()
    usage = response.json()["usage"]
    task.report_usage(
        model=MODEL,
        input_tokens=usage["prompt_tokens"],
        output_tokens=usage["completion_tokens"],
    )
    return {"total_tokens": usage["total_tokens"]}


def limits_from_env() -> dict[str, Any]:
    raw = os.environ.get(ENV_AGENT)
    return json.loads(raw) if raw else {}


app = App()
declare(app, limits_from_env())
