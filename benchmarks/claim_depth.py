"""Does Conveyor's claim cost depend on how many tasks wait in the queue?

Each depth gets its own database, filled once with SQL (far faster than the client API),
so that the depths can be measured side by side: claim at 1k, at 100k, at 1M, at 1k again,
and so on, and drift of the machine falls on all of them alike. Every timed claim takes
16 tasks and commits, as a worker's does; 16 fresh tasks are then added, untimed, so the
depth stays where it was and the claimed rows stay behind as the dead index entries a real
queue accumulates between vacuums.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import DictRow, dict_row

from conveyor import App, Task, queue
from conveyor.settings import Settings
from conveyor.sql import queue as Q

BATCH = 16
WORKER_ID = "bench-claim"
FILL = "INSERT INTO tasks (agent, payload) SELECT 'noop', '{}' FROM generate_series(1, %(n)s)"

Connection = psycopg.AsyncConnection[DictRow]


async def _never_run(task: Task) -> None:
    raise AssertionError("nothing runs here; tasks are only claimed")


async def prepare(url: str, depth: int) -> Connection:
    """Migrate, register the agent 'noop', fill the queue to `depth`; return a connection
    set up the way the worker's pool sets up its own."""
    app = App(settings=Settings(database_url=url))
    app.agent("noop")(_never_run)
    await app.database()
    await app.aclose()
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
    await conn.execute("TRUNCATE tasks, task_attempts, attempt_usage RESTART IDENTITY CASCADE")
    await conn.execute(FILL, {"n": depth})
    return conn


async def timed_claim(conn: Connection) -> float:
    """Microseconds for one claim of 16; then top the queue back up, untimed."""
    started = time.perf_counter()
    claimed = await queue.claim(conn, worker_id=WORKER_ID, agents=["noop"], limit=BATCH)
    elapsed = time.perf_counter() - started
    if len(claimed) != BATCH:
        raise RuntimeError(f"claimed {len(claimed)} tasks, not {BATCH}: the queue ran dry")
    await conn.execute(FILL, {"n": BATCH})
    return elapsed * 1e6


async def measure(conns: dict[int, Connection], claims: int, warmup: int) -> dict[int, list[float]]:
    """Claim round-robin over the depths, starting each round one depth further on so that
    no depth always goes first; the first `warmup` rounds are not kept."""
    timings: dict[int, list[float]] = {depth: [] for depth in conns}
    depths = list(conns)
    for round_number in range(warmup + claims):
        shift = round_number % len(depths)
        for depth in depths[shift:] + depths[:shift]:
            micros = await timed_claim(conns[depth])
            if round_number >= warmup:
                timings[depth].append(micros)
    return timings


async def explain(conn: Connection) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of one claim, in a transaction like queue.claim's (with
    the same planner settings first), rolled back so that it changes nothing."""
    params: dict[str, Any] = {
        "worker_id": WORKER_ID,
        "agents": ["noop"],
        "limit": BATCH,
        "limited_limit": BATCH,  # as queue.claim passes it; 'noop' has no limits anyway
    }
    async with conn.transaction(force_rollback=True):
        await conn.execute(Q.planner_index_only)
        cur = await conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + Q.tasks_claim, params)
        rows = await cur.fetchall()
    return "\n".join(row["QUERY PLAN"] for row in rows)


@dataclass(frozen=True)
class ServerCost:
    """What one claim costs inside the server, without the commit and the client."""

    execution_ms: float
    buffers: int  # shared buffers the whole statement touched: its work, free of timing noise

    @classmethod
    def parse(cls, plan: str) -> ServerCost:
        execution = re.search(r"Execution Time: ([\d.]+) ms", plan)
        # The first Buffers line is the top node's, which includes everything below it.
        buffers = re.search(r"Buffers: shared hit=(\d+)(?: read=(\d+))?", plan)
        if not execution or not buffers:
            raise ValueError(f"not an EXPLAIN (ANALYZE, BUFFERS) plan:\n{plan}")
        return cls(float(execution.group(1)), int(buffers.group(1)) + int(buffers.group(2) or 0))


async def server_costs(conns: dict[int, Connection], rounds: int) -> dict[int, list[ServerCost]]:
    """EXPLAIN ANALYZE one claim per depth per round, interleaved like measure()."""
    costs: dict[int, list[ServerCost]] = {depth: [] for depth in conns}
    for _ in range(rounds):
        for depth, conn in conns.items():
            costs[depth].append(ServerCost.parse(await explain(conn)))
    return costs


async def after_claims_without_vacuum(
    conn: Connection, steps: tuple[int, ...], rounds: int = 10
) -> dict[str, ServerCost]:
    """The claim's server cost after `steps` tasks have left 'enqueued' since the last
    VACUUM, then after a VACUUM.

    A claim's UPDATE cannot be HOT (status is in the partial index's predicate), so every
    claimed task leaves a dead entry at the head of the dequeue index until VACUUM removes
    it, and each later claim walks over those entries. One UPDATE of the oldest tasks stands
    in for that many claims: it leaves the same dead entries, in a fraction of the time.
    """
    await conn.execute("VACUUM tasks")  # start from a clean index: 0 claimed since VACUUM
    cur = await conn.execute("SELECT min(id) AS first FROM tasks WHERE status = 'enqueued'")
    row = await cur.fetchone()
    first = row["first"] if row else 1
    costs: dict[str, ServerCost] = {}
    done = 0
    for step in steps:
        async with conn.transaction():
            # Without the status-change trigger for this one statement: it is not what is
            # measured, and its transition check is quadratic in the rows of a statement
            # when planned as a nested loop (see docs/benchmarks.md).
            await conn.execute("SET LOCAL session_replication_role = replica")
            await conn.execute(
                "UPDATE tasks SET status = 'processing', attempts = 1, locked_by = %(by)s"
                " WHERE id >= %(low)s AND id < %(high)s",
                {"by": WORKER_ID, "low": first + done, "high": first + step},
            )
        done = step
        await explain(conn)  # the first walk marks the entries dead; later ones skip them
        costs[f"{step:,} claimed since VACUUM"] = await _median_cost(conn, rounds)
    await conn.execute("VACUUM tasks")
    costs["after VACUUM"] = await _median_cost(conn, rounds)
    return costs


async def _median_cost(conn: Connection, rounds: int) -> ServerCost:
    costs = [ServerCost.parse(await explain(conn)) for _ in range(rounds)]
    return ServerCost(
        statistics.median(c.execution_ms for c in costs),
        int(statistics.median(c.buffers for c in costs)),
    )
