"""Running one claimed attempt through its agent's executor, to the outcome the exchange
writes. Also what the worker does for executors (conveyor.executors.WorkerServices): the
callback's address and secret, the run id."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from conveyor import executors, queue
from conveyor.app import AgentSpec
from conveyor.db.pool import TRANSIENT_ERRORS, Database
from conveyor.executors import Attempt, Callback, CalledBack, Executor
from conveyor.executors.signing import attempt_secret
from conveyor.llm.pricing import Pricer
from conveyor.log import fields
from conveyor.queue import AttemptOutcome, ClaimedTask, Outcome
from conveyor.settings import Settings
from conveyor.task import Task
from conveyor.worker import outcomes
from conveyor.worker.prefetch import Timings

log = logging.getLogger(__name__)

CHILDREN_TIMEOUT = 60.0  # seconds a plain def agent waits for its children's read


@dataclass
class Run:
    """An attempt running, and why it was stopped, if it was."""

    attempt: int
    task: asyncio.Task[None] | None = None
    reason: str | None = None  # "shutdown", "cancelled", "taken"

    def stop(self, reason: str) -> None:
        if self.reason is None and self.task is not None:
            self.reason = reason
            self.task.cancel()


def executor_for(spec: AgentSpec, threads: ThreadPoolExecutor) -> Executor:
    """Where the attempts of this agent run: what app.external() was given, else the
    worker's loop (async def) or its threads (plain def)."""
    if spec.dispatcher is not None:
        return executors.as_executor(spec.dispatcher)
    assert spec.fn is not None
    if spec.is_async:
        return executors.AsyncExecutor(spec.fn)
    return executors.ThreadExecutor(spec.fn, threads)


