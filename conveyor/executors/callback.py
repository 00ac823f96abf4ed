"""External jobs behind the executor protocol: dispatch the attempt's job, then wait for
its signed callback to end the attempt.

The callback is written by the web app (POST /api/callbacks/{attempt_id}), not by the
worker: the worker hears of it by NOTIFY (`attempt.ended_elsewhere`), or at the latest when
the lease renewal finds the task gone, and only lets go of the task. If the job ends, fails
to start or times out without calling back, the attempt fails (JobFailed) and the worker
writes that, fenced as always: a callback that lands meanwhile wins, the other is late.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from typing import Any

from conveyor.executors.base import Attempt, CalledBack, JobFailed
from conveyor.executors.jobs import Dispatched, Dispatcher, Job
from conveyor.log import fields

log = logging.getLogger(__name__)

DEFAULT_CALLBACK_GRACE = 5.0  # seconds a callback may trail the job's end
STOP_TIMEOUT = 10.0  # seconds a job's stop() may take when it is a request


class CallbackExecutor:
    """Runs each attempt as the job `dispatcher` starts (SubprocessJob, HttpJob, ...).

    The dispatcher's `timeout` (seconds without a callback; none if it has none) and
    `callback_grace` (seconds a callback may trail the job's exit) apply."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def run(self, attempt: Attempt) -> CalledBack:
        callback = await attempt.callback()
        task = attempt.task
        job = Job(
            task_id=task.id,
            attempt=task.attempt,
            attempt_id=attempt.attempt_id,
            agent=task.agent,
            payload=task.payload,
            callback_url=callback.url,
            secret=callback.secret,
        )
        dispatched: Dispatched | None = None
        try:
            try:
                dispatched = await self.dispatcher.dispatch(job)
            except Exception as exc:
                raise JobFailed(f"the job could not be started: {exc}") from exc
            await attempt.started(dispatched.run_id)
            await self._wait(attempt.ended_elsewhere, dispatched)
            return CalledBack()
        except asyncio.CancelledError:
            if dispatched is not None and dispatched.stop is not None:
                await _stop(dispatched)
            raise

    async def _wait(self, called_back: asyncio.Future[None], dispatched: Dispatched) -> None:
        """Return once the callback ended the attempt; raise JobFailed if the job ended
        without one (after a grace), or the dispatcher's timeout passed."""
        waits: list[asyncio.Future[Any]] = [called_back]
        if dispatched.ended is not None:
            waits.append(asyncio.ensure_future(dispatched.ended))
        try:
            await self._wait_for_either(called_back, waits, dispatched)
        finally:
            if len(waits) > 1:
                waits[1].cancel()  # a watch that polls (a Ray job's status) stops with it

    async def _wait_for_either(
        self, called_back: asyncio.Future[None], waits: list[asyncio.Future[Any]],
        dispatched: Dispatched,
    ) -> None:  # fmt: skip
        timeout = getattr(self.dispatcher, "timeout", None)
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if called_back.done():
            return
        if len(waits) > 1 and waits[1].done():
            # The job ended. Its callback may still be on its way: give it a moment.
            grace = getattr(self.dispatcher, "callback_grace", DEFAULT_CALLBACK_GRACE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(called_back), grace)
                return
            raise JobFailed(
                f"job {dispatched.run_id} exited with status {waits[1].result()} "
                "without calling back"
            )
        raise JobFailed(f"job {dispatched.run_id} did not call back within {timeout:g}s")

    async def close(self) -> None:
        pass


async def _stop(dispatched: Dispatched) -> None:
    """Stop a cancelled attempt's job: a plain call (a signal), or one that is awaited (a
    request to the job's runner), bounded, so that a runner that does not answer cannot
    hold a cancel up."""
    stopping = dispatched.stop()
    if inspect.isawaitable(stopping):
        try:
            await asyncio.wait_for(stopping, STOP_TIMEOUT)
        except Exception as exc:
            log.warning(
                "a cancelled attempt's job could not be stopped",
                extra=fields(run_id=dispatched.run_id, error=f"{type(exc).__name__}: {exc}"),
            )
