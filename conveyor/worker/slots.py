"""What a worker holds and runs: claimed tasks waiting in the buffer, attempts running in
its slots, and `held`, every task the worker holds in the database (claimed, its outcome
not yet written) with its claim (attempt number and claim token) — what the lease keeper
renews, and what the worker keeps when it releases orphans after a lost connection."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable

from conveyor.queue import AttemptOutcome, Claim, ClaimedTask
from conveyor.worker.attempts import Attempts, Run
from conveyor.worker.outbox import Outbox
from conveyor.worker.outcomes import RELEASED, STOPPED
from conveyor.worker.signals import Signal


class Slots:
    def __init__(
        self,
        concurrency: int,
        attempts: Attempts,
        outbox: Outbox,
        *,
        stopping: Callable[[], bool],
    ) -> None:
        self.concurrency = concurrency
        self.attempts = attempts
        self.outbox = outbox
        self._stopping = stopping
        self.held: dict[int, Claim] = {}  # task id -> claim
        self.buffer: collections.deque[tuple[ClaimedTask, float]] = collections.deque()
        self.running: dict[int, Run] = {}  # by task id
        self.slot_free = Signal()
        self.claimed_count = 0
        self.settled_count = 0  # attempts a callback ended (nothing for the exchange to write)

    def free(self, claiming: int) -> int:
        """Slots free for a task that would start at once (not wait in the buffer), when
        `claiming` are promised to claims in flight."""
        return max(0, self.concurrency - len(self.running) - len(self.buffer) - claiming)

    def capacity(self, prefetch: int) -> int:
        """How many more tasks the worker would take: free slots plus free buffer room."""
        return self.concurrency + prefetch - len(self.running) - len(self.buffer)

    def buffered(self) -> set[int]:
        return {claimed.id for claimed, _ in self.buffer}

    def start(self, claimed: ClaimedTask) -> None:
        """A task the exchange claimed: hold it, and run it when a slot is free."""
        # The database gave us a new attempt at a task we still hold an older attempt of
        # (its lease was lost and the task came back to us): that older one is over.
        # Looked up in `held` first: take_away() walks the buffer, and doing that for
        # every task of a claim of hundreds made starting a claim's tasks quadratic.
        if claimed.id in self.held:
            self.take_away(claimed.id, "taken")
        self.claimed_count += 1
        self.held[claimed.id] = claimed.claim
        self.buffer.append((claimed, time.monotonic()))
        self.fill()

    def fill(self) -> None:
        while self.buffer and len(self.running) < self.concurrency and not self._stopping():
            claimed, claimed_at = self.buffer.popleft()
            run = Run(claimed.attempt)
            run.task = asyncio.create_task(
                self._run(claimed, time.monotonic() - claimed_at, run),
                name=f"conveyor-task-{claimed.id}",
            )
            self.running[claimed.id] = run

    async def _run(self, claimed: ClaimedTask, waited: float, run: Run) -> None:
        try:
            outcome = await self.attempts.run(claimed, waited, run)
        finally:
            if self.running.get(claimed.id) is run:
                del self.running[claimed.id]
            self.slot_free.set()
        if outcome is None:
            self._settled_elsewhere(claimed)
        else:
            self.outbox.report(outcome)
        self.fill()

    def _settled_elsewhere(self, claimed: ClaimedTask) -> None:
        """A callback ended the attempt: nothing left to write, only to forget."""
        self.let_go(claimed.id, claimed.claim)
        self.settled_count += 1
        self.outbox.progress.set()  # a lane waiting to drain may be done

    def let_go(self, task_id: int, claim: Claim) -> None:
        """The attempt's end is in the database: the task is no longer held (unless a
        newer claim of it is)."""
        if self.held.get(task_id) == claim:
            del self.held[task_id]

    def take_away(self, task_id: int, reason: str) -> None:
        """The task is no longer ours (cancelled, or its lease lost): stop its agent, or
        drop it from the buffer. The outcome that follows is fenced off as late."""
        run = self.running.get(task_id)
        if run is not None:
            run.stop(reason)
            return
        for entry in self.buffer:
            claimed, _ = entry
            if claimed.id == task_id:
                self.buffer.remove(entry)
                self.outbox.report(
                    self.attempts.outcome(claimed, AttemptOutcome.CANCELLED, error=STOPPED)
                )
                return

    def release_buffered(self) -> None:
        """Hand back what was claimed but not started (a shutdown)."""
        while self.buffer:
            claimed, _ = self.buffer.popleft()
            self.outbox.report(
                self.attempts.outcome(claimed, AttemptOutcome.RELEASED, error=RELEASED)
            )

    def hand_back_running(self) -> None:
        for run in list(self.running.values()):
            run.stop("shutdown")

    def running_tasks(self) -> set[asyncio.Task[None]]:
        return {run.task for run in self.running.values() if run.task is not None}
