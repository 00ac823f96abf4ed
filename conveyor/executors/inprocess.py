"""Agents that run in the worker's process: `async def` in its event loop, plain `def` in
its thread pool (one thread per slot, so a blocking agent never blocks the loop)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conveyor import tracing
from conveyor.executors.base import Attempt, Succeeded
from conveyor.task import Task


class AsyncExecutor:
    """An `async def` agent, awaited in the worker's loop; a cancel reaches it as
    CancelledError at its next await."""

    def __init__(self, fn: Callable[[Task], Awaitable[Any]]) -> None:
        self.fn = fn

    async def run(self, attempt: Attempt) -> Succeeded:
        fn = self.fn
        return Succeeded(await traced(attempt.task, lambda: fn(attempt.task)))

    async def close(self) -> None:
        pass


class ThreadExecutor:
    """A plain `def` agent, run in `threads` with the caller's context variables. A cancel
    stops waiting for it; the thread itself cannot be interrupted and runs to its end."""

    def __init__(self, fn: Callable[[Task], Any], threads: ThreadPoolExecutor) -> None:
        self.fn = fn
        self.threads = threads

    async def run(self, attempt: Attempt) -> Succeeded:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()

        def call() -> Awaitable[Any]:
            return loop.run_in_executor(self.threads, context.run, self.fn, attempt.task)

        return Succeeded(await traced(attempt.task, call))

    async def close(self) -> None:
        pass  # the pool is the worker's


def traced(task: Task, call: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
    """`call()`, inside the attempt's span when tracing is on, with the tokens the attempt
    reported as attributes, and the span's trace id on the task. Off, the awaitable of
    `call()` itself: no coroutine of its own around every attempt."""
    if not tracing.enabled():
        return call()
    return _in_span(task, call)


async def _in_span(task: Task, call: Callable[[], Awaitable[Any]]) -> Any:
    with tracing.attempt_span(task.agent, task.id, task.attempt) as span:
        task.trace_id = tracing.trace_id_of(span)
        try:
            return await call()
        finally:
            span.set_attribute("gen_ai.usage.input_tokens", task.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", task.usage.output_tokens)
