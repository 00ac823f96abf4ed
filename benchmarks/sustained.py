"""A long drain: does Conveyor's rate hold over a million tasks, and what is left on disk?

    python benchmarks/sustained.py [--tasks 1000000] [--autovacuum on,off] [--server URL]
                                   [--mixed]

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

`--mixed`: the agent (apps.py's `flaky`, `max_attempts` 2, a 25-50 ms backoff) fails the
first attempt of every fourth task and succeeds on its retry; the slices count finished
tasks (the agent times the attempt that succeeds). After the drain the run checks that
every task ended completed with exactly the attempts it should have had, in the tables
(tasks.attempts, one task_attempts row per attempt: failed, then succeeded) and in what
the agents ran (each (task, attempt) once); anything else is printed and the script exits
with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import apps  # noqa: E402
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

# The mixed run's checks, each a count that must be 0. i is the payload's task number.
EXPECTED = f"CASE WHEN (t.payload->>'i')::int % {apps.FAIL_EVERY} = 0 THEN 2 ELSE 1 END"
CHECKS = {
    "tasks not completed": "SELECT count(*) FROM tasks t WHERE t.status <> 'completed'",
    "tasks whose attempts are not the expected": (
        f"SELECT count(*) FROM tasks t WHERE t.attempts <> {EXPECTED}"
    ),
    "tasks whose attempt rows are not the expected (failed, then succeeded)": f"""
        SELECT count(*) FROM tasks t
        LEFT JOIN LATERAL (
            SELECT count(*) AS n, array_agg(a.status::text ORDER BY a.attempt) AS statuses,
                   max(a.attempt) AS last
            FROM task_attempts a WHERE a.task_id = t.id
        ) a ON true
        WHERE a.n <> {EXPECTED} OR a.last <> {EXPECTED}
           OR a.statuses <> CASE WHEN {EXPECTED} = 2 THEN ARRAY['failed', 'succeeded']
                                 ELSE ARRAY['succeeded'] END
    """,
}
ATTEMPTS = """
SELECT count(*) AS tasks, sum(attempts) AS attempts,
       (SELECT count(*) FROM task_attempts) AS attempt_rows
FROM tasks
"""


class MixedSubject(ConveyorSubject):
    """Conveyor with apps.py's flaky agent: the harness declares it as the worker does."""

    agent = apps.FLAKY
    agent_options = apps.FLAKY_OPTIONS
    worker_app = "apps:mixed"


def agent_runs_wrong(record_files: list[Path], tasks: int) -> list[str]:
    """What the agents ran against what they should have: each task once at attempt 1,
    the failing ones once more at attempt 2. Empty when it is exactly that."""
    seen: dict[tuple[int, int], int] = {}
    for path in record_files:
        for i, attempt in json.loads(apps.runs_path(str(path)).read_text()):
            seen[(i, attempt)] = seen.get((i, attempt), 0) + 1
    expected = {(i, a) for i in range(tasks) for a in range(1, apps.expected_attempts(i) + 1)}
    twice = sum(1 for n in seen.values() if n > 1)
    missing = len(expected - seen.keys())
    extra = len(seen.keys() - expected)
    problems = []
    if twice:
        problems.append(f"{twice:,} (task, attempt) pairs run more than once by the agents")
    if missing:
        problems.append(f"{missing:,} expected (task, attempt) pairs never run")
    if extra:
        problems.append(f"{extra:,} (task, attempt) pairs run that should not have been")
    return problems


async def mixed_checks(subject: ConveyorSubject, record_files: list[Path], tasks: int) -> list[str]:
    row = await (await subject.admin.execute(ATTEMPTS)).fetchone()
    assert row is not None
    n, attempts, attempt_rows = row
    print(
        f"\nattempts: {attempts:,} over {n:,} tasks, {attempts / n:.4f} per task "
        f"(expected {1 + 1 / apps.FAIL_EVERY:.4f}); {attempt_rows:,} attempt rows"
    )
    problems = [] if n == tasks else [f"{n:,} tasks in the table, {tasks:,} enqueued"]
    for what, query in CHECKS.items():
        found = await (await subject.admin.execute(query)).fetchone()
        if found and found[0]:
            problems.append(f"{found[0]:,} {what}")
    problems += agent_runs_wrong(record_files, tasks)
    print(
        "checks: "
        + (
            "; ".join(problems)
            if problems
            else "every task completed, with exactly the expected attempts, each run once"
        )
    )
    return problems


async def run(server: str, tasks: int, autovacuum: str, mixed: bool) -> list[str]:
    databases = bench_queue.Databases(server)
    subject = MixedSubject() if mixed else ConveyorSubject()
    await subject.open(databases.create(f"sustained_{autovacuum}"))
    problems: list[str] = []
    try:
        cur = await subject.admin.execute("SHOW autovacuum")
        server_autovacuum = (await cur.fetchone())[0]  # type: ignore[index]
        if autovacuum == "off":
            for table in ("tasks", "task_attempts"):
                await subject.admin.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
        print(
            f"\n## autovacuum {autovacuum} (server autovacuum = {server_autovacuum}), "
            f"{tasks:,} tasks, {PROCESSES} x {CONCURRENCY}"
            + (f", mixed: 1 in {apps.FAIL_EVERY} fails its first attempt" if mixed else "")
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
            record_files = [record for record, _ in running.files]
            if mixed:
                problems = await mixed_checks(subject, record_files, tasks)
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
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--autovacuum", default="on,off", help="comma-separated: on, off")
    parser.add_argument(
        "--mixed", action="store_true", help="a quarter of the tasks fail once and retry"
    )
    args = parser.parse_args()
    problems = []
    for setting in args.autovacuum.split(","):
        problems += asyncio.run(run(args.server, args.tasks, setting, args.mixed))
    if problems:
        sys.exit("the mixed run went wrong: " + "; ".join(problems))


if __name__ == "__main__":
    main()
