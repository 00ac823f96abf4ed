"""Maintenance that runs inside workers: the sweeper and the pruner.

The sweeper takes back tasks whose lease expired: their worker crashed, froze or lost the
database for longer than a lease. Every worker runs one; an advisory lock lets one sweep at
a time. The pruner deletes old finished tasks when CONVEYOR_PRUNE_AFTER is set.
Both have `run_once()` for tests and `run(stop)` for the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from conveyor import queue
from conveyor.db.pool import TRANSIENT_ERRORS, Database
from conveyor.log import fields
from conveyor.states import TaskStatus

log = logging.getLogger(__name__)


class Sweeper:
    def __init__(self, db: Database, *, interval: float = 2.0) -> None:
        self.db = db
        self.interval = interval

    async def run_once(self) -> list[tuple[int, TaskStatus]]:
        """Sweep now. Returns (task id, new status) of each task taken back; an empty list
        also when another worker's sweeper holds the lock."""
        async with self.db.connection() as conn:
            swept = await queue.sweep_expired(conn)
        if swept:
            failed = [task_id for task_id, status in swept if status == TaskStatus.FAILED]
            log.warning(
                "took back tasks whose lease expired",
                extra=fields(
                    tasks=len(swept),
                    failed=len(failed),
                    ids=",".join(str(t) for t, _ in swept[:20]),
                ),
            )
        return swept or []

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once()
            except TRANSIENT_ERRORS as exc:
                log.warning("sweep failed", extra=fields(error=str(exc).strip()))
            # Jitter keeps the sweepers of workers started together from lining up.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval * random.uniform(0.75, 1.25))


class Pruner:
    def __init__(self, db: Database, *, older_than: float, interval: float = 600.0) -> None:
        self.db = db
        self.older_than = older_than
        self.interval = interval

    async def run_once(self) -> int:
        from conveyor.documents.stores.prune import prune_documents

        async with self.db.connection() as conn:
            deleted = await queue.prune(conn, older_than=self.older_than)
        if deleted:
            log.info("pruned finished tasks", extra=fields(tasks=deleted))
        documents = await prune_documents(self.db)  # those no task refers to any more
        if documents:
            log.info("pruned documents", extra=fields(documents=documents))
        return deleted

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once()
            except TRANSIENT_ERRORS as exc:
                log.warning("prune failed", extra=fields(error=str(exc).strip()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval * random.uniform(0.75, 1.25))
