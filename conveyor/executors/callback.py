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
from typing import Any

from conveyor.executors.base import Attempt, CalledBack, JobFailed
from conveyor.executors.jobs import Dispatched, Dispatcher, Job

DEFAULT_CALLBACK_GRACE = 5.0  # seconds a callback may trail the job's end


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
                dispatched.stop()
            raise

    async def _wait(self, called_back: asyncio.Future[None], dispatched: Dispatched) -> None:
        """Return once the callback ended the attempt; raise JobFailed if the job ended
        without one (after a grace), or the dispatcher's timeout passed."""
        waits: list[asyncio.Future[Any]] = [called_back]
        if dispatched.ended is not None:
            waits.append(asyncio.ensure_future(dispatched.ended))
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
