"""What the triggers of tasks and task_attempts cost a claim and a finish: every function
file (conveyor/sql/functions/) at one commit against the working tree's.

    python benchmarks/trigger_cost.py [--server URL] [--before HEAD] [--sizes 16,150]
        [--blocks 8] [--rounds 12] [--explain]

One scratch database (20,000 tasks finished, then analysed, as finish_cost.py) holds both
texts in turn: a block applies one commit's function files the way migrate() does (every
Conveyor trigger and function dropped, each file run again), so the two texts need not
name the same triggers. Each block then runs on a new connection (its plan cache empty, as
a worker's is), leaves out its first rounds, and times rounds of: enqueue `size` tasks,
claim them with the busy worker's claim (queue.claim_statement, in a transaction with
planner_index_only), finish them all succeeded (conveyor_end_attempts). The texts
alternate block by block, so that the machine's load falls on both.

Times are the server's. The claim is run under EXPLAIN (ANALYZE): its execution time
(triggers included) and the sum of the times EXPLAIN prints for its triggers. The finish
is a plpgsql function, whose statement's triggers EXPLAIN does not list: its total time
and its time outside its own statements (total - self: the trigger functions it called)
come from pg_stat_xact_user_functions (track_functions). A trigger whose WHEN is false
calls nothing, and what it costs to check stays in the statement's own time: compare the
totals. --explain prints one claim's EXPLAIN per text.
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
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402
from scratch import fresh_database  # noqa: E402

from conveyor import queue  # noqa: E402
from conveyor.db import migrate as migrations  # noqa: E402
from conveyor.queue import AgentRegistration, NewTask, Outcome  # noqa: E402
from conveyor.queue.exchange import _claim_params, claim_statement  # noqa: E402
from conveyor.sql import function_files  # noqa: E402
from conveyor.sql import queue as Q  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
FOLDER = "conveyor/sql/functions"
DEEP = 20_000
WARM_UP = 6  # rounds of a block left out: the plan cache's five custom plans, and one

FINISH_TIMES = """
SELECT coalesce(sum(self_time) FILTER (WHERE funcname = 'conveyor_end_attempts'), 0) AS self,
       coalesce(sum(total_time) FILTER (WHERE funcname = 'conveyor_end_attempts'), 0) AS total,
       coalesce(jsonb_object_agg(funcname, self_time)
                    FILTER (WHERE funcname <> 'conveyor_end_attempts'), '{}') AS others
FROM pg_stat_xact_user_functions WHERE funcname LIKE 'conveyor%%'
"""


def files_at(commit: str) -> list[migrations.Migration]:
    """The function files as `commit` has them, in the order migrate() applies them."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=HERE.parent, capture_output=True, text=True, check=True
        )
        return done.stdout

    names = sorted(git("ls-tree", "--name-only", f"{commit}:{FOLDER}").split())
    return [
        migrations.Migration(n.removesuffix(".sql"), git("show", f"{commit}:{FOLDER}/{n}"))
        for n in names
        if n.endswith(".sql")
    ]


async def apply(conn: psycopg.AsyncConnection[Any], files: list[migrations.Migration]) -> None:
    """migrate()'s replacement of the functions and triggers, with these files' texts."""
    async with conn.transaction():
        with mock.patch.object(migrations, "functions", return_value=files):
            await migrations._apply_functions(conn)  # type: ignore[arg-type]


async def timed_claim(conn: psycopg.AsyncConnection[Any], size: int) -> tuple[float, float, Any]:
    """(execution ms, triggers ms, the plan) of the busy claim of `size` tasks."""
    params = _claim_params("bench", ["noop"], size, None)
    statement = sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + claim_statement(size)
    async with conn.transaction():
        await conn.execute(Q.planner_index_only)
        row = await (await conn.execute(statement, params)).fetchone()
    assert row is not None
    plan = row["QUERY PLAN"][0]
    triggers = sum(t["Time"] for t in plan.get("Triggers", []))
    return plan["Execution Time"], triggers, plan