class Attempts:
    """Runs attempts for a worker and turns how each ended into its Outcome."""

    def __init__(
        self,
        specs: dict[str, AgentSpec],
        settings: Settings,
        threads: ThreadPoolExecutor,
        timings: Timings,
        pricer: Pricer,
    ) -> None:
        self.specs = specs
        self.public_url = settings.public_url
        self.threads = threads
        self.timings = timings
        self.pricer = pricer
        self.executors = {name: executor_for(spec, threads) for name, spec in specs.items()}
        # The rates the App registers (see AgentSpec.registration), sent with outcomes.
        self.compute_rates = {
            name: spec.registration(settings.compute_usd_per_hour).compute_usd_per_hour
            for name, spec in specs.items()
        }
        self.db: Database | None = None  # set when the worker has connected
        # Attempts running, by task id: done when the database says one ended without us.
        self._ended_elsewhere: dict[int, asyncio.Future[None]] = {}
        self._callback_key: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the worker's, once it runs
        # Every task's readers of its children (task.children()): bound once, here.
        self._children_readers = (self._children_of, self._children_of_sync)

    async def run(self, claimed: ClaimedTask, waited: float, run: Run) -> Outcome | None:
        """Run the attempt to its end; its outcome, or None if a callback wrote it."""
        spec = self.specs[claimed.agent]
        loop = self._loop = asyncio.get_running_loop()
        task = Task(
            id=claimed.id,
            agent=claimed.agent,
            payload=claimed.payload,
            attempt=claimed.attempt,
            max_attempts=claimed.max_attempts,
            priority=claimed.priority,
            created_at=claimed.created_at,
            tenant=claimed.tenant,
            labels=claimed.labels,
            estimated_tokens=claimed.estimated_tokens,
        )
        task.children_reader, task.children_reader_sync = self._children_readers
        ended_elsewhere: asyncio.Future[None] = loop.create_future()
        self._ended_elsewhere[claimed.id] = ended_elsewhere
        attempt = Attempt(
            task=task,
            attempt_id=claimed.attempt_id,
            claim_token=claimed.claim_token,
            ended_elsewhere=ended_elsewhere,
            worker=self,
            compute_usd_per_hour=self.compute_rates.get(claimed.agent),
        )
        result: str | None = None
        retry_delay: float | None = None
        began = time.monotonic()
        try:
            try:
                ended = await self.executors[claimed.agent].run(attempt)
            finally:
                if task.usage.by_model:  # no model reported, nothing to price
                    await self._load_prices(task)
            if isinstance(ended, CalledBack):
                return None
            if isinstance(ended.value, queue.Spawn):
                result = await self._spawn(claimed, ended.value)
                kind, error = AttemptOutcome.SPAWNED, None
            else:
                result = outcomes.result_json(ended.value)
                kind, error = AttemptOutcome.SUCCEEDED, None
        except asyncio.CancelledError:
            kind, error = outcomes.stopped(run.reason)
        except Exception as exc:
            kind, error, retry_delay = outcomes.failure(exc, spec, claimed.charged_attempts)
        finally:
            self.timings.ran(claimed.agent, time.monotonic() - began)
            if self._ended_elsewhere.get(claimed.id) is ended_elsewhere:
                del self._ended_elsewhere[claimed.id]
        usage = task.usage
        called = usage.calls > 0
        return Outcome(
            task_id=claimed.id,
            attempt=claimed.attempt,
            outcome=kind,
            agent=claimed.agent,
            result=result,
            error=error,
            retry_delay=retry_delay,
            model=usage.model,
            input_tokens=usage.input_tokens if called else None,
            output_tokens=usage.output_tokens if called else None,
            started_after=waited,
            trace_id=task.trace_id,
            llm_cost_usd=(
                self.pricer.attempt_cost({m: (i, o) for m, (i, o) in usage.by_model.items()})
                if usage.by_model
                else None  # what attempt_cost() says of no calls, without building a dict
            ),
            compute_usd_per_hour=attempt.compute_usd_per_hour,
            run_id=attempt.run_id,
            since_last_call=(
                None if usage.last_call is None else max(0.0, time.monotonic() - usage.last_call)
            ),
            claim_token=claimed.claim_token,
        )

    def outcome(self, claimed: ClaimedTask, kind: AttemptOutcome, **values: Any) -> Outcome:
        values.setdefault("compute_usd_per_hour", self.compute_rates.get(claimed.agent))
        return Outcome(
            task_id=claimed.id,
            attempt=claimed.attempt,
            outcome=kind,
            agent=claimed.agent,
            claim_token=claimed.claim_token,
            **values,
        )

    async def _spawn(self, claimed: ClaimedTask, spawn: queue.Spawn) -> str:
        """The spawn as the outcome's result, once the database has checked what only it
        knows (agents, depth, cycles): InvalidSpawn, a permanent failure, otherwise."""
        assert self.db is not None
        async with self.db.connection() as conn:
            await queue.check_spawn(conn, claimed.id, spawn)
        return queue.spawn_json(spawn)

    async def _children_of(self, task_id: int) -> list[queue.ChildResult]:
        """A task's children (task.children()), read only when its agent asks. Every task
        holds this same bound method, not a closure over itself: that was a reference cycle
        per task, which only the garbage collector frees."""
        assert self.db is not None
        async with self.db.connection() as conn:
            return await queue.children_of(conn, task_id)

    def _children_of_sync(self, task_id: int) -> list[queue.ChildResult]:
        """task.children_sync(), from a plain def agent's thread: the query runs on the
        worker's loop."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self._children_of(task_id), self._loop)
        return future.result(CHILDREN_TIMEOUT)

    async def _load_prices(self, task: Task) -> None:
        """The first attempt that spent tokens loads the price table, off the loop."""
        if self.pricer.needs_loading(task.usage.by_model):
            await asyncio.get_running_loop().run_in_executor(self.threads, self.pricer.load)

    def ended_elsewhere(self, task_id: int) -> None:
        """The database says the task's attempt ended without us (a callback)."""
        future = self._ended_elsewhere.get(task_id)
        if future is not None and not future.done():
            future.set_result(None)

    async def close(self) -> None:
        for name, executor in self.executors.items():
            try:
                await executor.close()
            except Exception as exc:
                log.error(
                    "an executor failed to close",
                    exc_info=exc,
                    extra=fields(agent=name, error=outcomes.line(exc)),
                )

    # -----------------------------------------------------------------------------------
    # What the worker does for executors (conveyor.executors.WorkerServices)

    async def callback(self, attempt_id: int, claim_token: str | None) -> Callback:
        """Where an external job of this attempt calls back, and with which secret."""
        assert self.db is not None
        if self._callback_key is None:
            async with self.db.connection() as conn:
                self._callback_key = await queue.callback_key(conn)
        return Callback(
            url=f"{self.public_url.rstrip('/')}/api/callbacks/{attempt_id}",
            secret=attempt_secret(self._callback_key, attempt_id, claim_token),
        )

    async def record_run_id(self, attempt_id: int, claim_token: str | None, run_id: str) -> None:
        assert self.db is not None
        try:
            async with self.db.connection() as conn:
                await queue.set_run_id(conn, attempt_id, run_id, claim_token)
        except TRANSIENT_ERRORS as exc:
            log.warning(
                "could not record a job's run id",
                extra=fields(attempt_id=attempt_id, run_id=run_id, error=str(exc)),
            )
