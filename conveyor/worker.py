"""The worker daemon: claims tasks, runs their agents, reports how each attempt ended.

One asyncio loop runs a few cooperating loops:

- the exchange writes how attempts ended and claims as many new tasks as there are free
  slots, both in one transaction and one round trip. Whatever finished while the previous
  exchange was in flight goes into the next, so under load one commit ends and claims many
  tasks, and when idle an outcome is written, or a NOTIFY answered, the moment it happens;
- each claimed task runs its agent (async in the loop, plain functions in a thread pool);
- the renewer extends the leases of everything the worker holds, and stops the agents of
  tasks that were taken away (lost lease, cancelled);
- the listener turns NOTIFYs into wake-ups and cancellations;
- the sweeper (and, if configured, the pruner) does the maintenance.

`held` maps each task the worker holds in the database (claimed, and its outcome not yet
written) to its attempt number: it is what the renewer renews, and what the worker keeps
when it releases orphans after a lost connection.

Delivery is at least once: a task whose worker dies runs again after its lease expires.
A task is completed at most once: every write of an outcome is fenced by its attempt.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import math
import os
import socket
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from conveyor import executors, queue, tracing
from conveyor.app import AgentSpec, App
from conveyor.db.pool import TRANSIENT_ERRORS, Database
from conveyor.errors import DatabaseUnavailable, PermanentFailure, Throttled
from conveyor.executors import Attempt, Callback, CalledBack, Executor, JobFailed
from conveyor.executors.signing import attempt_secret
from conveyor.listener import Listener
from conveyor.llm.pricing import Pricer, parse_prices
from conveyor.log import fields
from conveyor.policy import backoff
from conveyor.queue import ClaimedTask, Outcome
from conveyor.sweeper import Pruner, Sweeper
from conveyor.task import Task

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 4000
# Agents that run for a few ms or less buffer more tasks than their concurrency (Worker.
# prefetch): for them the buffer, not the database, bounds the rate. The buffer never holds
# more than PREFETCH_HORIZON seconds of work (by the average run time), which bounds how
# long a task claimed later (an urgent one) waits behind it, nor more than PREFETCH_MAX
# tasks.
PREFETCH_HORIZON = 0.1
PREFETCH_MAX = 512


def make_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


class Worker:
    def __init__(
        self,
        app: App,
        *,
        concurrency: int = 16,
        prefetch: int | None = None,
        agents: list[str] | None = None,
        worker_id: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if prefetch is not None and prefetch < 0:
            raise ValueError("prefetch must be 0 or more")
        unknown = set(agents or ()) - set(app.agents)
        if unknown:
            raise ValueError(f"the app declares no agent {sorted(unknown)}")
        if not app.agents:
            raise ValueError("the app declares no agents; nothing to work on")
        self.app = app
        self.settings = app.settings
        self.concurrency = concurrency
        # Claimed tasks waiting for a free slot. They hide the exchange's round trip: when
        # an agent finishes, the next task starts at once instead of after a claim.
        # Unless set, the buffer follows the tasks' length (see prefetch below): as many as
        # the slots finish during two exchanges, at least `concurrency`. Agents that run
        # for more than a few ms keep prefetch = concurrency; only very short ones, whose
        # drain rate the buffer bounds, get more.
        self._prefetch_fixed = prefetch
        self._task_seconds: dict[str, float] = {}  # agent -> moving average of its run time
        self._exchange_seconds: float | None = None  # ... and of an exchange
        self._buffer: collections.deque[tuple[ClaimedTask, float]] = collections.deque()
        self.specs: dict[str, AgentSpec] = {
            name: spec for name, spec in app.agents.items() if not agents or name in agents
        }
        # Agents whose admission depends on time: declared token or request budgets, and
        # those the endpoint throttled (they learn a budget). See _poll_interval().
        self._timed: set[str] = {
            name for name, spec in self.specs.items() if spec.max_tpm or spec.max_rpm
        }
        self.id = worker_id or make_worker_id()
        self.held: dict[int, int] = {}
        self._running: dict[int, _Run] = {}  # by task id
        self._outcomes: list[Outcome] = []
        # Throttling not yet recorded in the database: agent -> end of its pause (monotonic).
        self._throttled_pending: dict[str, float] = {}
        self._outcome_ready = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._started = asyncio.Event()
        self._orphans_possible = False
        self._work_maybe = True  # until a claim comes back short, assume there is work
        self._claiming = 0  # slots promised to claims in flight
        self._progress = asyncio.Event()  # an exchange ended
        self._threads = ThreadPoolExecutor(concurrency, thread_name_prefix="conveyor-agent")
        self._db: Database | None = None
        self.executors: dict[str, Executor] = {
            name: _executor(spec, self._threads) for name, spec in self.specs.items()
        }
        # Attempts running, by task id: done when the database says one ended without us.
        self._ended_elsewhere: dict[int, asyncio.Future[None]] = {}
        self._callback_key: str | None = None
        self.sweeper: Sweeper | None = None
        self.pruner: Pruner | None = None
        self.pricer = Pricer(parse_prices(self.settings.llm_prices))
        # The rates the App registers (see AgentSpec.registration), sent with outcomes.
        self._compute_rates = {
            name: spec.registration(self.settings.compute_usd_per_hour).compute_usd_per_hour
            for name, spec in self.specs.items()
        }
        tracing.configure(self.settings)
        # Counters, for tests and logs.
        self.claimed_count = 0
        self.finished_count = 0
        self.restarts = 0  # loops that failed and were started again

    # -----------------------------------------------------------------------------------
    # Life cycle

    def stop(self, *, now: bool = False) -> None:
        """Begin a graceful shutdown: claim nothing more, hand back what was claimed but not
        started, let running agents finish until the shutdown timeout. `now=True` hands
        running tasks back too, without waiting."""
        self._stop.set()
        while self._buffer:
            claimed, _ = self._buffer.popleft()
            self._report(self._outcome(claimed, "released", error=RELEASED))
        if now:
            self._hand_back_running()

    def _hand_back_running(self) -> None:
        for run in list(self._running.values()):
            run.stop("shutdown")

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def wait_started(self) -> None:
        await self._started.wait()

    async def run(self) -> None:
        db = await self._connect()
        self._db = db
        self.sweeper = Sweeper(db, interval=self.settings.sweep_interval)
        listener = (
            Listener(db.url, self._on_notify, on_reconnect=self._wake.set)
            if self.settings.listen
            else None
        )
        sweeper = self.sweeper
        background = [
            self._supervised("renewer", lambda: self._renewer(db)),
            self._supervised("sweeper", lambda: sweeper.run(self._stop)),
        ]
        if listener is not None:
            background.append(self._supervised("listener", listener.run))
            await listener.wait_listening(timeout=5.0)
        if self.settings.prune_after:
            pruner = self.pruner = Pruner(db, older_than=self.settings.prune_after)
            background.append(self._supervised("pruner", lambda: pruner.run(self._stop)))
        log.info(
            "worker started",
            extra=fields(
                worker=self.id,
                concurrency=self.concurrency,
                agents=",".join(sorted(self.specs)),
                listen=listener is not None,
            ),
        )
        self._started.set()
        try:
            lanes = [
                self._supervised(f"exchange-{n}", lambda: self._exchange(db)) for n in range(2)
            ]
            await self._stop.wait()
            await self._drain()
            await asyncio.gather(*lanes)
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if listener is not None:
                await listener.close()
            await self._close_executors()
            self._threads.shutdown(wait=False, cancel_futures=True)
            log.info("worker stopped", extra=fields(worker=self.id, finished=self.finished_count))

    def _supervised(self, name: str, loop: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run one of the worker's loops as a task that does not die silently: a loop that
        raises (a bug, or an error nobody expected) is logged with its traceback and started
        again, so that no part of the worker is dead while the rest looks alive. The loops
        keep their state on the worker, so a restarted one carries on where it stopped. A
        loop that returns has finished on purpose (the exchange after the drain)."""

        async def supervise() -> None:
            while True:
                try:
                    await loop()
                    return
                except Exception:
                    self.restarts += 1
                    log.exception(
                        "worker loop failed, restarting it",
                        extra=fields(worker=self.id, loop=name, restart_in=LOOP_RESTART_DELAY),
                    )
                await asyncio.sleep(LOOP_RESTART_DELAY)

        return asyncio.create_task(supervise(), name=f"conveyor-{name}")

    async def _connect(self) -> Database:
        """The App's pool; a worker started before its database waits for it."""
        delay = 0.5
        while True:
            try:
                return await self.app.database()
            except DatabaseUnavailable as exc:
                if self._stop.is_set():
                    raise
                log.warning(
                    "waiting for the database", extra=fields(error=str(exc), retry_in=delay)
                )
                await _first(asyncio.sleep(delay), self._stop.wait())
                delay = min(10.0, delay * 2)

    async def _close_executors(self) -> None:
        for name, executor in self.executors.items():
            try:
                await executor.close()
            except Exception as exc:
                log.error(
                    "an executor failed to close",
                    exc_info=exc,
                    extra=fields(agent=name, error=_line(exc)),
                )

    async def _drain(self) -> None:
        """After stop(): wait for running agents until the deadline, then hand the rest
        back. The exchange writes every outcome before it returns."""
        if self._running:
            log.info(
                "draining",
                extra=fields(
                    worker=self.id,
                    running=len(self._running),
                    timeout=self.settings.shutdown_timeout,
                ),
            )
            await asyncio.wait(
                {run.task for run in self._running.values()},
                timeout=self.settings.shutdown_timeout,
            )
        self._hand_back_running()
        if self._running:
            await asyncio.wait({run.task for run in self._running.values()})

    # -----------------------------------------------------------------------------------
    # The exchange: outcomes out, new tasks in

    async def _exchange(self, db: Database) -> None:
        """One lane of the exchange; runs until stop() and every outcome is written.

        Two lanes run at once, on two connections, so that the worker prepares and runs the
        next exchange while the database commits the previous one: Python and PostgreSQL
        then work in parallel instead of taking turns.
        """
        names = sorted(self.specs)
        delay = 0.05
        while True:
            stopping = self._stop.is_set()
            if stopping and not self.held and not self._running and not self._outcomes:
                self._progress.set()  # let the other lane see it too
                return
            if self._wake.is_set():
                self._work_maybe = True  # a NOTIFY said there is new work
            free, want, limited_want = claim_sizes(
                capacity=0 if stopping else self.capacity,
                claiming=self._claiming,
                free_slots=self._free_slots(),
                work_maybe=self._work_maybe,
                releasing_orphans=self._orphans_possible,
            )
            if not self._outcomes and want <= 0:
                await self._idle(stopping, free)
                continue
            outcomes, self._outcomes = self._outcomes, []
            self._outcome_ready.clear()
            self._progress.clear()
            # An agent the endpoint just throttled claims nothing in this exchange: its
            # budget is learned and its pause set after it, before its next claim.
            self._keep_throttled(_earliest_retry(outcomes))
            throttled, self._throttled_pending = self._throttled_pending, {}
            self._timed.update(throttled)
            claim_names = [n for n in names if n not in throttled]
            if not claim_names:
                want = limited_want = 0
            if want > 0:
                # Cleared before the claim, so a NOTIFY that lands while it runs counts.
                self._wake.clear()
            self._claiming += want
            written = outcomes
            try:
                if want > 0 and self._orphans_possible:
                    await self._release_orphans(db)
                began = time.monotonic()
                async with db.connection() as conn:
                    finished, claimed = await queue.finish_and_claim(
                        conn,
                        outcomes,
                        worker_id=self.id,
                        agents=claim_names,
                        limit=want,
                        limited_limit=limited_want,
                    )
                    self._exchange_seconds = _average(
                        self._exchange_seconds, time.monotonic() - began
                    )
                    if throttled:
                        await self._report_throttled(conn, throttled)
                delay = 0.05
            except TRANSIENT_ERRORS as exc:
                # Outcomes are fenced, so writing them again is safe. Claims may have
                # committed unheard of: those tasks would sit in 'processing' under our
                # name until their lease ran out, so they are released before the next.
                self._outcomes[:0] = outcomes
                self._restore_throttled(throttled)
                self._orphans_possible = self._orphans_possible or want > 0
                log.warning(
                    "database unavailable, retrying",
                    extra=fields(
                        error=str(exc).strip() or type(exc).__name__, retry_in=round(delay, 2)
                    ),
                )
                await asyncio.sleep(delay)
                delay = min(5.0, delay * 2)
                continue
            except Exception as exc:
                # Not the database going away: it refused something in this batch (a value
                # it cannot store), or a bug. The transaction was rolled back, unless it
                # failed after its commit: then claims may have committed unheard of.
                self._orphans_possible = self._orphans_possible or want > 0
                self._restore_throttled(throttled)
                log.error(
                    "an exchange failed; writing its outcomes one at a time",
                    exc_info=exc,
                    extra=fields(worker=self.id, outcomes=len(outcomes), error=_line(exc)),
                )
                written, finished, refused = await self._finish_each(db, outcomes)
                claimed = []
                if not refused:
                    # Every outcome went through alone: the claim failed. Not in a loop.
                    await asyncio.sleep(delay)
                    delay = min(5.0, delay * 2)
            finally:
                self._claiming -= want
                self._progress.set()
            self._settle(written, finished)
            for claimed_task in claimed:
                self._start(claimed_task)
            if want > 0 and len(claimed) < want:
                self._work_maybe = False

    async def _idle(self, stopping: bool, free: int) -> None:
        """Wait for something to do: an outcome, a free slot when there is work, new work
        when there is a free slot, the other lane finishing, or the poll interval."""
        events = [self._outcome_ready, self._progress]
        if not stopping:
            if free <= 0:
                self._slot_free.clear()
            events += [self._stop, self._wake if free > 0 else self._slot_free]
        self._progress.clear()
        woken = await _first(
            *(e.wait() for e in events),
            within=None if stopping else self._poll_interval(),
        )
        # Whether an event woke us, not whether one is set now: the other lane may have
        # cleared it meanwhile, and taking that for the poll interval made two idle lanes
        # wake each other for ever (an idle worker claimed ~1,000 times a second).
        if not woken:
            self._work_maybe = True  # the poll interval passed: look again

    def _poll_interval(self) -> float:
        """How long an idle lane waits before it looks again, without a NOTIFY. Room under
        a token or request budget comes back with time, which nothing announces, and a
        learned budget is spread over twentieths of its window (conveyor_admit): agents
        with such a budget are looked at twice per twentieth, if that is more often than
        the poll interval (it is for windows under 40 poll intervals), and at most ten
        times a second."""
        if not self._timed:
            return self.settings.poll_interval
        window = min(self.specs[name].window_seconds for name in self._timed)
        return min(self.settings.poll_interval, max(0.1, window / 40))

    async def _finish_each(
        self, db: Database, outcomes: list[Outcome]
    ) -> tuple[list[Outcome], list[queue.FinishResult], list[Outcome]]:
        """Write outcomes one by one, after their batch failed for a reason other than the
        database going away, so that one the database refuses fails alone: its attempt
        fails instead, with the reason (PostgreSQL refuses a value queue.storable() does
        not foresee; an integer out of range, say). Returns the outcomes dealt with, what
        the database answered, and the ones it refused. Those not written because the
        database went away meanwhile go back to the queue of outcomes, for the next
        exchange."""
        written: list[Outcome] = []
        finished: list[queue.FinishResult] = []
        refused: list[Outcome] = []
        for n, outcome in enumerate(outcomes):
            try:
                finished += await self._finish_one(db, outcome)
            except TRANSIENT_ERRORS:
                self._outcomes[:0] = outcomes[n:]
                break
            except Exception as exc:
                refused.append(outcome)
                instead = _unstorable(outcome, exc)
                log.error(
                    "an outcome could not be written; its attempt fails instead",
                    extra=fields(
                        task_id=outcome.task_id,
                        attempt=outcome.attempt,
                        outcome=outcome.outcome,
                        error=_line(exc),
                    ),
                )
                try:
                    finished += await self._finish_one(db, instead)
                except TRANSIENT_ERRORS:
                    self._outcomes[:0] = [instead, *outcomes[n + 1 :]]
                    break
                except Exception as again:
                    # Nothing of this outcome can be written. The task is no longer
                    # renewed: the sweeper takes it back when its lease expires.
                    log.error(
                        "an attempt's end could not be written at all; its lease will expire",
                        exc_info=again,
                        extra=fields(task_id=outcome.task_id, attempt=outcome.attempt),
                    )
            written.append(outcome)
        return written, finished, refused

    async def _finish_one(self, db: Database, outcome: Outcome) -> list[queue.FinishResult]:
        async with db.connection() as conn:
            return await queue.finish(conn, [outcome])

    def _keep_throttled(self, retry_after: dict[str, float]) -> None:
        """Keep what a 429 taught until an exchange has recorded it: agent -> when its
        pause ends, on this process's monotonic clock, so that a report made later pauses
        the agent until the same moment, not for the whole Retry-After again."""
        now = time.monotonic()
        self._restore_throttled({agent: now + seconds for agent, seconds in retry_after.items()})

    def _restore_throttled(self, pending: dict[str, float]) -> None:
        for agent, until in pending.items():
            self._throttled_pending[agent] = min(self._throttled_pending.get(agent, until), until)

    async def _report_throttled(self, conn: Any, pending: dict[str, float]) -> None:
        """Teach the agents the endpoint throttled their budgets (`pending`: agent -> the
        end of its pause, from _keep_throttled). In its own transaction, after the
        exchange: taking agent rows in the exchange could deadlock with claims. If it
        cannot be recorded now, it is kept for the next exchange: the agent's next claims
        would otherwise run at the budget the endpoint just refused."""
        now = time.monotonic()
        retry_after = {agent: max(0.0, until - now) for agent, until in pending.items()}
        try:
            rows = await queue.report_throttled(conn, retry_after)
        except TRANSIENT_ERRORS as exc:
            self._restore_throttled(pending)
            log.warning(
                "could not record throttling, will retry",
                extra=fields(error=str(exc).strip(), agents=",".join(sorted(retry_after))),
            )
            return
        except Exception as exc:
            # Not the database going away: repeating it would fail again, at every exchange.
            log.error("could not record throttling", exc_info=exc, extra=fields(error=_line(exc)))
            return
        for row in rows:
            if row["shrunk"]:  # once per cooldown, not for every 429 of a burst
                log.warning(
                    "endpoint throttling: budget shrunk",
                    extra=fields(
                        agent=row["name"],
                        factor=round(row["throttle_factor"], 3),
                        learned_tpm=round(row["learned_tpm"]),
                        learned_concurrency=row["learned_concurrency"],
                        paused_until=row["paused_until"].isoformat(),
                    ),
                )

    def _settle(self, outcomes: list[Outcome], finished: list[queue.FinishResult]) -> None:
        for outcome in outcomes:
            if self.held.get(outcome.task_id) == outcome.attempt:
                del self.held[outcome.task_id]
        self.finished_count += len(outcomes)
        for r in finished:
            if not r.applied:
                log.warning(
                    "late outcome rejected: the attempt had already ended",
                    extra=fields(task_id=r.task_id, attempt=r.attempt),
                )

    async def _release_orphans(self, db: Database) -> None:
        async with db.connection() as conn:
            released = await queue.sweep(conn, orphans_of=self.id, keep=list(self.held))
        self._orphans_possible = False
        if released:
            log.warning(
                "released tasks claimed by a lost connection",
                extra=fields(worker=self.id, tasks=len(released)),
            )

    def _free_slots(self) -> int:
        """Slots free for a task that would start at once (not wait in the buffer)."""
        return max(0, self.concurrency - len(self._running) - len(self._buffer) - self._claiming)

    @property
    def prefetch(self) -> int:
        if self._prefetch_fixed is not None:
            return self._prefetch_fixed
        exchange = self._exchange_seconds
        if exchange is None or self._task_seconds.keys() < self.specs.keys():
            return self.concurrency  # an agent whose length is not known yet may be slow
        # The slowest agent decides: tasks of a slow one must not wait behind a buffer
        # sized for a quick one.
        task = max(max(self._task_seconds.values()), 1e-6)
        # Tasks the slots finish while two exchanges (the two lanes) are in flight: the
        # larger the batches, the less each task pays of an exchange's fixed cost (its
        # round trip, its commit, the statement-level triggers).
        wanted = math.ceil(self.concurrency * 2 * exchange / task)
        cap = min(PREFETCH_MAX, math.floor(self.concurrency * PREFETCH_HORIZON / task))
        return max(self.concurrency, min(wanted, cap))

    @property
    def capacity(self) -> int:
        """How many more tasks the worker would take: free slots plus free buffer room."""
        return self.concurrency + self.prefetch - len(self._running) - len(self._buffer)

    def _start(self, claimed: ClaimedTask) -> None:
        # The database gave us a new attempt at a task we still hold an older attempt of
        # (its lease was lost and the task came back to us): that older one is over.
        self._take_away(claimed.id, "taken")
        self.claimed_count += 1
        self.held[claimed.id] = claimed.attempt
        self._buffer.append((claimed, time.monotonic()))
        self._fill_slots()

    def _fill_slots(self) -> None:
        while self._buffer and len(self._running) < self.concurrency and not self.stopping:
            claimed, claimed_at = self._buffer.popleft()
            task = asyncio.create_task(
                self._run_agent(claimed, time.monotonic() - claimed_at),
                name=f"conveyor-task-{claimed.id}",
            )
            self._running[claimed.id] = _Run(claimed.attempt, task)

    def _outcome(self, claimed: ClaimedTask, kind: str, **values: Any) -> Outcome:
        values.setdefault("compute_usd_per_hour", self._compute_rates.get(claimed.agent))
        return Outcome(
            task_id=claimed.id,
            attempt=claimed.attempt,
            outcome=kind,
            agent=claimed.agent,
            **values,
        )

    # -----------------------------------------------------------------------------------
    # Running one attempt

    async def _run_agent(self, claimed: ClaimedTask, waited: float) -> None:
        spec = self.specs[claimed.agent]
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
        ended_elsewhere: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._ended_elsewhere[claimed.id] = ended_elsewhere
        attempt = Attempt(
            task=task,
            attempt_id=claimed.attempt_id,
            ended_elsewhere=ended_elsewhere,
            worker=self,
            compute_usd_per_hour=self._compute_rates.get(claimed.agent),
        )
        kind, result, error, retry_delay = "failed", None, None, None
        began = time.monotonic()
        try:
            try:
                ended = await self.executors[claimed.agent].run(attempt)
            finally:
                # The first attempt that spent tokens loads the price table, off the loop.
                if self.pricer.needs_loading(task.usage.by_model):
                    await asyncio.get_running_loop().run_in_executor(
                        self._threads, self.pricer.load
                    )
            if isinstance(ended, CalledBack):
                self._settled_elsewhere(claimed)
                return
            result = json.dumps(ended.value, allow_nan=False, default=_not_json)
            kind = "succeeded"
        except asyncio.CancelledError:
            run = self._running.get(claimed.id)
            reason = run.reason if run and run.attempt == claimed.attempt else None
            kind = "released" if reason == "shutdown" else "cancelled"
            error = RELEASED if kind == "released" else STOPPED
        except Throttled as exc:
            kind = "throttled"
            error = f"throttled: {exc}"
            retry_delay = exc.retry_after if exc.retry_after is not None else spec.backoff_base
        except PermanentFailure as exc:
            error = _describe(exc)
        except JobFailed as exc:
            error = str(exc)
            retry_delay = backoff(claimed.charged_attempts, spec.backoff_base, spec.backoff_max)
        except _NotJson as exc:
            error = f"the agent's return value is not JSON: {exc}"
            retry_delay = None  # the same code will return the same thing again
        except Exception as exc:
            error = _describe(exc)
            retry_delay = backoff(claimed.charged_attempts, spec.backoff_base, spec.backoff_max)
        finally:
            self._task_seconds[claimed.agent] = _average(
                self._task_seconds.get(claimed.agent), time.monotonic() - began
            )
            run = self._running.get(claimed.id)
            if run is not None and run.attempt == claimed.attempt:
                del self._running[claimed.id]
            if self._ended_elsewhere.get(claimed.id) is ended_elsewhere:
                del self._ended_elsewhere[claimed.id]
            self._slot_free.set()
        usage = task.usage
        self._report(
            self._outcome(
                claimed,
                kind,
                result=result,
                error=error,
                retry_delay=retry_delay,
                model=usage.model,
                input_tokens=usage.input_tokens if usage.calls else None,
                output_tokens=usage.output_tokens if usage.calls else None,
                started_after=waited,
                trace_id=task.trace_id,
                compute_usd_per_hour=attempt.compute_usd_per_hour,
                llm_cost_usd=self.pricer.attempt_cost(
                    {m: (i, o) for m, (i, o) in task.usage.by_model.items()}
                ),
            )
        )
        self._fill_slots()

    def _report(self, outcome: Outcome) -> None:
        self._outcomes.append(outcome)
        self._outcome_ready.set()

    # -----------------------------------------------------------------------------------
    # External jobs

    async def callback(self, attempt_id: int) -> Callback:
        """Where an external job of this attempt calls back, and with which secret."""
        assert self._db is not None
        if self._callback_key is None:
            async with self._db.connection() as conn:
                self._callback_key = await queue.callback_key(conn)
        return Callback(
            url=f"{self.settings.public_url.rstrip('/')}/api/callbacks/{attempt_id}",
            secret=attempt_secret(self._callback_key, attempt_id),
        )

    async def record_run_id(self, attempt_id: int, run_id: str) -> None:
        assert self._db is not None
        try:
            async with self._db.connection() as conn:
                await queue.set_run_id(conn, attempt_id, run_id)
        except TRANSIENT_ERRORS as exc:
            log.warning(
                "could not record a job's run id",
                extra=fields(attempt_id=attempt_id, run_id=run_id, error=str(exc)),
            )

    def _settled_elsewhere(self, claimed: ClaimedTask) -> None:
        """A callback ended the attempt: nothing left to write, only to forget."""
        if self.held.get(claimed.id) == claimed.attempt:
            del self.held[claimed.id]
        self.finished_count += 1
        self._progress.set()

    # -----------------------------------------------------------------------------------
    # Leases

    def renew_interval(self) -> float:
        shortest = min(spec.lease_seconds for spec in self.specs.values())
        return max(0.2, shortest / 4)

    async def renew_once(self, db: Database) -> None:
        held = dict(self.held)
        if not held:
            return
        async with db.connection() as conn:
            kept = await queue.renew_leases(conn, held)
        buffered = {claimed.id for claimed, _ in self._buffer}
        for task_id in held.keys() - kept:
            if self.held.get(task_id) != held[task_id] or not (
                task_id in self._running or task_id in buffered
            ):
                # Its outcome is written or on its way; if the task was taken from us
                # meanwhile, that outcome is fenced off and recorded as late.
                continue
            # Taken from us: the sweeper gave it away, or it was cancelled.
            log.warning("lease lost", extra=fields(task_id=task_id, attempt=held[task_id]))
            self._take_away(task_id, "taken")

    async def _renewer(self, db: Database) -> None:
        while True:
            await asyncio.sleep(self.renew_interval())
            try:
                await self.renew_once(db)
            except TRANSIENT_ERRORS as exc:
                log.warning("lease renewal failed", extra=fields(error=str(exc).strip()))
            except Exception as exc:
                # A renewal that fails for another reason must not end the renewals: the
                # leases of everything running would then expire under working agents.
                log.error("lease renewal failed", exc_info=exc, extra=fields(error=_line(exc)))

    # -----------------------------------------------------------------------------------
    # Notifications

    def _on_notify(self, event: dict[str, Any]) -> None:
        status = event.get("status")
        agent = event.get("agent")
        if status == "enqueued" and isinstance(agent, str) and agent in self.specs:
            self._wake.set()
        ids = event.get("ids", ())
        if not isinstance(ids, list):
            return  # anyone who may NOTIFY can send anything: not ours
        if status != "processing":
            # An external job's callback ended its attempt (the task moved on).
            for task_id in ids:
                called_back = self._ended_elsewhere.get(task_id)
                if called_back is not None and not called_back.done() and status != "cancelled":
                    called_back.set_result(None)
        if status == "cancelled":
            for task_id in ids:
                self._take_away(task_id, "cancelled")

    def _take_away(self, task_id: int, reason: str) -> None:
        """The task is no longer ours (cancelled, or its lease lost): stop its agent, or
        drop it from the buffer. The outcome that follows is fenced off as late."""
        run = self._running.get(task_id)
        if run is not None:
            run.stop(reason)
            return
        for claimed, _ in self._buffer:
            if claimed.id == task_id:
                self._buffer.remove((claimed, _))
                self._report(self._outcome(claimed, "cancelled", error=STOPPED))
                return


