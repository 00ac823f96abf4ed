"""What the metrics triggers cost the hot path: a claim and a finish, with two texts of the
trigger functions.

    python benchmarks/rollup_cost.py [--server URL] [--rounds 300] [--before COMMIT]

The trigger functions of `conveyor/sql/functions/rollups.sql` at `--before` and as they
are now are applied in turn to one scratch database, in blocks of rounds, alternating, so
that both meet the same load; the first rounds of each block are not counted (a new
function text is planned again). A round enqueues a batch, claims it and finishes it
(all succeeded), each in its own transaction, and reads what the two rollup trigger
functions took in each, as the server times them (`track_functions = 'pl'`, a superuser's
setting): on a busy machine that is steadier than the client's clock.
Medians and the 10th-90th percentile spread, for batches of 1 (an idle worker) and 16 (one
exchange at concurrency 16), or those of --batches (a drain of 2 x 16 finishes about 150 per
statement). A text whose finishes append deltas (conveyor_rollup_fold, migration 0014) has
its fold timed after each round as well, in its own transaction: the whole cost of putting
that round's finishes in the rollups (a folder that runs once a second folds many rounds'
deltas at once, so this is an upper bound).
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
from psycopg import sql  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from scratch import fresh_database  # noqa: E402

from conveyor import queue  # noqa: E402
from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.queue import AgentRegistration, NewTask, Outcome  # noqa: E402
from conveyor.sql import function_files  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
BEFORE = "36caff5"  # the rollup triggers with their INSERT and UPDATE branches written twice
BLOCK = 25  # rounds per block of one variant
WARMUP = 3  # rounds of each block not counted


def rollups_at(commit: str) -> str:
    return subprocess.run(
        ["git", "show", f"{commit}:conveyor/sql/functions/rollups.sql"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# What each rollup trigger function took so far, by the server's own timing
# (track_functions = 'pl'): the triggers alone, apart from the statement and the round trip.
FUNCTIONS = ("conveyor_rollup_tasks", "conveyor_rollup_attempts")
TRIGGER_MS = """
    SELECT f.name, coalesce(s.total_time, 0) AS ms
    FROM unnest(%(names)s::text[]) AS f(name)
    LEFT JOIN pg_stat_xact_user_functions s ON s.funcname = f.name
"""

Sample = dict[str, float]  # milliseconds by function, and "both"


async def trigger_ms(conn: psycopg.AsyncConnection) -> Sample:
    cur = await conn.execute(TRIGGER_MS, {"names": list(FUNCTIONS)})
    return {row["name"]: float(row["ms"]) for row in await cur.fetchall()}  # type: ignore[call-overload]


def spent(before: Sample, after: Sample) -> Sample:
    sample = {name: after[name] - before[name] for name in FUNCTIONS}
    return {**sample, "both": sum(sample.values())}


FOLD_MS = (
    "SELECT coalesce(sum(total_time), 0) AS ms FROM pg_stat_xact_user_functions"
    " WHERE funcname = 'conveyor_rollup_fold'"
)


async def fold_ms(conn: psycopg.AsyncConnection[dict[str, Any]]) -> float:
    """What folding the deltas written so far took, by the server's timing."""
    taken = []
    async with conn.transaction():
        for statement in (FOLD_MS, "SELECT conveyor_rollup_fold()", FOLD_MS):
            row = await (await conn.execute(statement)).fetchone()
            taken.append(row["ms"] if row and statement == FOLD_MS else 0)
    return float(taken[2] - taken[0])


async def one_round(
    conn: psycopg.AsyncConnection, batch: int, fold: bool = False
) -> tuple[Sample, Sample]:
    """What the rollup triggers took in a claim of `batch` tasks and in their finish. The
    counts are the session's until they are reported (at most once a second, when it is
    idle), so each is the difference across its own transaction."""
    await queue.enqueue_many(conn, [NewTask("noop") for _ in range(batch)], known_agents={"noop"})
    async with conn.transaction():
        start = await trigger_ms(conn)
        claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=batch)
        claim = spent(start, await trigger_ms(conn))
    outcomes = [Outcome(c.id, c.attempt, "succeeded", result="1") for c in claimed]
    async with conn.transaction():
        start = await trigger_ms(conn)
        await queue.finish(conn, outcomes)
        finish = spent(start, await trigger_ms(conn))
    if fold:
        finish["fold"] = await fold_ms(conn)
        finish["both+fold"] = finish["both"] + finish["fold"]
    return claim, finish


