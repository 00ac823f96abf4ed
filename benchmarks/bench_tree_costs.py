"""What a tree's cost and a parent's progress add to the task listing, at a million tasks.

    python benchmarks/gen_dataset.py URL --rebuild          # a million tasks, once
    python benchmarks/bench_tree_costs.py URL --make-trees  # the newest 110,000 become
                                                            # 10,000 roots x 10 children
    python benchmarks/bench_tree_costs.py URL [--runs 15]

Times, on one warm connection, the functions behind GET /api/tasks (conveyor.queue.
list_tasks, then conveyor.metrics.task_usage for the page: each task's own cost, its
tree's and its children's progress) and GET /api/costs?root=R (conveyor.metrics.costs),
without HTTP; the listing alone is timed in the same run, so the ratio is what the family
figures cost. Each case runs --runs times, interleaved; the p50 and the worst are printed.
Then the EXPLAIN (ANALYZE, BUFFERS) of task_usage for the page with the most children.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from psycopg.rows import dict_row

from conveyor import metrics, queue
from conveyor.metrics import Filters

MAKE_TREES = """
SET session_replication_role = replica;  -- a bulk edit of history: no triggers, no NOTIFY
UPDATE tasks SET parent_id = id - id % 11, root_id = id - id % 11, child_key = 'c' || id,
                 depth = 1
WHERE id > (SELECT max(id) FROM tasks) - 110000 AND id % 11 <> 0
  AND id - id % 11 > (SELECT max(id) FROM tasks) - 110000;
SET session_replication_role = origin;
"""


async def page_of(conn: Any, limit: int, **filters: Any) -> list[Any]:
    return list(await queue.list_tasks(conn, limit=limit + 1, **filters))[:limit]


async def roots(conn: Any, limit: int) -> list[int]:
    cur = await conn.execute(
        "SELECT DISTINCT root_id FROM tasks WHERE root_id IS NOT NULL ORDER BY root_id DESC "
        "LIMIT %s",
        (limit,),
    )
    return [r["root_id"] for r in await cur.fetchall()]


async def main(url: str, runs: int, make_trees: bool) -> None:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
    async with conn:
        if make_trees:
            await conn.execute(MAKE_TREES)
            await conn.execute("VACUUM ANALYZE tasks")
        count = await (await conn.execute("SELECT count(*) AS n FROM tasks")).fetchone()
        parents = await roots(conn, 50)
        root = parents[0]

        def listing(limit: int, **f: Any) -> Callable[[], Awaitable[Any]]:
            async def alone() -> Any:
                return await page_of(conn, limit, **f)

            return alone

        def with_usage(limit: int, **f: Any) -> Callable[[], Awaitable[Any]]:
            async def both() -> Any:
                rows = await page_of(conn, limit, **f)
                return await metrics.task_usage(conn, [r["id"] for r in rows])

            return both

        async def fifty_parents() -> Any:
            return await metrics.task_usage(conn, parents)

        async def tree_costs() -> Any:
            return await metrics.costs(conn, Filters(root=root), ["agent", "model"])

        cases: dict[str, Callable[[], Awaitable[Any]]] = {
            "list 50 newest": listing(50),
            "list 50 newest + family": with_usage(50),
            "list 50 agent=invoice": listing(50, agent="invoice"),
            "list 50 agent=invoice + family": with_usage(50, agent="invoice"),
            "list 500 newest": listing(500),
            "list 500 newest + family": with_usage(500),
            "family of 50 roots x 10 children": fifty_parents,
            "costs?root=R&group_by=agent,model": tree_costs,
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for call in cases.values():  # warm
            await call()
        for _ in range(runs):
            for name, call in cases.items():
                start = time.perf_counter()
                await call()
                times[name].append((time.perf_counter() - start) * 1000)
        print(f"{count['n'] if count else '?':,} tasks; {runs} runs each, interleaved")
        print(f"{'case':40} {'p50 ms':>8} {'max ms':>8}")
        for name, ms in times.items():
            print(f"{name:40} {statistics.median(ms):8.2f} {max(ms):8.2f}")
        async with conn.transaction():
            await conn.execute("SET LOCAL jit = off")  # as task_usage runs it
            plan = await conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + metrics.Q.tasks_usage,
                {"ids": parents},
            )
            lines = [row["QUERY PLAN"] for row in await plan.fetchall()]
        print("\nEXPLAIN ANALYZE task_usage, 50 roots x 10 children:")
        print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="a database filled by gen_dataset.py")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--make-trees", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.runs, args.make_trees))
