"""The rollup folder: moves the deltas that finishing statements append into the rollups.

The statement that finishes tasks does not upsert the rollups (a shared row locked until
it commits, three tables at two grains): it appends its summed changes to insert-only
delta tables (migration 0014). Each worker folds them in every INTERVAL seconds with one
statement, `conveyor_rollup_fold()`, one worker at a time (an advisory lock the others do
not wait for). Readers sum the rollups and the unfolded deltas, so the dashboard is exact
whether or not a fold ran; folding often keeps what they sum small. After folding
DEAD_ROWS rows the folder vacuums the delta tables, so that they do not grow where
autovacuum is off.

`run_once()` for tests, `run(stop)` for the worker.
"""

from __future__ import annotations

import asyncio
import logging

from conveyor.db.pool import Database
from conveyor.periodic import run_every
from conveyor.sql import Queries

log = logging.getLogger(__name__)

Q = Queries("rollup_fold")

#: Seconds between two folds of one worker. A fold with nothing to do is one function call;
#: a 2 x 16 drain at 8,000 tasks/s appends a few hundred delta rows a second (one per key
#: of each finishing statement). Measured (benchmarks/rollup_deltas_read.py, in
#: docs/benchmarks.md): 1,000 one-task finishes pending add nothing measurable to the
#: dashboard's summary read, 10,000 add about 7 ms.
INTERVAL = 1.0
#: Delta rows folded (so deleted) by this worker between two VACUUMs of the delta tables.
DEAD_ROWS = 20_000


class RollupFolder:
    def __init__(
        self, db: Database, *, interval: float = INTERVAL, dead_rows: int = DEAD_ROWS
    ) -> None:
        self.db = db
        self.interval = interval
        self.dead_rows = dead_rows
        self.folded = 0  # delta rows this worker folded (for tests and logs)
        self._since_vacuum = 0

    async def run_once(self) -> int:
        """Fold the committed deltas now; returns how many delta rows were folded (0 also
        when another worker was folding)."""
        async with self.db.connection() as conn:
            row = await (await conn.execute(Q.rollup_fold)).fetchone()
            folded = int(row["folded"]) if row else 0
            self.folded += folded
            self._since_vacuum += folded
            if self._since_vacuum >= self.dead_rows:
                await conn.execute(Q.rollup_deltas_vacuum, prepare=False)
                self._since_vacuum = 0
        return folded

    async def run(self, stop: asyncio.Event) -> None:
        await run_every(self.interval, stop, self.run_once, what="rollup fold")