@dataclass
class _Run:
    """An agent running one attempt, and why it was stopped, if it was."""

    attempt: int
    task: asyncio.Task[None]
    reason: str | None = None

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.task.cancel()


LOOP_RESTART_DELAY = 1.0  # seconds before a failed loop runs again (not a busy loop)
RELEASED = "handed back by a worker shutting down"
STOPPED = "the agent was stopped: the task was cancelled or its lease lost"


class _NotJson(Exception):
    pass


def _executor(spec: AgentSpec, threads: ThreadPoolExecutor) -> Executor:
    """Where the attempts of this agent run: what app.external() was given, else the
    worker's loop (async def) or its threads (plain def)."""
    if spec.dispatcher is not None:
        return executors.as_executor(spec.dispatcher)
    assert spec.fn is not None
    if spec.is_async:
        return executors.AsyncExecutor(spec.fn)
    return executors.ThreadExecutor(spec.fn, threads)


def _not_json(value: Any) -> Any:
    raise _NotJson(f"{type(value).__name__} is not serializable")


def _describe(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc))
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS // 4] + "\n...\n" + text[-3 * MAX_ERROR_CHARS // 4 :]
    return f"{type(exc).__name__}: {exc}\n{text}".strip()


async def _first(*aws: Awaitable[Any], within: float | None = None) -> bool:
    """Wait until the first of `aws` finishes (or `within` seconds pass); cancel the rest.
    True if one finished, False if the time ran out."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        done, _ = await asyncio.wait(tasks, timeout=within, return_when=asyncio.FIRST_COMPLETED)
        return bool(done)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t


def claim_sizes(
    *, capacity: int, claiming: int, free_slots: int, work_maybe: bool, releasing_orphans: bool
) -> tuple[int, int, int]:
    """(free, want, limited_want): room for new tasks, how many to claim in this exchange,
    and how many of those may be of limited agents.

    `capacity` goes below zero when the adaptive prefetch shrinks under a full buffer; the
    room is then none, not negative: a negative claim would lower `claiming`, which the
    other lane reads, and let it claim more than there is room for.
    """
    free = max(0, capacity - claiming)
    want = free if work_maybe else 0
    if want and releasing_orphans and claiming:
        want = 0  # release orphans only when no other claim is in flight
    # Tasks of limited agents only for slots free now: waiting in the buffer, a task would
    # hold a share of its agent's limits without using it.
    return free, want, min(want, max(0, free_slots))


def _line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _unstorable(outcome: Outcome, exc: BaseException) -> Outcome:
    """The outcome that replaces one the database refused: the attempt failed, saying why.
    Only what cannot be at fault is kept. A failure keeps its retry; a result that cannot
    be stored would be returned again by the same code, so it is not retried."""
    return Outcome(
        task_id=outcome.task_id,
        attempt=outcome.attempt,
        outcome="failed",
        error=f"the attempt's outcome ({outcome.outcome}) could not be stored: {_line(exc)}",
        retry_delay=outcome.retry_delay if outcome.outcome == "failed" else None,
        started_after=outcome.started_after,
        compute_usd_per_hour=outcome.compute_usd_per_hour,
        agent=outcome.agent,
    )


def _earliest_retry(outcomes: list[Outcome]) -> dict[str, float]:
    """The agents among these outcomes that the endpoint throttled, each with the earliest
    Retry-After (seconds) it was given."""
    earliest: dict[str, float] = {}
    for o in outcomes:
        if o.outcome == "throttled" and o.agent:
            wait = o.retry_delay or 0.0
            earliest[o.agent] = min(earliest.get(o.agent, wait), wait)
    return earliest


def _average(average: float | None, value: float, weight: float = 0.05) -> float:
    """An exponential moving average (the first value starts it)."""
    return value if average is None else average + weight * (value - average)
