"""The exchange: outcomes out, new tasks in, in one transaction and one round trip.

Whatever finished while the previous exchange was in flight goes into the next, so under
load one commit ends and claims many tasks, and when idle an outcome is written, or a
NOTIFY answered, the moment it happens. Two lanes run at once, on two connections, so that
the worker prepares and runs the next exchange while the database commits the previous
one: Python and PostgreSQL then work in parallel instead of taking turns.

Errors are isolated to what caused them: the database going away keeps the outcomes for
the next exchange (they are fenced, so writing one twice is safe) and releases the claims
that may have committed unheard of; a batch the database refuses is written one outcome
at a time, and the one it refuses fails its attempt instead, saying why.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from typing import Any

from conveyor import queue
from conveyor.db.pool import TRANSIENT_ERRORS, Database
from conveyor.log import fields
from conveyor.queue import AttemptOutcome, Outcome
from conveyor.worker.outbox import Outbox
from conveyor.worker.outcomes import line, unstorable
from conveyor.worker.prefetch import Timings
from conveyor.worker.signals import Signal, first_set
from conveyor.worker.slots import Slots

log = logging.getLogger(__name__)


class Exchange:
    def __init__(
        self,
        *,
        worker_id: str,
        slots: Slots,
        outbox: Outbox,
        timings: Timings,
        prefetch: Callable[[], int],
        windows: dict[str, float],
        timed: set[str],
        poll_seconds: float,
        stop: Signal,
        wake: Signal,
    ) -> None:
        self.worker_id = worker_id
        self.slots = slots
        self.outbox = outbox
        self.timings = timings
        self.prefetch = prefetch  # the buffer's size now (conveyor.worker.prefetch)
        self.windows = windows  # agent -> the window of its budgets, in seconds
        # Agents whose admission depends on time: declared token or request budgets, and
        # those the endpoint throttled (they learn a budget). See poll_interval().
        self.timed = timed
        self.poll_seconds = poll_seconds
        self.stop = stop
        self.wake = wake  # a NOTIFY said there may be new work
        self.work_maybe = True  # until a claim comes back short, assume there is work
        self.claiming = 0  # slots promised to claims in flight
        self.orphans_possible = False  # claims may have committed unheard of
        # Throttling not yet recorded in the database: agent -> end of its pause (monotonic).
        self.throttled_pending: dict[str, float] = {}
        self.recording: collections.Counter[str] = collections.Counter()  # ... by a lane now
        self.written_count = 0
        self.idle_claims = 0  # claims made on the LISTEN connection (claim_idle)

    async def lane(self, db: Database) -> None:
        """One lane of the exchange; runs until stop() and every outcome is written.

        Two lanes run at once, on two connections, so that the worker prepares and runs the
        next exchange while the database commits the previous one: Python and PostgreSQL
        then work in parallel instead of taking turns.
        """
        names = sorted(self.windows)
        delay = 0.05
        while True:
            stopping = self.stop.is_set()
            slots = self.slots
            if (
                stopping
                and not self.claiming  # (claim_idle's, on the LISTEN connection)
                and not slots.held
                and not slots.running
                and not self.outbox.outcomes
            ):
                self.outbox.progress.set()  # let the other lane see it too
                return
            if self.wake.is_set():
                self.work_maybe = True  # a NOTIFY said there is new work
            if self.outbox.outcomes:
                # An outcome frees a slot, and may free room under its agent's limits (a
                # concurrency, a budget), neither of which a NOTIFY announces; and a claim
                # of limited agents' tasks, held to the free slots (claim_sizes), comes back
                # short with more of them waiting. So the exchange that writes an outcome
                # claims too, in the same round trip (finish_and_claim), and a short claim
                # says again whether there is more.
                self.work_maybe = True
            free, want, limited_want = claim_sizes(
                capacity=0 if stopping else self.slots.capacity(self.prefetch()),
                claiming=self.claiming,
                free_slots=self.slots.free(self.claiming),
                work_maybe=self.work_maybe,
                releasing_orphans=self.orphans_possible,
            )
            # The other lane records what a 429 taught every agent (see below): no claim
            # before it is done, and no wake-up until then but its exchange's end.
            blocked = want > 0 and all(self.recording[n] for n in names)
            if blocked:
                want = limited_want = 0
            if not self.outbox.outcomes and want <= 0:
                await self._idle(stopping, 0 if blocked else free)
                continue
            outcomes = self.outbox.take()
            self.outbox.progress.clear()
            # An agent the endpoint just throttled claims nothing in this exchange: its
            # budget is learned and its pause set after it, before its next claim.
            self._keep_throttled(earliest_retry(outcomes))
            throttled, self.throttled_pending = self.throttled_pending, {}
            self.timed.update(throttled)
            # Nor while the other lane records its lesson: the lesson is in neither
            # throttled_pending nor the database until that lane is done.
            self.recording.update(throttled.keys())
            claim_names = [n for n in names if not self.recording[n]]
            if not claim_names:
                want = limited_want = 0
            if want > 0:
                # Cleared before the claim, so a NOTIFY that lands while it runs counts.
                self.wake.clear()
            self.claiming += want
            written = outcomes
            try:
                if want > 0 and self.orphans_possible:
                    await self._release_orphans(db)
                began = time.monotonic()
                async with db.connection() as conn:
                    finished, claimed = await queue.finish_and_claim(
                        conn,
                        outcomes,
                        worker_id=self.worker_id,
                        agents=claim_names,
                        limit=want,
                        limited_limit=limited_want,
                    )
                    self.timings.exchanged(time.monotonic() - began)
                    if throttled:
                        await self._report_throttled(conn, throttled)
                delay = 0.05
            except TRANSIENT_ERRORS as exc:
                # Outcomes are fenced, so writing them again is safe. Claims may have
                # committed unheard of: those tasks would sit in 'processing' under our
                # name until their lease ran out, so they are released before the next.
                self.outbox.put_back(outcomes)
                self._restore_throttled(throttled)
                self.orphans_possible = self.orphans_possible or want > 0
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
                self.orphans_possible = self.orphans_possible or want > 0
                self._restore_throttled(throttled)
                log.error(
                    "an exchange failed; writing its outcomes one at a time",
                    exc_info=exc,
                    extra=fields(worker=self.worker_id, outcomes=len(outcomes), error=line(exc)),
                )
                written, finished, refused = await self._finish_each(db, outcomes)
                claimed = []
                if not refused:
                    # Every outcome went through alone: the claim failed. Not in a loop.
                    await asyncio.sleep(delay)
                    delay = min(5.0, delay * 2)
            finally:
                self.recording.subtract(throttled.keys())
                self.claiming -= want
                self.outbox.progress.set()
            self._settle(written, finished)
            self._start(claimed)
            if want > 0 and len(claimed) < want:
                self.work_maybe = False

    async def claim_idle(self, conn: Any, answer_timeout: float) -> bool:
        """The claim of an idle worker that a NOTIFY woke, on `conn`, the LISTEN connection
        that heard it (Listener.after_events); False, with nothing done, unless the
        worker is idle and at rest: no outcome to write, no claim in flight, no throttling
        to record, no orphans to release, not stopping. Then the lanes do it, as for any
        wake-up.

        Why there: the server process of that connection has just sent the NOTIFY, so it
        is awake, while a pooled connection's has slept since its last use, and on this
        machine a process that slept ~15 ms takes ~0.7 ms longer to answer (a claim's
        start 0.25 ms after a claim just before, 0.95 ms after 15 ms idle). pgqueuer
        claims on the connection that listens, too. The claim is the lanes' claim_alone,
        bounded like the pool's statements (the connection's statement_timeout and
        `answer_timeout` here); a failure leaves what a lane's does: outcomes none,
        claims possibly committed unheard of (released before the next claim), and the
        lanes woken to try again.
        """
        if (
            self.stop.is_set()
            or self.outbox.outcomes
            or self.claiming
            or self.throttled_pending
            or self.orphans_possible
            or any(self.recording.values())
        ):
            return False
        names = sorted(self.windows)
        _, want, limited_want = claim_sizes(
            capacity=self.slots.capacity(self.prefetch()),
            claiming=0,
            free_slots=self.slots.free(0),
            work_maybe=True,
            releasing_orphans=False,
        )
        if want <= 0:
            return False
        self.wake.clear()  # this is the claim it asked for
        self.work_maybe = True
        self.claiming += want
        claimed: list[queue.ClaimedTask] = []
        try:
            began = time.monotonic()
            async with asyncio.timeout(answer_timeout):
                claimed = await queue.claim_alone(
                    conn,
                    worker_id=self.worker_id,
                    agents=names,
                    limit=want,
                    limited_limit=limited_want,
                )
            self.timings.exchanged(time.monotonic() - began)
            self.idle_claims += 1
        except Exception as exc:
            self.orphans_possible = True
            self.wake.set()
            if isinstance(exc, TimeoutError):
                conn.pgconn.finish()  # mid-exchange: the listener reconnects
            log.warning(
                "an idle claim on the LISTEN connection failed; the lanes claim instead",
                extra=fields(worker=self.worker_id, error=line(exc)),
            )
        finally:
            self.claiming -= want
            self.outbox.progress.set()
        self._start(claimed)
        if len(claimed) < want:
            self.work_maybe = False
        return True

    def _start(self, claimed: list[queue.ClaimedTask]) -> None:
        for claimed_task in claimed:
            self.slots.start(claimed_task)
        if claimed and self.stop.is_set():
            # A claim that came back after stop(): stop() handed back what was buffered
            # then, and these would wait in the buffer for a slot that never runs them.
            self.slots.release_buffered()

    async def _idle(self, stopping: bool, free: int) -> None:
        """Wait for something to do: an outcome, a free slot when there is work, new work
        when there is a free slot, the other lane finishing, or the poll interval."""
        events = [self.outbox.ready, self.outbox.progress]
        if not stopping:
            if free <= 0:
                self.slots.slot_free.clear()
            events += [self.stop, self.wake if free > 0 else self.slots.slot_free]
        self.outbox.progress.clear()
        woken = await first_set(events, within=None if stopping else self.poll_interval())
        # Whether an event woke us, not whether one is set now: the other lane may have
        # cleared it meanwhile, and taking that for the poll interval made two idle lanes
        # wake each other for ever (an idle worker claimed ~1,000 times a second).
        if not woken:
            self.work_maybe = True  # the poll interval passed: look again

    def poll_interval(self) -> float:
        """How long an idle lane waits before it looks again, without a NOTIFY. Room under
        a token or request budget comes back with time, which nothing announces, and a
        learned budget is spread over twentieths of its window (conveyor_admit): agents
        with such a budget are looked at twice per twentieth, if that is more often than
        the poll interval (it is for windows under 40 poll intervals), and at most ten
        times a second."""
        if not self.timed:
            return self.poll_seconds
        window = min(self.windows[name] for name in self.timed)
        return min(self.poll_seconds, max(0.1, window / 40))

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
                self.outbox.put_back(outcomes[n:])
                break
            except Exception as exc:
                refused.append(outcome)
                instead = unstorable(outcome, exc)
                log.error(
                    "an outcome could not be written; its attempt fails instead",
                    extra=fields(
                        task_id=outcome.task_id,
                        attempt=outcome.attempt,
                        outcome=outcome.outcome,
                        error=line(exc),
                    ),
                )
                try:
                    finished += await self._finish_one(db, instead)
                except TRANSIENT_ERRORS:
                    self.outbox.put_back([instead, *outcomes[n + 1 :]])
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
            self.throttled_pending[agent] = min(self.throttled_pending.get(agent, until), until)

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
            log.error("could not record throttling", exc_info=exc, extra=fields(error=line(exc)))
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
            self.slots.let_go(outcome.task_id, outcome.claim)
        self.written_count += len(outcomes)
        for r in finished:
            if not r.applied:
                log.warning(
                    "late outcome rejected: its attempt had ended, or a crash undid its claim",
                    extra=fields(task_id=r.task_id, attempt=r.attempt),
                )

    async def _release_orphans(self, db: Database) -> None:
        async with db.connection() as conn:
            released = await queue.sweep(
                conn,
                orphans_of=self.worker_id,
                keep=[c.token for c in self.slots.held.values() if c.token is not None],
            )
        self.orphans_possible = False
        if released:
            log.warning(
                "released tasks claimed by a lost connection",
                extra=fields(worker=self.worker_id, tasks=len(released)),
            )


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


def earliest_retry(outcomes: list[Outcome]) -> dict[str, float]:
    """The agents among these outcomes that the endpoint throttled, each with the earliest
    Retry-After (seconds) it was given."""
    earliest: dict[str, float] = {}
    for o in outcomes:
        if o.outcome == AttemptOutcome.THROTTLED and o.agent:
            wait = o.retry_delay or 0.0
            earliest[o.agent] = min(earliest.get(o.agent, wait), wait)
    return earliest
