"""The claim's cached plan at a queue's depth: what a worker's connection runs after its
first executions, EXPLAINed whole, and how long one claim takes from it.

    python benchmarks/claim_plan.py [--server URL] [--tasks 1000000] [--limit 32]
                                    [--plan-cache-mode force_generic_plan]

In a scratch database (dropped after): `--tasks` tasks of one agent, all enqueued, ANALYZEd.
The claim is prepared the way psycopg prepares it on a worker's connection (after its
prepare threshold), with the worker's LIMIT inlined as queue.claim_statement() does, and
executed eight times in the claim's transaction (planner_index_only), each rolled back so
the queue keeps its depth. Then the plan it runs now, EXPLAIN ANALYZE'd, with the
prepared statement's generic / custom plan counts. `--param-limit` prepares the old text,
with the LIMIT a parameter, for comparison.

`--function`: instead, an idle worker's claim, conveyor_claim() (queue.sql
tasks_claim_alone), whose plpgsql plan has the LIMIT as a parameter; its inner plan is
shown by auto_explain (as notices), the ninth execution's.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scratch import fresh_database  # noqa: E402

from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.sql import queue as Q  # noqa: E402

TYPES = {"worker_id": "text", "agents": "text[]", "limit": "int", "limited_limit": "int"}


def numbered(query: str) -> tuple[str, list[str]]:
    """psycopg's %(name)s placeholders as $1, $2, ... in first-use order, for PREPARE."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, query).replace("%%", "%"), names


def claim_text(limit: int | None) -> str:
    # The comments' placeholders too, or numbered() would count them as parameters.
    text = Q.tasks_claim
    return text if limit is None else text.replace("%(limit)s", str(limit))


def nodes(plan: dict[str, Any]) -> Any:
    yield plan
    for child in plan.get("Plans", ()):
        yield from nodes(child)


async def migrated(url: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await migrate(conn)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--limit", type=int, default=32)
    parser.add_argument("--param-limit", action="store_true", help="the LIMIT a parameter")
    parser.add_argument("--plan-cache-mode", default=None, help="set in the claim's transaction")
    parser.add_argument("--function", action="store_true", help="conveyor_claim(), one statement")
    args = parser.parse_args()
    with (
        fresh_database(args.server, f"claim_plan_{args.tasks}") as url,
        psycopg.connect(url, autocommit=True) as conn,
    ):
        asyncio.run(migrated(url))
        conn.execute("INSERT INTO agents (name) VALUES ('a')")
        began = time.monotonic()
        conn.execute(
            "INSERT INTO tasks (agent, priority) SELECT 'a', g %% 10 FROM generate_series(1, %s) g",
            (args.tasks,),
        )
        conn.execute("ANALYZE tasks")
        print(f"{args.tasks:,} enqueued tasks in {time.monotonic() - began:.1f} s")
        if args.function:
            function_claims(conn, args.limit)
            return
        text, names = numbered(claim_text(None if args.param_limit else args.limit))
        types = ", ".join(TYPES[n] for n in names)
        conn.execute(sql.SQL(f"PREPARE claim ({types}) AS {text}"))
        values = {"worker_id": "w", "agents": ["a"], "limit": args.limit, "limited_limit": 0}
        execute = sql.SQL("EXECUTE claim ({})").format(
            sql.SQL(", ").join(sql.Literal(values[n]) for n in names)
        )
        times = []
        for _ in range(8):
            with conn.transaction(force_rollback=True):
                conn.execute(Q.planner_index_only)
                if args.plan_cache_mode:
                    conn.execute(
                        "SELECT set_config('plan_cache_mode', %s, true)", (args.plan_cache_mode,)
                    )
                began = time.perf_counter()
                n = len(conn.execute(execute).fetchall())
                times.append((time.perf_counter() - began) * 1000)
        print(f"claims of {n}: " + ", ".join(f"{t:.2f}" for t in times) + " ms")
        with conn.transaction(force_rollback=True):
            conn.execute(Q.planner_index_only)
            if args.plan_cache_mode:
                conn.execute(
                    "SELECT set_config('plan_cache_mode', %s, true)", (args.plan_cache_mode,)
                )
            row = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + execute).fetchone()
            assert row is not None
            explained = row[0][0]
            text_plan = conn.execute(sql.SQL("EXPLAIN (ANALYZE) ") + execute).fetchall()
        counts = conn.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'claim'"
        ).fetchone()
        print(f"generic plans {counts[0]}, custom plans {counts[1]}")  # type: ignore[index]
        plan = explained["Plan"]
        scans = [
            (n["Node Type"], n.get("Index Name"))
            for n in nodes(plan)
            if n.get("Relation Name") == "tasks"
        ]
        print(f"scans of tasks: {scans}")
        print(f"joins: {[n['Node Type'] for n in nodes(plan) if 'Join' in n['Node Type']]}")
        print(
            f"planning {explained.get('Planning Time', 0):.3f} ms,"
            f" execution {explained['Execution Time']:.3f} ms"
        )
        print("\n".join(r[0] for r in text_plan))


def function_claims(conn: psycopg.Connection[Any], limit: int) -> None:
    values = {"worker_id": "w", "agents": ["a"], "limit": limit, "limited_limit": 0}
    times = []
    for _ in range(8):
        with conn.transaction(force_rollback=True):
            began = time.perf_counter()
            n = len(conn.execute(Q.tasks_claim_alone, values).fetchall())
            times.append((time.perf_counter() - began) * 1000)
    print(f"claims of {n} (round trips): " + ", ".join(f"{t:.2f}" for t in times) + " ms")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_analyze = on"):
        conn.execute(f"SET auto_explain.{setting}")
    conn.execute("SET auto_explain.log_level = notice")
    with conn.transaction(force_rollback=True):
        conn.execute(Q.tasks_claim_alone, values).fetchall()
    print("\n".join(t for t in notices if "picked AS MATERIALIZED" in t))


if __name__ == "__main__":
    main()