async def drop_rollup_functions(conn: psycopg.AsyncConnection) -> None:
    """The rollup triggers and functions, dropped: the two texts need not name the same
    ones, nor give a function the same arguments (CREATE OR REPLACE would then leave the
    other text's overload beside it, and a call matching both is ambiguous)."""
    cur = await conn.execute(
        "SELECT t.tgname, t.tgrelid::regclass::text AS tab FROM pg_trigger t"
        " JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname LIKE 'conveyor_rollup%%'"
    )
    for row in await cur.fetchall():
        await conn.execute(
            sql.SQL("DROP TRIGGER {} ON {}").format(
                sql.Identifier(row["tgname"]), sql.Identifier(row["tab"])
            )
        )
    cur = await conn.execute(
        "SELECT oid::regprocedure::text AS signature FROM pg_proc"
        " WHERE proname LIKE 'conveyor_rollup%%'"
    )
    for row in await cur.fetchall():
        await conn.execute(sql.SQL("DROP FUNCTION {}").format(sql.SQL(row["signature"])))


def report(label: str, samples: list[float]) -> str:
    deciles = statistics.quantiles(samples, n=10)
    return f"{label} {statistics.median(samples):.3f} ms ({deciles[0]:.3f}-{deciles[-1]:.3f})"


async def run(
    server: str, rounds: int, before: str, now_file: str | None, batches: list[int]
) -> None:
    with fresh_database(server, f"bench_rollup_{secrets.token_hex(4)}") as url:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=dict_row
        ) as conn:
            await migrate(conn)
            await conn.execute("SET track_functions = 'pl'")
            await queue.register_agents(conn, [AgentRegistration("noop", compute_usd_per_hour=0.1)])
            # Both texts define their functions with CREATE OR REPLACE: applying one after
            # the other swaps the trigger functions (each one's helper stays beside it).
            now = Path(now_file).read_text() if now_file else function_files()["rollups"]
            variants = {"before": rollups_at(before), "now": now}
            for batch in batches:
                samples: dict[tuple[str, str], list[Sample]] = {}
                for block in range(2 * rounds // BLOCK):
                    key = list(variants)[block % 2]
                    await drop_rollup_functions(conn)
                    await conn.execute(sql.SQL(variants[key]))  # type: ignore[arg-type]
                    for r in range(BLOCK):
                        folds = "conveyor_rollup_fold()" in variants[key]
                        claim, finish = await one_round(conn, batch, folds)
                        if r >= WARMUP:
                            samples.setdefault((key, "claim"), []).append(claim)
                            samples.setdefault((key, "finish"), []).append(finish)
                for (key, step), taken in samples.items():
                    print(
                        f"batch {batch:2d} {step:6s} {key:6s}",
                        " | ".join(
                            report(name.removeprefix("conveyor_rollup_"), [t[name] for t in taken])
                            for name in (*FUNCTIONS, "both", "fold", "both+fold")
                            if name in taken[0]
                        ),
                        f"({len(taken)} rounds)",
                    )
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BENCH_SERVER_URL", DEFAULT_SERVER))
    parser.add_argument("--rounds", type=int, default=300, help="rounds per variant and batch")
    parser.add_argument("--before", default=BEFORE, help=f"commit to compare with ({BEFORE})")
    parser.add_argument("--now", help="a candidate text of rollups.sql to time as 'now'")
    parser.add_argument("--batches", default="1,16", help="batch sizes, comma-separated")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    asyncio.run(run(args.server, args.rounds, args.before, args.now, batches))


if __name__ == "__main__":
    main()
