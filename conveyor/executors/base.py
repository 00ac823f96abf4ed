"""The executor protocol: how the worker has one attempt run, wherever it runs.

The worker owns everything about an attempt that the database must know: it claimed the
task, it keeps the lease renewed while the attempt runs, and it writes how the attempt
ended through the exchange, fenced by the attempt. An executor owns only the running:

    ended = await executor.run(attempt)

- `run` starts the attempt and returns when it is over. The worker runs it as an asyncio
  task, so it must not block the event loop: wait on a future, a process, a remote
  reference (a thread pool for blocking calls).
- Cancelling that task stops the attempt (the task was cancelled, its lease was lost, or
  the worker shuts down and hands it back): `run` then stops the work it started (kills
  the process, cancels the remote task) and lets `asyncio.CancelledError` propagate.
- The attempt's run id (a pid, a remote job's id) is recorded with `await
  attempt.started(run_id)` while it runs; one known only at the end (the node a remote
  task ran on) is set as `attempt.run_id` and written with the outcome, without a round
  trip of its own (a run id is written once: the first wins); model usage is reported
  on `attempt.task` (`report_usage`), as an agent function does; an executor whose
  compute is priced otherwise than by the agent's declared rate sets
  `attempt.compute_usd_per_hour` before it returns.
- How it ended is the return value or the exception:
    `Succeeded(value)`   the result, stored as the task's result (it must be JSON);
    `CalledBack()`       the job ended the attempt itself, by its signed callback: the
                         worker has nothing to write, it only lets go of the task;
    `Throttled`          the model endpoint refused (retried, not counted as a failure);
    `PermanentFailure`   failed for good, whatever attempts are left;
    `JobFailed(reason)`  failed with this reason (retried with backoff);
    any other exception  failed with its traceback (retried with backoff).
- `close()` is called once when the worker stops, for what the executor opened (a
  cluster connection); most have nothing to close.

The worker turns all of this into the attempt's outcome in one place
(`conveyor.worker.outcomes`): executors never write to the database themselves.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from conveyor.task import Task


@dataclass(frozen=True)
class Succeeded:
    """The attempt returned `value` (any JSON value, None included)."""

    value: Any


@dataclass(frozen=True)
class CalledBack:
    """The attempt was ended by its job's signed callback; nothing is left to write."""


Ended = Succeeded | CalledBack


class JobFailed(Exception):
    """The attempt failed for the reason given (a job that ended, failed to start or timed
    out without calling back; a remote task that raised): the reason becomes the error,
    without a Python traceback, and the attempt is retried with backoff."""


@dataclass(frozen=True)
class Callback:
    """Where and how an external job reports the end of its attempt."""

    url: str  # POST /api/callbacks/{attempt_id} on the web app
    secret: str  # this attempt's HMAC key (conveyor.executors.signing)


class WorkerServices(Protocol):
    """What the worker does for an attempt on an executor's behalf (it implements this)."""

    async def record_run_id(
        self, attempt_id: int, claim_token: str | None, run_id: str
    ) -> None: ...

    async def callback(self, attempt_id: int, claim_token: str | None) -> Callback: ...


@dataclass
class Attempt:
    """One attempt at one task, as handed to an executor."""

    task: Task  # what an agent function receives: payload, ids, report_usage()
    attempt_id: int  # task_attempts.id: the callback's address, the fence of its outcome
    # The claim's token (tasks.claim_token): with the attempt id, what names this claim in
    # the callback's secret and the run id's record (an attempt id may be drawn again after
    # a crash undid the claim).
    claim_token: str | None
    # Done when the database says the attempt ended without this worker (a NOTIFY that the
    # task moved on): the signal a callback job waits for.
    ended_elsewhere: asyncio.Future[None]
    worker: WorkerServices = field(repr=False)
    # The compute rate the attempt is priced at (the agent's, or the settings' default);
    # an executor that knows better (resources x rate) sets it before it returns.
    compute_usd_per_hour: float | None = None
    run_id: str | None = None

    async def started(self, run_id: str) -> None:
        """Record where the attempt runs (a pid, a remote job's id): shown with the
        attempt, and what an operator looks for on the machine that runs it. If the
        database is unavailable it is logged, not raised: the attempt goes on."""
        self.run_id = run_id
        await self.worker.record_run_id(self.attempt_id, self.claim_token, run_id)

    async def callback(self) -> Callback:
        """The URL and secret an external job calls back with."""
        return await self.worker.callback(self.attempt_id, self.claim_token)


@runtime_checkable
class Executor(Protocol):
    """Runs attempts of an agent; see the module's documentation for the contract."""

    async def run(self, attempt: Attempt) -> Ended: ...

    async def close(self) -> None: ...
