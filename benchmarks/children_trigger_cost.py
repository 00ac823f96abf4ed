"""What the fan-in trigger costs tasks that have no parent: a worker's exchange (finish a
batch of outcomes and claim the next batch, one transaction) with the trigger
`tasks_children_settle` enabled and disabled, interleaved round by round in one run.

    python benchmarks/children_trigger_cost.py [--server URL] [--rounds 20] [--batch 16]

Every UPDATE of tasks runs the trigger once per statement; for tasks nobody spawned it is
one scan of the statement's new rows that finds no parent_id. Each round enqueues
`--batch` x 50 no-op tasks and drains them with finish_and_claim() on one connection, as a
worker at concurrency `--batch` would, and times the drain per task. Medians of the rounds
and their 10th-90th percentile spread, for each setting.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402

from conveyor import queue  # noqa: E402
from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.queue import AgentRegistration, AttemptOutcome, NewTask, Outcome  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


async def drain(conn: psycopg.AsyncConnection[dict[str, object]], batch: int) -> float:
    await queue.enqueue_many(
        conn, [NewTask("noop") for _ in range(batch * 50)], known_agents={"noop"}
    )
    started = time.perf_counter()
    done = 0
    claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=batch)
    while claimed:
        outcomes = [Outcome(t.id, t.attempt, AttemptOutcome.SUCCEEDED, result="1") for t in claimed]
        done += len(outcomes)
        _, claimed = await queue.finish_and_claim(
            conn,
            outcomes,
            worker_id="bench",
            agents=["noop"],
            limit=batch,
        )
    return (time.perf_counter() - started) / done * 1e6


async def main_async(args: argparse.Namespace) -> int:
    name = f"children_trigger_{os.getpid()}"
    with psycopg.connect(args.server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = make_conninfo(args.server, dbname=name)
    try:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=dict_row
        ) as conn:
            await migrate(conn)
            await queue.register_agents(conn, [AgentRegistration("noop")])
            await drain(conn, args.batch)  # warm up
            times: dict[str, list[float]] = {"enabled": [], "disabled": []}
            for n in range(args.rounds):
                for setting in ("enabled", "disabled") if n % 2 else ("disabled", "enabled"):
                    verb = "ENABLE" if setting == "enabled" else "DISABLE"
                    await conn.execute(
                        sql.SQL("ALTER TABLE tasks {} TRIGGER tasks_children_settle").format(
                            sql.SQL(verb)
                        )
                    )
                    times[setting].append(await drain(conn, args.batch))
                await conn.execute("DELETE FROM task_attempts")
                await conn.execute("DELETE FROM tasks")
        for setting, values in times.items():
            deciles = statistics.quantiles(values, n=10)
            print(
                f"trigger {setting}: {statistics.median(values):.1f} us per task "
                f"(p10-p90 {deciles[0]:.1f}-{deciles[-1]:.1f}, {len(values)} rounds of "
                f"{args.batch * 50} tasks, batches of {args.batch})"
            )
        ratio = statistics.median(times["enabled"]) / statistics.median(times["disabled"])
        print(f"enabled / disabled: {ratio:.3f}; load average {os.getloadavg()}")
    finally:
        with psycopg.connect(args.server, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=DEFAULT_SERVER)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
