"""Maintenance that runs inside workers: the sweeper and the pruner.

The sweeper takes back tasks whose lease expired: their worker crashed, froze or lost the
database for longer than a lease. Every worker runs one; an advisory lock lets one sweep at
a time. The pruner deletes old finished tasks when CONVEYOR_PRUNE_AFTER is set.
Both have `run_once()` for tests and `run(stop)` for the worker.
"""

from __future__ import annotations

import asyncio
import logging

from conveyor import queue
from conveyor.db.pool import Database
from conveyor.log import fields
from conveyor.periodic import run_every
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
        await run_every(self.interval, stop, self.run_once, what="sweep")


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
        await run_every(self.interval, stop, self.run_once, what="prune")
