"""What readers of the rollups pay for deltas not folded yet (migration 0014), and what a
fold of them costs.

    python benchmarks/rollup_deltas_read.py [--server URL] [--pending 0,1000,10000,100000]
        [--runs 20]

The dashboard's statements read the rollups plus every unfolded delta (the *_exact views),
so a stopped folder makes every read sum more rows. This times the reads of
GET /api/metrics (conveyor.metrics.summary, unfiltered and for one agent over the last
24 hours), GET /api/costs grouped by agent, and /metrics (prometheus_data) with N finishes
pending, in the worst shape: each finish its own statement (an idle worker finishing one
task at a time), so N rollup delta rows and 2N histogram delta rows (a latency and a cost
bucket each), spread over 5 agents, 3 tenants, the three finished statuses and the last 24
hours. Behind them, a month of folded rollups for the same keys. Then it folds them and
times the fold. Medians of --runs reads each, in a scratch database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import psycopg  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from scratch import fresh_database  # noqa: E402

from conveyor import metrics, queue  # noqa: E402
from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.queue import AgentRegistration  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
AGENTS = [f"agent{n}" for n in range(5)]

# A month of folded history: per hour, agent, tenant and status, a rollup row and ten
# buckets of each histogram (what 720 hours of a busy queue leave at the hour grain), and
# their day rows.
HISTORY = """
WITH keys AS (
    SELECT h AS period, a AS agent, t AS tenant, s AS status
    FROM generate_series(date_trunc('hour', now(), 'UTC') - interval '30 days',
                         date_trunc('hour', now(), 'UTC'), interval '1 hour') AS h,
         unnest(%(agents)s::text[]) AS a, unnest(ARRAY['', 'acme', 'globex']) AS t,
         unnest(ARRAY['completed', 'failed', 'cancelled']) AS s
), grains AS (
    SELECT g.grain, date_trunc(g.unit, k.period, 'UTC') AS period, k.agent, k.tenant, k.status
    FROM keys k CROSS JOIN (VALUES ('h'::"char", 'hour'), ('d'::"char", 'day')) AS g(grain, unit)
), rollups AS (
    INSERT INTO task_rollups (grain, period, agent, tenant, status, shard, tasks, attempts,
                              throttled, input_tokens, output_tokens, llm_usd, compute_usd,
                              confidence_sum, confidence_n)
    SELECT grain, period, agent, tenant, status, 0, sum(100), sum(110), sum(3),
           sum(120000), sum(18000), sum(1.5), sum(0.2), sum(85.0), sum(100)
    FROM grains GROUP BY 1, 2, 3, 4, 5
)
INSERT INTO task_histograms (grain, kind, period, agent, tenant, status, bucket, shard, tasks)
SELECT grain, kind, period, agent, tenant, status, b, 0, sum(10)
FROM grains, unnest(ARRAY['latency', 'cost']) AS kind, generate_series(30, 39) AS b
GROUP BY 1, 2, 3, 4, 5, 6, 7
"""
HISTORY_BY_AGENT = """
INSERT INTO task_histograms_by_agent (grain, kind, period, agent, bucket, shard, tasks)
SELECT grain, kind, period, agent, bucket, 0, sum(tasks) FROM task_histograms
GROUP BY 1, 2, 3, 4, 5
"""

# N finishes of one task each, as conveyor_rollup_finished() writes them.
PENDING = """
WITH f AS (
    SELECT n, date_trunc('hour', now() - random() * interval '24 hours', 'UTC') AS period,
           (%(agents)s::text[])[1 + n %% 5] AS agent,
           (ARRAY['', 'acme', 'globex'])[1 + n %% 3] AS tenant,
           (ARRAY['completed', 'completed', 'completed', 'failed', 'cancelled'])[1 + n %% 5]
               AS status
    FROM generate_series(1, %(n)s) AS n
), rollups AS (
    INSERT INTO task_rollup_deltas (period, agent, tenant, status, tasks, attempts, throttled,
                                    input_tokens, output_tokens, llm_usd, compute_usd,
                                    confidence_sum, confidence_n)
    SELECT period, agent, tenant, status, 1, 1, 0, 1200, 180, 0.015, 0.002, 0.9, 1 FROM f
)
INSERT INTO task_histogram_deltas (kind, period, agent, tenant, status, bucket, tasks)
SELECT kind, period, agent, tenant, status, 30 + (n * 7 + length(kind)) %% 10, 1
FROM f, unnest(ARRAY['latency', 'cost']) AS kind
"""


async def timed(runs: int, read: Callable[[], Awaitable[Any]]) -> float:
    """The median of `runs` reads, in ms (one unmeasured read first)."""
    await read()
    taken = []
    for _ in range(runs):
        start = time.perf_counter()
        await read()
        taken.append((time.perf_counter() - start) * 1000)
    return statistics.median(taken)


async def run(server: str, pending: list[int], runs: int) -> None:
    with fresh_database(server, f"bench_deltas_{secrets.token_hex(4)}") as url:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=dict_row
        ) as conn:
            await migrate(conn)
            await queue.register_agents(conn, [AgentRegistration(a) for a in AGENTS])
            await conn.execute(HISTORY, {"agents": AGENTS})
            await conn.execute(HISTORY_BY_AGENT)
            await conn.execute("VACUUM ANALYZE task_rollups, task_histograms")
            await conn.execute("VACUUM ANALYZE task_histograms_by_agent")
            day_ago = (
                await (await conn.execute("SELECT now() - interval '1 day' AS t")).fetchone()
            )["t"]  # type: ignore[index]
            reads: dict[str, Callable[[], Awaitable[Any]]] = {
                "summary, unfiltered": lambda: metrics.summary(conn, metrics.Filters()),
                "summary, one agent, 24 h": lambda: metrics.summary(
                    conn, metrics.Filters(agent="agent1", since=day_ago)
                ),
                "costs by agent": lambda: metrics.costs(conn, metrics.Filters(), ["agent"]),
                "prometheus": lambda: metrics.prometheus_data(conn),
            }
            print(f"{'pending finishes':>16} | " + " | ".join(reads) + " | fold of them (ms)")
            for n in pending:
                await conn.execute("TRUNCATE task_rollup_deltas, task_histogram_deltas")
                await conn.execute(PENDING, {"n": n, "agents": AGENTS})
                await conn.execute("VACUUM ANALYZE task_rollup_deltas, task_histogram_deltas")
                times = [await timed(runs, read) for read in reads.values()]
                start = time.perf_counter()
                await conn.execute("BEGIN")
                await conn.execute("SELECT conveyor_rollup_fold()")
                await conn.execute("ROLLBACK")  # the history stays as it was for the next N
                fold = (time.perf_counter() - start) * 1000
                print(f"{n:>16,} | " + " | ".join(f"{t:.1f}" for t in times) + f" | {fold:.0f}")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BENCH_SERVER_URL", DEFAULT_SERVER))
    parser.add_argument("--pending", default="0,1000,10000,100000")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(run(args.server, [int(n) for n in args.pending.split(",")], args.runs))


if __name__ == "__main__":
    main()
