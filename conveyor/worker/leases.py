"""The lease keeper: renews the lease of every task the worker holds, and stops the
attempts of tasks that were taken away meanwhile (the sweeper gave them away after a
lost lease, or they were cancelled while no NOTIFY reached us)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from conveyor import queue
from conveyor.db.pool import TRANSIENT_ERRORS, Database
from conveyor.log import fields
from conveyor.worker.outcomes import line
from conveyor.worker.slots import Slots

log = logging.getLogger(__name__)


class LeaseKeeper:
    def __init__(self, slots: Slots, lease_seconds: Iterable[float]) -> None:
        self.slots = slots
        # Four renewals per shortest lease: one lost to a slow database does not lose it.
        self.interval = max(0.2, min(lease_seconds) / 4)

    async def renew_once(self, db: Database) -> None:
        held = dict(self.slots.held)
        if not held:
            return
        async with db.connection() as conn:
            kept = await queue.renew_leases(conn, held)
        running, buffered = self.slots.running, self.slots.buffered()
        for task_id in held.keys() - kept:
            if self.slots.held.get(task_id) != held[task_id] or not (
                task_id in running or task_id in buffered
            ):
                # Its outcome is written or on its way; if the task was taken from us
                # meanwhile, that outcome is fenced off and recorded as late.
                continue
            # Taken from us: the sweeper gave it away, or it was cancelled.
            log.warning("lease lost", extra=fields(task_id=task_id, attempt=held[task_id].attempt))
            self.slots.take_away(task_id, "taken")

    async def run(self, db: Database) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.renew_once(db)
            except TRANSIENT_ERRORS as exc:
                log.warning("lease renewal failed", extra=fields(error=str(exc).strip()))
            except Exception as exc:
                # A renewal that fails for another reason must not end the renewals: the
                # leases of everything running would then expire under working agents.
                log.error("lease renewal failed", exc_info=exc, extra=fields(error=line(exc)))