async def timed_finish(
    conn: psycopg.AsyncConnection[Any], size: int
) -> tuple[float, float, dict[str, float]]:
    """(total ms, triggers ms, each function's own ms) of the finish of the `size`
    processing tasks."""
    cur = await conn.execute(
        "SELECT id, attempts, claim_token FROM tasks WHERE status = 'processing'"
    )
    rows = await cur.fetchall()
    assert len(rows) == size, (len(rows), size)
    outcomes = [
        Outcome(r["id"], r["attempts"], "succeeded", result="1", claim_token=str(r["claim_token"]))
        for r in rows
    ]
    async with conn.transaction():
        before = await (await conn.execute(FINISH_TIMES)).fetchone()
        await queue.finish(conn, outcomes)  # type: ignore[arg-type]
        after = await (await conn.execute(FINISH_TIMES)).fetchone()
    assert before is not None and after is not None
    total = after["total"] - before["total"]
    each = {
        name.removeprefix("conveyor_"): ms - before["others"].get(name, 0)
        for name, ms in after["others"].items()
    }
    return total, total - (after["self"] - before["self"]), each


async def deep_table(conn: psycopg.AsyncConnection[Any]) -> None:
    await queue.register_agents(conn, [AgentRegistration("noop", compute_usd_per_hour=0.1)])  # type: ignore[arg-type]
    for _ in range(DEEP // 2_000):
        await queue.enqueue_many(  # type: ignore[arg-type]
            conn, [NewTask("noop") for _ in range(2_000)], known_agents={"noop"}
        )
        claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=2_000)  # type: ignore[arg-type]
        await queue.finish(conn, [Outcome(c.id, c.attempt, "succeeded") for c in claimed])  # type: ignore[arg-type]
    await conn.execute("ANALYZE")


def spread(samples: list[float]) -> str:
    deciles = statistics.quantiles(samples, n=10)
    return f"{statistics.median(samples):7.3f} ({deciles[0]:.3f}-{deciles[-1]:.3f})"


def show_triggers(plan: Any) -> str:
    return ", ".join(
        f"{t['Trigger Name']} {t['Time']:.3f} ms x{t['Calls']}" for t in plan.get("Triggers", [])
    )


async def run(
    server: str, before: str, sizes: list[int], blocks: int, rounds: int, explain: bool
) -> None:
    texts = {
        before: files_at(before),
        "tree": [migrations.Migration(n, t) for n, t in function_files().items()],
    }
    with fresh_database(server, f"bench_triggers_{secrets.token_hex(4)}") as url:

        async def connect() -> psycopg.AsyncConnection[Any]:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
            await conn.execute("SET track_functions = 'pl'")
            return conn

        async with await connect() as conn:
            await migrations.migrate(conn)  # type: ignore[arg-type]
            await deep_table(conn)
        for size in sizes:
            times: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in texts}
            plans: dict[str, Any] = {}
            functions: dict[str, dict[str, list[float]]] = {k: {} for k in texts}
            for block in range(blocks):
                label = list(texts)[block % 2]
                async with await connect() as conn:
                    await apply(conn, texts[label])
                async with await connect() as conn:
                    for r in range(WARM_UP + rounds):
                        await queue.enqueue_many(  # type: ignore[arg-type]
                            conn, [NewTask("noop") for _ in range(size)], known_agents={"noop"}
                        )
                        claim_ms, claim_triggers, plans[label] = await timed_claim(conn, size)
                        finish_ms, finish_triggers, each = await timed_finish(conn, size)
                        if r >= WARM_UP:
                            for name, ms in each.items():
                                functions[label].setdefault(name, []).append(ms)
                            times[label].append(
                                (claim_ms, claim_triggers, finish_ms, finish_triggers)
                            )
            for label, samples in times.items():
                columns = list(zip(*samples, strict=True))
                print(
                    f"batch {size:3d} {label:>8s}: claim {spread(list(columns[0]))}"
                    f" triggers {spread(list(columns[1]))} | finish {spread(list(columns[2]))}"
                    f" triggers {spread(list(columns[3]))}  ({len(samples)} rounds)"
                )
                if explain:
                    print(f"    claim's triggers: {show_triggers(plans[label])}")
                    own = ", ".join(
                        f"{name} {statistics.median(ms):.3f}"
                        for name, ms in sorted(functions[label].items())
                    )
                    print(f"    finish's functions, own ms (medians): {own}")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BENCH_SERVER_URL", DEFAULT_SERVER))
    parser.add_argument("--before", default="HEAD", help="commit to compare with (HEAD)")
    parser.add_argument("--sizes", default="16,150", help="batch sizes (16,150)")
    parser.add_argument("--blocks", type=int, default=8, help="blocks, alternating texts")
    parser.add_argument("--rounds", type=int, default=12, help="counted rounds per block")
    parser.add_argument("--explain", action="store_true", help="print a claim's triggers")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    asyncio.run(run(args.server, args.before, sizes, args.blocks, args.rounds, args.explain))


if __name__ == "__main__":
    main()
