"""What a finish costs the server: conveyor_end_attempts() at one commit against the working tree's.

    python benchmarks/finish_cost.py [--server URL] [--before HEAD] [--sizes 1,16,150]
        [--blocks 8] [--rounds 12]

The finish is the function in conveyor/sql/functions/attempts.sql. This applies its text
at `--before` and the working tree's in turn to one scratch database (a deep table: 20,000
tasks finished, then analysed), and times finishes of each batch size a worker writes: 1
outcome (an idle worker, or any worker between bursts), 16 (one exchange at concurrency
16), 150 (a busy worker's batch). Each block runs on a new connection, whose plan cache
starts empty as a worker's does; its first rounds are left out, so that the plan cache has
made its choice between a custom and the generic plan (after five calls). Each round
enqueues and claims fresh tasks, then finishes them in a transaction of its own.

Times are the server's, from pg_stat_xact_user_functions (track_functions): `self` is the
function's own statements (planning included), `total` adds the triggers they fire (the
rollups, NOTIFY). Medians and the 10th-90th percentile spread; the two texts alternate
block by block, so that the machine's load falls on both.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import psycopg  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from scratch import fresh_database  # noqa: E402

from conveyor import queue  # noqa: E402
from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.queue import AgentRegistration, NewTask, Outcome  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
FUNCTION_FILE = "conveyor/sql/functions/attempts.sql"
DEEP = 20_000
WARM_UP = 6  # rounds of a block left out: the plan cache's five custom plans, and one

TIMES = """
SELECT coalesce(sum(self_time), 0) AS self, coalesce(sum(total_time), 0) AS total
FROM pg_stat_xact_user_functions WHERE funcname = 'conveyor_end_attempts'
"""


def text_at(commit: str) -> str:
    return subprocess.run(
        ["git", "show", f"{commit}:{FUNCTION_FILE}"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


async def server_times(conn: psycopg.AsyncConnection[Any]) -> tuple[float, float]:
    row = await (await conn.execute(TIMES)).fetchone()
    assert row is not None
    return row["self"], row["total"]


async def one_round(conn: psycopg.AsyncConnection[Any], batch: int) -> tuple[float, float]:
    """Server milliseconds (self, total) of one finish of `batch` fresh outcomes."""
    await queue.enqueue_many(conn, [NewTask("noop") for _ in range(batch)], known_agents={"noop"})
    claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=batch)
    outcomes = [Outcome(c.id, c.attempt, "succeeded", result="1") for c in claimed]
    async with conn.transaction():
        self_before, total_before = await server_times(conn)
        await queue.finish(conn, outcomes)
        self_after, total_after = await server_times(conn)
    return self_after - self_before, total_after - total_before


async def deep_table(conn: psycopg.AsyncConnection[Any]) -> None:
    await queue.register_agents(conn, [AgentRegistration("noop", compute_usd_per_hour=0.1)])
    for _ in range(DEEP // 2_000):
        await queue.enqueue_many(
            conn, [NewTask("noop") for _ in range(2_000)], known_agents={"noop"}
        )
        claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=2_000)
        await queue.finish(conn, [Outcome(c.id, c.attempt, "succeeded") for c in claimed])
    await conn.execute("ANALYZE")


def spread(samples: list[float]) -> str:
    deciles = statistics.quantiles(samples, n=10)
    return f"{statistics.median(samples):7.3f} ({deciles[0]:.3f}-{deciles[-1]:.3f})"


async def run(server: str, before: str, sizes: list[int], blocks: int, rounds: int) -> None:
    texts = {before: text_at(before), "tree": (HERE.parent / FUNCTION_FILE).read_text()}
    with fresh_database(server, f"bench_finish_{secrets.token_hex(4)}") as url:

        async def connect() -> psycopg.AsyncConnection[Any]:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
            await conn.execute("SET track_functions = 'pl'")
            return conn

        async with await connect() as conn:
            await migrate(conn)
            await deep_table(conn)
        for size in sizes:
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in texts}
            for block in range(blocks):
                label = list(texts)[block % 2]
                async with await connect() as conn:
                    await conn.execute(texts[label])
                async with await connect() as conn:
                    for r in range(WARM_UP + rounds):
                        sample = await one_round(conn, size)
                        if r >= WARM_UP:
                            times[label].append(sample)
            for label, samples in times.items():
                print(
                    f"batch {size:3d} {label:>8s}: server ms self {spread([s for s, _ in samples])}"
                    f"  total {spread([t for _, t in samples])}  ({len(samples)} rounds)"
                )
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BENCH_SERVER_URL", DEFAULT_SERVER))
    parser.add_argument("--before", default="HEAD", help="commit to compare with (HEAD)")
    parser.add_argument("--sizes", default="1,16,150", help="batch sizes (1,16,150)")
    parser.add_argument("--blocks", type=int, default=8, help="blocks, alternating texts")
    parser.add_argument("--rounds", type=int, default=12, help="counted rounds per block")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    asyncio.run(run(args.server, args.before, sizes, args.blocks, args.rounds))


if __name__ == "__main__":
    main()
