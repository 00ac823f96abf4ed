"""The vacuumer: VACUUM of the queue's hot tables once enough dead rows piled up.

A claim cannot be a HOT update (`status` is in the dequeue index's predicate), so every
claimed task leaves a dead entry at the head of `tasks_dequeue_idx`, which every later
claim steps over until a VACUUM removes it: 100,000 of them make a claim 1.2 times as
costly, 300,000 1.8 times (docs/benchmarks.md, "Conveyor's claim cost against queue
depth"). Autovacuum looks at a table once a minute at best, and a busy queue claims
hundreds of thousands of tasks in a minute; where autovacuum is off, nothing ever removes
them. So each worker looks at the dead-row count of `tasks` and `task_attempts` every two
seconds and vacuums a table whose count passed DEAD_ROWS; an advisory lock lets one worker
do it at a time, and a table autovacuum is working on is skipped (SKIP_LOCKED).

`run_once()` for tests, `run(stop)` for the worker.
"""

from __future__ import annotations

import asyncio
import logging

from conveyor.db.pool import Database
from conveyor.log import fields
from conveyor.periodic import run_every
from conveyor.sql import Queries

log = logging.getLogger(__name__)

Q = Queries("vacuum")

#: Dead rows in a hot table that make it worth a VACUUM: 10,000 dead entries did not show
#: in the claim's cost, 100,000 made it 1.2 times as costly; each VACUUM also scans the
#: table's indexes whole, so not much more often than that.
DEAD_ROWS = 50_000
#: Seconds between two looks at the counts (a look is one small query on statistics): at
#: 15,000 claims a second, 30,000 dead entries more before the next look.
INTERVAL = 2.0
#: A VACUUM of a large table may take longer than the pool's statement timeout.
VACUUM_TIMEOUT = 600.0

VACUUMS = {"tasks": Q.tasks_vacuum, "task_attempts": Q.task_attempts_vacuum}


class Vacuumer:
    def __init__(
        self, db: Database, *, dead_rows: int = DEAD_ROWS, interval: float = INTERVAL
    ) -> None:
        self.db = db
        self.dead_rows = dead_rows
        self.interval = interval
        self.vacuums = 0  # tables this worker vacuumed (for tests and logs)

    async def run_once(self) -> list[str]:
        """Vacuum the hot tables past the threshold now; returns the ones vacuumed (none
        also when another worker holds the lock)."""
        async with self.db.connection() as conn:
            cur = await conn.execute(Q.hot_tables_dead_rows)
            rows = await cur.fetchall()
        due = [r["table_name"] for r in rows if r["dead_rows"] >= self.dead_rows]
        if not due:
            return []
        async with self.db.connection(statement_timeout=VACUUM_TIMEOUT) as conn:
            cur = await conn.execute(Q.vacuumer_lock)
            row = await cur.fetchone()
            if row is None or not row["locked"]:
                return []
            try:
                for table in due:
                    await conn.execute(VACUUMS[table], prepare=False)
            finally:
                await conn.execute(Q.vacuumer_unlock)
        self.vacuums += len(due)
        log.info("vacuumed the queue's hot tables", extra=fields(tables=",".join(due)))
        return due

    async def run(self, stop: asyncio.Event) -> None:
        await run_every(self.interval, stop, self.run_once, what="vacuum")
