"""Where a drain's server time and writes go, per task: statements, HOT updates, index entries.

    python benchmarks/drain_breakdown.py --server postgresql://postgres@127.0.0.1:5561
        [--tasks 20000] [--config 2x16] [--conveyor-sql "..."]

cpu_per_task.py's drain (pre-enqueued no-op tasks, `conveyor worker` processes), on a server
with pg_stat_statements preloaded (cpu_per_task.py's docstring says how to start one), and
around it: pg_stat_statements per statement (calls, time, blocks, WAL), n_tup_upd against
n_tup_hot_upd of tasks and task_attempts, and for every index of the two tables the entries
the drain added (leaf tuples counted with pageinspect before and after; nothing vacuums in
between at 20,000 tasks) and its size. Per task, so that runs of different sizes compare.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
import cpu_per_task  # noqa: E402
from subjects import ConveyorSubject  # noqa: E402

# Leaf tuples of every b-tree index of the two tables (pageinspect), and every index's size.
INDEX_ENTRIES = """
SELECT c.relname, i.indexrelid::regclass::text AS index,
       (SELECT coalesce(sum(s.live_items + s.dead_items), 0)
        FROM generate_series(1, pg_relation_size(i.indexrelid) / 8192 - 1) AS b(n),
             LATERAL bt_page_stats(i.indexrelid::regclass::text, b.n::int) s
        WHERE s.type = 'l') AS entries,
       pg_relation_size(i.indexrelid) AS bytes
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_class x ON x.oid = i.indexrelid
JOIN pg_am am ON am.oid = x.relam AND am.amname = 'btree'
WHERE c.relname IN ('tasks', 'task_attempts')
ORDER BY 1, 2
"""

TABLES = """
SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
       pg_relation_size(relid) AS heap_bytes
FROM pg_stat_user_tables WHERE relname IN ('tasks', 'task_attempts') ORDER BY 1
"""

STATEMENTS = """
SELECT s.calls, round(s.total_exec_time::numeric / %(n)s * 1000, 2) AS us_per_task,
       round((s.shared_blks_hit + s.shared_blks_read)::numeric / %(n)s, 1) AS blocks_per_task,
       round(s.shared_blks_dirtied::numeric / %(n)s, 2) AS dirtied_per_task,
       round(s.wal_bytes::numeric / %(n)s) AS wal_b_per_task,
       round(s.wal_fpi::numeric / %(n)s, 3) AS fpi_per_task,
       left(regexp_replace(s.query, '\\s+', ' ', 'g'), 90) AS query
FROM pg_stat_statements s
JOIN pg_database d ON d.oid = s.dbid AND d.datname = current_database()
WHERE s.toplevel
ORDER BY s.total_exec_time DESC
LIMIT 12
"""


async def rows(admin: object, query: str, params: dict[str, int] | None = None) -> list[tuple]:
    cur = await admin.execute(query, params)  # type: ignore[attr-defined]
    return list(await cur.fetchall())


def show(title: str, header: str, lines: list[tuple]) -> None:
    print(f"\n{title}\n{header}")
    for line in lines:
        print(" | ".join(str(v) for v in line))


async def run(server: str, config: str, n: int, setup_sql: str) -> None:
    processes, concurrency = (int(x) for x in config.split("x"))
    databases = bench_queue.Databases(server)
    subject = ConveyorSubject()
    try:
        await subject.open(databases.create("breakdown"))
        admin = subject.admin
        await admin.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        entries_before: dict[str, int] = {}

        # drain_cost enqueues, resets the statistics and drains; the index entries are
        # counted once the tasks are in, through its setup hook's place: after enqueue.
        original = bench_queue.enqueue_in_batches

        async def enqueue_then_count(s: object, count: int) -> float:
            seconds = await original(s, count)  # type: ignore[arg-type]
            for _, index, entries, _ in await rows(admin, INDEX_ENTRIES):
                entries_before[index] = int(entries)
            return seconds

        bench_queue.enqueue_in_batches = enqueue_then_count  # type: ignore[assignment]
        with tempfile.TemporaryDirectory(prefix="bench_breakdown_") as folder:
            cost = await cpu_per_task.drain_cost(
                subject, processes, concurrency, n, Path(folder), True, setup_sql
            )
        bench_queue.enqueue_in_batches = original
        print(cost.line("conveyor"))
        show(
            "statements (top level)",
            "calls | µs/task | blocks/task | dirtied/task | WAL B/task | FPI/task | query",
            await rows(admin, STATEMENTS, {"n": n}),
        )
        tables = await rows(admin, TABLES)
        show(
            "tables (the drain only)",
            "table | inserted | updated | HOT | deleted | heap bytes",
            tables,
        )
        show(
            "index entries added by the drain, per task",
            "table | index | entries/task | bytes",
            [
                (t, i, round((int(e) - entries_before.get(i, 0)) / n, 2), b)
                for t, i, e, b in await rows(admin, INDEX_ENTRIES)
            ],
        )
    finally:
        await subject.close()
        databases.drop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="a server with pg_stat_statements")
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--config", default="2x16", help="processes x concurrency")
    parser.add_argument("--conveyor-sql", default="", help="SQL run before the drain")
    args = parser.parse_args()
    asyncio.run(run(args.server, args.config, args.tasks, args.conveyor_sql))


if __name__ == "__main__":
    main()
