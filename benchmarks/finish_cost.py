"""What pricing compute time costs the hot path: the finish statement with and without it.

    python benchmarks/finish_cost.py [--server URL] [--rounds 200] [--before COMMIT]

`attempts_finish` now also writes `compute_cost_usd` (wall time x the agent's rate, read
from the agents row). This times that statement against its text at `--before` (the
commit before the change) on the same schema, interleaved round by round, for the batch
sizes a worker writes: 1 outcome (an idle worker) and 16 (one exchange at concurrency 16).
Each round enqueues and claims fresh tasks, then times only the finish, in its own
transaction, from the client (a local server: the round trip is part of it). Medians and
the 10th-90th percentile spread.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import psycopg  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from scratch import fresh_database  # noqa: E402

from conveyor import queue  # noqa: E402
from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.queue import AgentRegistration, NewTask, Outcome  # noqa: E402
from conveyor.sql import queue as Q  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
BEFORE = "3577587"  # the last commit before compute cost in the finish


def statement_at(commit: str, name: str) -> str:
    text = subprocess.run(
        ["git", "show", f"{commit}:conveyor/sql/queue.sql"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    parts = re.split(r"^-- name: (\w+)\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))[name].strip().rstrip(";")


async def one_round(conn: psycopg.AsyncConnection, statement: str, batch: int) -> float:
    await queue.enqueue_many(conn, [NewTask("noop") for _ in range(batch)], known_agents={"noop"})
    claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=batch)
    outcomes = [Outcome(c.id, c.attempt, "succeeded", result="1") for c in claimed]
    params = queue._outcome_arrays(outcomes)
    async with conn.transaction():
        start = time.perf_counter()
        await conn.execute(statement, params)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - start
    return elapsed * 1000


async def run(server: str, rounds: int, before: str, without_triggers: bool) -> None:
    with fresh_database(server, f"bench_finish_{secrets.token_hex(4)}") as url:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=dict_row
        ) as conn:
            await migrate(conn)
            await queue.register_agents(conn, [AgentRegistration("noop", compute_usd_per_hour=0.1)])
            if without_triggers:
                # Isolates the statement from the work the triggers on tasks and
                # task_attempts do after it (NOTIFY, metrics rollups).
                await conn.execute("ALTER TABLE tasks DISABLE TRIGGER USER")
                await conn.execute("ALTER TABLE task_attempts DISABLE TRIGGER USER")
            variants = {"before": statement_at(before, "attempts_finish"), "now": Q.attempts_finish}
            for batch in (1, 16):
                times: dict[str, list[float]] = {k: [] for k in variants}
                for r in range(rounds):
                    order = list(variants) if r % 2 == 0 else list(reversed(variants))
                    for key in order:
                        times[key].append(await one_round(conn, variants[key], batch))
                for key, samples in times.items():
                    deciles = statistics.quantiles(samples, n=10)
                    print(
                        f"batch {batch:2d} {key:6s}: median {statistics.median(samples):.3f} ms "
                        f"(p10 {deciles[0]:.3f}, p90 {deciles[-1]:.3f}) over {rounds} rounds"
                    )
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BENCH_SERVER_URL", DEFAULT_SERVER))
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--before", default=BEFORE, help=f"commit to compare with ({BEFORE})")
    parser.add_argument("--without-triggers", action="store_true", help="time the statement alone")
    args = parser.parse_args()
    asyncio.run(run(args.server, args.rounds, args.before, args.without_triggers))


if __name__ == "__main__":
    main()
