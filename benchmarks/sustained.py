"""A long drain: does Conveyor's rate hold over a million tasks, and what is left on disk?

    python benchmarks/sustained.py [--tasks 1000000] [--autovacuum on,off] [--server URL]

For each autovacuum setting, in a fresh database: every task is enqueued first (bulk, as
bench_queue.py's drains), then 2 worker processes x concurrency 16 (`conveyor worker`,
the no-op agent of apps.py) drain them. The rate is counted per 100,000 tasks from the
agents' own start times (timing.py), so the harness polls nothing but the count of what is
left. After the drain: the sizes of tasks and task_attempts and of each of their indexes,
and how many VACUUMs ran on them.

`--autovacuum off` sets autovacuum_enabled = off on the two tables; `on` leaves them at
their migration's settings. Autovacuum runs only if the server's own `autovacuum` is on (the
script says what the server has). The workers' own vacuumer (conveyor/worker/vacuum.py)
runs in both.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
from subjects import ConveyorSubject  # noqa: E402

SLICE = 100_000
PROCESSES, CONCURRENCY = 2, 16

SIZES = """
SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes, i.indrelid::regclass::text AS of
FROM pg_class c
LEFT JOIN pg_index i ON i.indexrelid = c.oid
WHERE c.relname IN ('tasks', 'task_attempts')
   OR i.indrelid IN ('tasks'::regclass, 'task_attempts'::regclass)
ORDER BY coalesce(i.indrelid::regclass::text, c.relname), i.indrelid IS NOT NULL, c.relname
"""

VACUUMS = """
SELECT relname, vacuum_count, autovacuum_count, n_dead_tup, n_tup_upd, n_tup_hot_upd
FROM pg_stat_user_tables WHERE relname IN ('tasks', 'task_attempts') ORDER BY relname
"""


async def run(server: str, tasks: int, autovacuum: str) -> None:
    databases = bench_queue.Databases(server)
    subject = ConveyorSubject()
    await subject.open(databases.create(f"sustained_{autovacuum}"))
    try:
        cur = await subject.admin.execute("SHOW autovacuum")
        server_autovacuum = (await cur.fetchone())[0]  # type: ignore[index]
        if autovacuum == "off":
            for table in ("tasks", "task_attempts"):
                await subject.admin.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
        print(
            f"\n## autovacuum {autovacuum} (server autovacuum = {server_autovacuum}), "
            f"{tasks:,} tasks, {PROCESSES} x {CONCURRENCY}"
        )
        began = time.monotonic()
        await bench_queue.enqueue_in_batches(subject, tasks)
        print(f"enqueued in {time.monotonic() - began:.1f} s")
        with (
            tempfile.TemporaryDirectory(prefix="bench_sustained_") as folder,
            bench_queue.workers(subject, PROCESSES, CONCURRENCY, Path(folder)) as running,
        ):
            await bench_queue.wait_until_done(subject, running, timeout=6 * 3600)
            records = running.stop()
        starts = sorted(t for r in records for t in r.starts)
        print("\n| tasks | seconds | tasks/s | / first slice |")
        print("| ---: | ---: | ---: | ---: |")
        first = None
        for n in range(0, len(starts) - 1, SLICE):
            end = min(n + SLICE, len(starts) - 1)
            seconds = starts[end] - starts[n]
            rate = (end - n) / seconds if seconds > 0 else float("nan")
            first = first or rate
            print(f"| {n:,}-{end:,} | {seconds:.1f} | {rate:,.0f} | {rate / first:.2f} |")
        total = starts[-1] - starts[0]
        print(f"\nall: {len(starts):,} tasks in {total:.1f} s, {len(starts) / total:,.0f}/s")
        await subject.admin.execute("SELECT pg_stat_clear_snapshot()")
        print("\n| relation | of | MB |")
        print("| --- | --- | ---: |")
        for name, size, of in await (await subject.admin.execute(SIZES)).fetchall():
            print(f"| {name} | {of or ''} | {size / 2**20:,.1f} |")
        print("\n| table | VACUUMs | autovacuums | dead rows now | updates | of them HOT |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for row in await (await subject.admin.execute(VACUUMS)).fetchall():
            print("| " + " | ".join(f"{v:,}" if isinstance(v, int) else v for v in row) + " |")
    finally:
        await subject.close()
        databases.drop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--autovacuum", default="on,off", help="comma-separated: on, off")
    args = parser.parse_args()
    for setting in args.autovacuum.split(","):
        asyncio.run(run(args.server, args.tasks, setting))


if __name__ == "__main__":
    main()
